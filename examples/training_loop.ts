/**
 * Trains the affine parameters of three normalization modules towards a synthetic target with
 * plain SGD, as a PyTorch training loop would: `forward`, mean-squared loss, `backward`,
 * parameter update. The modules are a `BatchNorm`, a `GroupNorm` and a `SyncBatchNorm` whose
 * two ranks (createLocalProcessGroup, in this process) each hold half of the batch and
 * all-reduce their parameter gradients before the update, as DistributedDataParallel does.
 * Prints the losses falling, then checks that the two-rank SyncBatchNorm followed the
 * single-process BatchNorm and that a state dict loaded into a fresh BatchNorm gives the same
 * eval-mode output. Exits non-zero if a loss did not fall or a check failed.
 *
 * Run: `deno run --allow-ffi --allow-env --allow-read examples/training_loop.ts [--cpu]`
 *
 * @module
 */

import {
  BatchNorm,
  createLocalProcessGroup,
  GroupNorm,
  type NormGradients,
  SyncBatchNorm,
  Tensor,
} from "../mod.ts";
import { openBackend } from "./backend.ts";

const STEPS = 60;
const RANKS = 2;
const backend = openBackend();
const device = backend.device;
const shape = [16, 8, 6, 6];
const [N, C] = shape;
const GROUPS = 4;

/** What the update needs of a module. */
interface Affine {
  readonly weight: Tensor | null;
  readonly bias: Tensor | null;
}

/** p <- p - lr * grad for weight and bias (torch.optim.SGD without momentum). */
function sgd(m: Affine, grads: { gradWeight: Tensor | null; gradBias: Tensor | null }, lr: number) {
  for (const [p, g] of [[m.weight, grads.gradWeight], [m.bias, grads.gradBias]] as const) {
    if (!p || !g) continue;
    const gv = g.toFloat64Array();
    p.copy_(p.toFloat64Array().map((v, i) => v - lr * gv[i]));
  }
}

/**
 * This share's part of loss = mean((y - target)^2) over all `count` elements of the batch,
 * and dL/dy on y's device.
 */
function mseLoss(
  y: Tensor,
  target: Float64Array,
  count: number,
): { loss: number; grad: Tensor } {
  const yv = y.toFloat64Array();
  const g = new Float64Array(yv.length);
  let loss = 0;
  for (let i = 0; i < yv.length; i++) {
    const d = yv[i] - target[i];
    loss += d * d / count;
    g[i] = 2 * d / count;
  }
  return { loss, grad: Tensor.fromArray(g, y.shape).to(y.device) };
}

/** One training step of a single-process module; returns the loss. */
function train(m: BatchNorm | GroupNorm, x: Tensor, target: Float64Array, lr: number): number {
  using y = m.forward(x);
  const { loss, grad } = mseLoss(y, target, x.numel);
  using dy = grad;
  using grads = m.backward(dy);
  sgd(m, grads, lr);
  return loss;
}

const x = Tensor.random(shape, { seed: 1, distribution: "normal", low: 0.5, high: 2, device });
const trueGamma = Array.from({ length: C }, (_, c) => 0.5 + 0.25 * c);
const trueBeta = Array.from({ length: C }, (_, c) => -1 + 0.3 * c);

/** A module set to the "true" parameters gives the targets. */
function target(m: BatchNorm | GroupNorm): Float64Array {
  m.weight!.copy_(trueGamma);
  m.bias!.copy_(trueBeta);
  using y = m.forward(x);
  m.dispose();
  return y.toFloat64Array();
}
const bnTarget = target(new BatchNorm({ numFeatures: C, device }));
const gnTarget = target(new GroupNorm({ numGroups: GROUPS, numChannels: C, device }));

// Each parameter's gradient is about 2/C * (param - true): lr = C/16 removes 1/8 of the error
// per step.
const lr = C / 16;
const losses: Record<string, number[]> = { BatchNorm: [], GroupNorm: [], SyncBatchNorm: [] };

using bn = new BatchNorm({ numFeatures: C, momentum: 0.1, device });
using gn = new GroupNorm({ numGroups: GROUPS, numChannels: C, device });
const group = createLocalProcessGroup(RANKS);
const ranks = group.map((processGroup) =>
  new SyncBatchNorm({ numFeatures: C, momentum: 0.1, device, processGroup })
);
const rows = N / RANKS;

