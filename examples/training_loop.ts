/**
 * Fits the affine parameters of a BatchNorm and a GroupNorm layer to a synthetic target with
 * plain SGD: forward (batchNorm / groupNorm), mean-squared loss, backward (batchNormBackward /
 * groupNormBackward), update. Prints the loss falling; exits non-zero if it does not.
 *
 * Run: `deno run --allow-ffi --allow-env --allow-read examples/training_loop.ts [--cpu]`
 *
 * @module
 */

import {
  batchNorm,
  batchNormBackward,
  type Device,
  groupNorm,
  groupNormBackward,
  Tensor,
} from "../mod.ts";
import { openBackend } from "./backend.ts";

const STEPS = 60;
const backend = openBackend();
const device = backend.device;
const shape = [16, 8, 6, 6];
const [N, C] = shape;
const GROUPS = 4;

/** A parameter on the device, and its float64 host copy for the SGD update. */
function param(values: ArrayLike<number>, dev: Device): { host: Float64Array; tensor: Tensor } {
  const host = Float64Array.from(values);
  return { host, tensor: Tensor.fromArray(host, [host.length]).to(dev) };
}

function update(p: { host: Float64Array; tensor: Tensor }, grad: Tensor, lr: number): void {
  const g = grad.toFloat64Array();
  for (let i = 0; i < p.host.length; i++) p.host[i] -= lr * g[i];
  p.tensor.copy_(p.host);
}

/** loss = mean((y - target)^2); returns it and dL/dy on the device. */
function mseLoss(y: Tensor, target: Float64Array): { loss: number; grad: Tensor } {
  const yv = y.toFloat64Array();
  const g = new Float64Array(yv.length);
  let loss = 0;
  for (let i = 0; i < yv.length; i++) {
    const d = yv[i] - target[i];
    loss += d * d / yv.length;
    g[i] = 2 * d / yv.length;
  }
  return { loss, grad: Tensor.fromArray(g, y.shape).to(y.device) };
}

const x = Tensor.random(shape, { seed: 1, distribution: "normal", low: 0.5, high: 2, device });
const trueGamma = Array.from({ length: C }, (_, c) => 0.5 + 0.25 * c);
const trueBeta = Array.from({ length: C }, (_, c) => -1 + 0.3 * c);

// Targets: what the layers give with the "true" parameters.
const bnTarget = batchNorm({
  input: x,
  weight: Tensor.fromArray(trueGamma, [C]).to(device),
  bias: Tensor.fromArray(trueBeta, [C]).to(device),
  training: true,
}).output.toFloat64Array();
const gnTarget = groupNorm({
  input: x,
  gamma: Tensor.fromArray(trueGamma, [C]).to(device),
  beta: Tensor.fromArray(trueBeta, [C]).to(device),
  group: GROUPS,
}).output.toFloat64Array();

// Each parameter's gradient is about 2/C * (param - true): lr = C/16 removes 1/8 of the error
// per step.
const lr = C / 16;
const losses: Record<string, number[]> = { BatchNorm: [], GroupNorm: [] };

const bnWeight = param(new Array(C).fill(1), device);
const bnBias = param(new Array(C).fill(0), device);
const runningMean = Tensor.zeros([C], "float32", device);
const runningVar = Tensor.ones([C], "float32", device);
const gnGamma = param(new Array(C).fill(1), device);
const gnBeta = param(new Array(C).fill(0), device);

const started = performance.now();
for (let step = 0; step <= STEPS; step++) {
  // BatchNorm layer.
  const bn = batchNorm({
    input: x,
    weight: bnWeight.tensor,
    bias: bnBias.tensor,
    runningMean,
    runningVar,
    training: true,
    momentum: 0.1,
  });
  const bnLoss = mseLoss(bn.output, bnTarget);
  const bnGrads = batchNormBackward({
    gradOut: bnLoss.grad,
    input: x,
    weight: bnWeight.tensor,
    saveMean: bn.saveMean,
    saveInvstd: bn.saveInvstd,
    training: true,
    outputMask: [false, true, true],
  });
  update(bnWeight, bnGrads.gradWeight!, lr);
  update(bnBias, bnGrads.gradBias!, lr);

  // GroupNorm layer.
  const gn = groupNorm({ input: x, gamma: gnGamma.tensor, beta: gnBeta.tensor, group: GROUPS });
  const gnLoss = mseLoss(gn.output, gnTarget);
  const gnGrads = groupNormBackward({
    gradOut: gnLoss.grad,
    input: x,
    mean: gn.mean,
    rstd: gn.rstd,
    gamma: gnGamma.tensor,
    group: GROUPS,
    outputMask: [false, true, true],
  });
  update(gnGamma, gnGrads.gradGamma!, lr);
  update(gnBeta, gnGrads.gradBeta!, lr);

  losses.BatchNorm.push(bnLoss.loss);
  losses.GroupNorm.push(gnLoss.loss);
  if (step % 6 === 0) {
    console.log(
      `step ${String(step).padStart(2)}  BatchNorm loss ${bnLoss.loss.toExponential(3)}  ` +
        `GroupNorm loss ${gnLoss.loss.toExponential(3)}`,
    );
  }
}
const seconds = (performance.now() - started) / 1000;
console.log(`BatchNorm gamma ${Array.from(bnWeight.host, (v) => v.toFixed(3)).join(" ")}`);
console.log(`true gamma      ${trueGamma.map((v) => v.toFixed(3)).join(" ")}`);
console.log(
  `running mean after ${STEPS + 1} steps: ${
    runningMean.toArray().map((v) => v.toFixed(3)).join(" ")
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
console.log(`${STEPS + 1} steps of ${N}x${C}x6x6 in ${seconds.toFixed(2)} s`);
backend.close();
if (!ok) Deno.exit(1);
