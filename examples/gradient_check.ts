/**
 * Checks every backward operator against central finite differences of its forward operator,
 * both run by this package on the default backend: for the loss L = <dy, forward(...)>, the
 * gradient an operator returns must match (L(v + h) - L(v - h)) / 2h element by element.
 * Prints the worst relative error per operator (|analytic - numeric| / max |numeric|) and
 * exits non-zero if one exceeds the threshold.
 *
 * Run: `deno run --allow-ffi --allow-env --allow-read examples/gradient_check.ts [--cpu]`
 *
 * @module
 */

import {
  batchNorm,
  batchNormBackward,
  batchNormElemt,
  batchNormElemtBackward,
  batchNormReduceBackward,
  createBatchNormBackwardDescriptor,
  createLocalProcessGroup,
  type Device,
  groupNorm,
  groupNormBackward,
  layerNorm,
  layerNormBackward,
  rmsNorm,
  rmsNormGrad,
  syncBatchNormBackward,
  syncBatchNormForward,
  Tensor,
} from "../mod.ts";
import { openBackend } from "./backend.ts";

const THRESHOLD = 1e-3;
const H = 1e-2;
const backend = openBackend();
const device: Device = backend.device;

const shape = [4, 3, 5];
const [N, C, L] = shape;
const GROUPS = 3;
const EPS = 1e-3;

const on = (t: Tensor): Tensor => t.to(device);
const rand = (s: number[], seed: number, low = -1, high = 1): Float64Array =>
  Tensor.random(s, { seed, low, high }).toFloat64Array();
const tensor = (v: Float64Array, s: readonly number[]): Tensor => on(Tensor.fromArray(v, s));

const x0 = rand(shape, 1, -1, 2);
const dy0 = rand(shape, 2);
const w0 = rand([C], 3, 0.5, 1.5);
const b0 = rand([C], 4);
const dy = tensor(dy0, shape);

function dot(a: Float64Array, b: Float64Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

/**
 * d loss / d v by central differences. The probes are rounded to float32 first and the step
 * is the one actually taken, so tensor rounding does not bias the quotient.
 */
async function numeric(
  loss: (v: Float64Array) => number | Promise<number>,
  v0: Float64Array,
): Promise<Float64Array> {
  const v = Float64Array.from(v0);
  const grad = new Float64Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const up = Math.fround(v0[i] + H);
    const down = Math.fround(v0[i] - H);
    v[i] = up;
    const fUp = await loss(v);
    v[i] = down;
    const fDown = await loss(v);
    v[i] = v0[i];
    grad[i] = (fUp - fDown) / (up - down);
  }
  return grad;
}

const results: { op: string; wrt: string; error: number }[] = [];

async function check(
  op: string,
  wrt: string,
  analytic: Tensor | Float64Array | null,
  loss: (v: Float64Array) => number | Promise<number>,
  v0: Float64Array,
): Promise<void> {
  if (analytic === null) throw new Error(`${op}: no ${wrt} gradient returned`);
  const a = analytic instanceof Tensor ? analytic.toFloat64Array() : analytic;
  const n = await numeric(loss, v0);
  let scale = 1e-3;
  let worst = 0;
  for (let i = 0; i < n.length; i++) scale = Math.max(scale, Math.abs(n[i]));
  for (let i = 0; i < n.length; i++) worst = Math.max(worst, Math.abs(a[i] - n[i]) / scale);
  results.push({ op, wrt, error: worst });
}

const lossOf = (y: Tensor): number => dot(dy0, y.toFloat64Array());

/**
 * Checks the gradients with respect to input, weight and bias of a forward f(x, w, b),
 * varying one argument at a time around (x0, w0, b0). `names` labels them.
 */
async function checkAffine(
  op: string,
  forward: (x: Float64Array, w: Float64Array, b: Float64Array) => Tensor,
  grads: [Tensor | null, Tensor | null, Tensor | null],
  names = ["input", "weight", "bias"],
): Promise<void> {
  await check(op, names[0], grads[0], (v) => lossOf(forward(v, w0, b0)), x0);
  await check(op, names[1], grads[1], (v) => lossOf(forward(x0, v, b0)), w0);
  await check(op, names[2], grads[2], (v) => lossOf(forward(x0, w0, v)), b0);
}

/** BatchNorm forward with batch statistics. */
const bnTrain = (x: Float64Array, w: Float64Array, b: Float64Array) =>
  batchNorm({
    input: tensor(x, shape),
    weight: tensor(w, [C]),
    bias: tensor(b, [C]),
    training: true,
    eps: EPS,
  });
const started = performance.now();