/** One SyncBatchNorm step on every rank: the DDP all-reduce of the gradients, then SGD. */
async function trainSync(): Promise<number> {
  const parts = await Promise.all(ranks.map(async (m, r) => {
    const input = x.slice(0, r * rows, (r + 1) * rows);
    const share = bnTarget.subarray(r * input.numel, (r + 1) * input.numel);
    using y = await m.forward(input);
    const { loss, grad } = mseLoss(y, share, x.numel);
    using dy = grad;
    using grads: NormGradients = await m.backward(dy);
    // gradWeight/gradBias are this rank's share: sum them over the ranks before the update.
    const call = { op: "ddp", payload: "[gradWeight, gradBias]" };
    using gradWeight = await group[r].allReduce(grads.gradWeight!, call);
    using gradBias = await group[r].allReduce(grads.gradBias!, call);
    sgd(m, { gradWeight, gradBias }, lr);
    return loss;
  }));
  return parts.reduce((a, b) => a + b, 0);
}

const started = performance.now();
for (let step = 0; step <= STEPS; step++) {
  losses.BatchNorm.push(train(bn, x, bnTarget, lr));
  losses.GroupNorm.push(train(gn, x, gnTarget, lr));
  losses.SyncBatchNorm.push(await trainSync());
  if (step % 6 === 0) {
    console.log(
      `step ${String(step).padStart(2)}  ` +
        Object.entries(losses).map(([name, l]) => `${name} loss ${l[step].toExponential(3)}`)
          .join("  "),
    );
  }
}
const seconds = (performance.now() - started) / 1000;
console.log(`BatchNorm gamma ${bn.weight!.toArray().map((v) => v.toFixed(3)).join(" ")}`);
console.log(`true gamma      ${trueGamma.map((v) => v.toFixed(3)).join(" ")}`);
console.log(
  `running mean after ${bn.numBatchesTracked} batches: ${
    bn.runningMean!.toArray().map((v) => v.toFixed(3)).join(" ")
  }`,
);

let ok = true;
for (const [name, l] of Object.entries(losses)) {
  const ratio = l[l.length - 1] / l[0];
  const fell = ratio < 1e-3;
  ok &&= fell;
  console.log(
    `${name}: loss fell from ${l[0].toExponential(3)} to ${l[l.length - 1].toExponential(3)} ` +
      `(x${ratio.toExponential(1)}) ${fell ? "ok" : "NOT CONVERGED"}`,
  );
}

/** Largest |a - b| over two tensors' values. */
function deviation(a: Tensor, b: Tensor): number {
  const av = a.toFloat64Array();
  const bv = b.toFloat64Array();
  return av.reduce((m, v, i) => Math.max(m, Math.abs(v - bv[i])), 0);
}

/** Prints a check's line and folds it into the verdict. */
function check(what: string, value: number, threshold: number): void {
  const pass = value <= threshold;
  ok &&= pass;
  console.log(`${what}: max deviation ${value.toExponential(2)} ${pass ? "ok" : "FAILED"}`);
}

// The two ranks agree with each other and with single-process BatchNorm.
for (const name of ["weight", "bias", "runningMean", "runningVar"] as const) {
  const worst = Math.max(...ranks.map((m) => deviation(m[name]!, bn[name]!)));
  check(`SyncBatchNorm ${name} vs BatchNorm`, worst, 1e-4);
}

// A state dict loaded into a fresh module gives the same eval-mode output.
const dict = bn.stateDict();
using restored = new BatchNorm({ numFeatures: C, device });
restored.loadStateDict(dict);
for (const t of Object.values(dict)) t.dispose();
bn.eval();
restored.eval();
using yTrained = bn.forward(x);
using yRestored = restored.forward(x);
check("eval output after a state-dict round trip", deviation(yRestored, yTrained), 0);

console.log(`${STEPS + 1} steps of ${N}x${C}x6x6 in ${seconds.toFixed(2)} s`);
for (const m of ranks) m.dispose();
backend.close();
if (!ok) Deno.exit(1);