// 1. batchNormBackward, training mode: forward = batchNorm with batch statistics.
{
  const fwd = bnTrain(x0, w0, b0);
  const g = batchNormBackward({
    gradOut: dy,
    input: tensor(x0, shape),
    weight: tensor(w0, [C]),
    saveMean: fwd.saveMean,
    saveInvstd: fwd.saveInvstd,
    training: true,
    eps: EPS,
  });
  await checkAffine(
    "batchNormBackward (training)",
    (x, w, b) => bnTrain(x, w, b).output,
    [g.gradInput, g.gradWeight, g.gradBias],
  );
}

// 2. batchNormBackward, eval mode: forward = batchNorm with running statistics.
{
  const rm = tensor(rand([C], 5), [C]);
  const rv = tensor(rand([C], 6, 0.5, 2), [C]);
  const bnEval = (x: Float64Array, w: Float64Array, b: Float64Array) =>
    batchNorm({
      input: tensor(x, shape),
      weight: tensor(w, [C]),
      bias: tensor(b, [C]),
      runningMean: rm,
      runningVar: rv,
      training: false,
      eps: EPS,
    });
  const g = batchNormBackward({
    gradOut: dy,
    input: tensor(x0, shape),
    weight: tensor(w0, [C]),
    runningMean: rm,
    runningVar: rv,
    training: false,
    eps: EPS,
  });
  await checkAffine(
    "batchNormBackward (eval)",
    (x, w, b) => bnEval(x, w, b).output,
    [g.gradInput, g.gradWeight, g.gradBias],
  );
}

// 3. batchNormReduceBackward: gradWeight/gradBias of batchNormElemt with fixed statistics.
{
  const mean = tensor(rand([C], 7), [C]);
  const invstd = tensor(rand([C], 8, 0.5, 2), [C]);
  const elemt = (w: Float64Array, b: Float64Array) =>
    batchNormElemt({
      input: tensor(x0, shape),
      weight: tensor(w, [C]),
      bias: tensor(b, [C]),
      mean,
      invstd,
    });
  const g = batchNormReduceBackward({
    gradOut: dy,
    input: tensor(x0, shape),
    mean,
    invstd,
    weight: tensor(w0, [C]),
  });
  const op = "batchNormReduceBackward";
  await check(op, "weight", g.gradWeight, (v) => lossOf(elemt(v, b0)), w0);
  await check(op, "bias", g.gradBias, (v) => lossOf(elemt(w0, v)), b0);
}

// 4. batchNormElemtBackward: dL/dx through the batch statistics (one rank holding it all).
{
  const bnTrain = (x: Float64Array) =>
    batchNorm({ input: tensor(x, shape), weight: tensor(w0, [C]), training: true, eps: EPS });
  const fwd = bnTrain(x0);
  const input = tensor(x0, shape);
  const sums = batchNormReduceBackward({
    gradOut: dy,
    input,
    mean: fwd.saveMean,
    invstd: fwd.saveInvstd,
    weightG: false,
    biasG: false,
  });
  const gradInput = batchNormElemtBackward({
    gradOut: dy,
    input,
    mean: fwd.saveMean,
    invstd: fwd.saveInvstd,
    weight: tensor(w0, [C]),
    sumDy: sums.sumDy,
    sumDyXmu: sums.sumDyXmu,
    counter: on(Tensor.fromArray([N * L], [1], "int32")),
  });
  await check("batchNormElemtBackward", "input", gradInput, (v) => lossOf(bnTrain(v).output), x0);
}

// 5. groupNormBackward: forward = groupNorm.
{
  const gn = (x: Float64Array, gm: Float64Array, bt: Float64Array) =>
    groupNorm({
      input: tensor(x, shape),
      gamma: tensor(gm, [C]),
      beta: tensor(bt, [C]),
      group: GROUPS,
      eps: EPS,
    });
  const fwd = gn(x0, w0, b0);
  const g = groupNormBackward({
    gradOut: dy,
    input: tensor(x0, shape),
    mean: fwd.mean,
    rstd: fwd.rstd,
    gamma: tensor(w0, [C]),
    group: GROUPS,
  });
  await checkAffine(
    "groupNormBackward",
    (x, gm, bt) => gn(x, gm, bt).output,
    [g.gradInput, g.gradGamma, g.gradBeta],
    ["input", "gamma", "beta"],
  );
}

// 6. syncBatchNormBackward over 2 simulated ranks: forward = syncBatchNormForward.
{
  const half = N / 2;
  const run = async (x: Float64Array, w: Float64Array, backward: boolean) => {
    const whole = tensor(x, shape);
    const weight = tensor(w, [C]);
    const group = createLocalProcessGroup(2);
    return await Promise.all(group.map(async (g, r) => {
      const input = whole.slice(0, r * half, (r + 1) * half);
      const fwd = await syncBatchNormForward({
        input,
        weight,
        eps: EPS,
        allGather: g.allGather,
      });
      const bwd = backward
        ? await syncBatchNormBackward({
          gradOut: dy.slice(0, r * half, (r + 1) * half),
          input,
          weight,
          mean: fwd.mean,
          invstd: fwd.invstd,
          counts: fwd.counts,
          allReduce: g.allReduce,
        })
        : undefined;
      return { output: fwd.output, bwd };
    }));
  };
  const joinOutputs = (parts: { output: Tensor }[]) =>
    Float64Array.from(parts.flatMap((p) => p.output.toArray()));
  const ranks = await run(x0, w0, true);
  const gradInput = Float64Array.from(ranks.flatMap((r) => r.bwd!.gradInput!.toArray()));
  const gradWeight = new Float64Array(C);
  for (const r of ranks) r.bwd!.gradWeight!.toArray().forEach((v, c) => gradWeight[c] += v);
  const op = "syncBatchNormBackward (2 ranks)";
  const loss = async (x: Float64Array, w: Float64Array) =>
    dot(dy0, joinOutputs(await run(x, w, false)));
  await check(op, "input", gradInput, (v) => loss(v, w0), x0);
  await check(op, "weight (sum of ranks)", gradWeight, (v) => loss(x0, v), w0);
}

// 7. The InfiniOp-style descriptor: running stats are the batch's E[x] and biased Var[x].
{
  const fwd = bnTrain(x0, w0, b0);
  const variance = fwd.saveInvstd.toFloat64Array().map((v) => 1 / (v * v) - EPS);
  const t = {
    gradInput: on(Tensor.zeros(shape)),
    gradWeight: on(Tensor.zeros([C])),
    gradBias: on(Tensor.zeros([C])),
    input: tensor(x0, shape),
    gradOutput: dy,
    weight: tensor(w0, [C]),
    runningMean: fwd.saveMean,
    runningVar: tensor(variance, [C]),
  };
  using desc = createBatchNormBackwardDescriptor({ ...t, eps: EPS });
  desc.compute(t);
  await checkAffine(
    "BatchNormBackwardDescriptor",
    (x, w, b) => bnTrain(x, w, b).output,
    [t.gradInput, t.gradWeight, t.gradBias],
  );
}

// 8. LayerNorm over the last dim (normalizedShape [L]): input, weight and bias.
const lw0 = rand([L], 5, 0.5, 1.5);
const lb0 = rand([L], 6);
{
  const ln = (x: Float64Array, w: Float64Array, b: Float64Array) =>
    layerNorm({
      input: tensor(x, shape),
      normalizedShape: [L],
      weight: tensor(w, [L]),
      bias: tensor(b, [L]),
      eps: EPS,
    });
  const f = ln(x0, lw0, lb0);
  const g = layerNormBackward({
    gradOut: dy,
    input: tensor(x0, shape),
    normalizedShape: [L],
    mean: f.mean,
    rstd: f.rstd,
    weight: tensor(lw0, [L]),
    bias: tensor(lb0, [L]),
  });
  const op = "layerNormBackward";
  await check(op, "input", g.gradInput, (v) => lossOf(ln(v, lw0, lb0).output), x0);
  await check(op, "weight", g.gradWeight, (v) => lossOf(ln(x0, v, lb0).output), lw0);
  await check(op, "bias", g.gradBias, (v) => lossOf(ln(x0, lw0, v).output), lb0);
}

// 9. RMSNorm over the last dim: x and gamma.
{
  const rms = (x: Float64Array, g: Float64Array) =>
    rmsNorm({ x: tensor(x, shape), gamma: tensor(g, [L]), epsilon: EPS });
  const f = rms(x0, lw0);
  const g = rmsNormGrad({ dy, x: tensor(x0, shape), rstd: f.rstd, gamma: tensor(lw0, [L]) });
  await check("rmsNormGrad", "x", g.dx, (v) => lossOf(rms(v, lw0).y), x0);
  await check("rmsNormGrad", "gamma", g.dgamma, (v) => lossOf(rms(x0, v).y), lw0);
}

console.log(`shape [${shape.join(", ")}], h = ${H}, threshold ${THRESHOLD}`);
const worstPerOp = new Map<string, number>();
for (const r of results) {
  console.log(`  ${r.op.padEnd(32)} d/d${r.wrt.padEnd(22)} ${r.error.toExponential(2)}`);
  worstPerOp.set(r.op, Math.max(worstPerOp.get(r.op) ?? 0, r.error));
}
let failed = 0;
for (const [op, error] of worstPerOp) {
  const ok = error <= THRESHOLD;
  if (!ok) failed++;
  console.log(`worst ${op.padEnd(32)} ${error.toExponential(2)} ${ok ? "ok" : "FAIL"}`);
}
const seconds = ((performance.now() - started) / 1000).toFixed(2);
console.log(
  `${worstPerOp.size} operators checked in ${seconds} s: ${
    failed === 0 ? "all within threshold" : `${failed} above threshold`
  }`,
);
backend.close();
if (failed > 0) Deno.exit(1);
