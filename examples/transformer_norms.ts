/**
 * The norms of a pre-norm transformer block, trained for a few steps on the default backend:
 * each step adds a sublayer's output to the residual stream and normalizes the sum in one call
 * (addRmsNorm, CANN's fused AddRmsNorm), compares the result with a target, and takes the
 * gradient back through rmsNormGrad, whose dx is the gradient of both summands (the sublayer
 * output and the residual). SGD on gamma makes the loss fall; the gradient of the residual is
 * checked against central differences of the forward.
 *
 * Run: `deno run --allow-ffi --allow-env --allow-read examples/transformer_norms.ts [--cpu | --sim]`
 *
 * @module
 */

import { addRmsNorm, type Device, rmsNormGrad, Tensor } from "../mod.ts";
import { openBackend } from "./backend.ts";

const backend = openBackend(
  "usage: deno run --allow-ffi --allow-env --allow-read examples/transformer_norms.ts [--cpu | --sim]",
);
const device: Device = backend.device;

/** Batch, sequence length, model dimension; RMSNorm runs over the model dimension. */
const [B, S, D] = [2, 8, 32];
const SHAPE = [B, S, D];
const STEPS = 8;
const LR = 0.05;
const EPS = 1e-6;

const on = (t: Tensor): Tensor => (device === "cpu" ? t : t.to(device));
const random = (seed: number) => on(Tensor.random(SHAPE, { seed, distribution: "normal" }));
/** The gamma the block should learn: 1 + sin(i) / 2. */
const wanted = Float64Array.from({ length: D }, (_, i) => 1 + Math.sin(i) / 2);

/**
 * One block's norm: y = rmsNorm(attention + residual) * gamma, and L = sum((y - target)^2) / 2
 * with dL/dy = y - target. The target is x * rstd * wanted (what the learned gamma should
 * give), or a fixed one.
 */
function blockLoss(attention: Tensor, residual: Tensor, gamma: Tensor, fixed?: Float64Array) {
  const f = addRmsNorm({ x1: attention, x2: residual, gamma, epsilon: EPS });
  const y = f.y.toFloat64Array();
  const x = f.x.toFloat64Array();
  const rstd = f.rstd.toFloat64Array();
  const target = fixed ?? y.map((_, i) => x[i] * rstd[Math.floor(i / D)] * wanted[i % D]);
  const dy = y.map((v, i) => v - target[i]);
  const loss = dy.reduce((s, d) => s + d * d / 2, 0);
  return { f, dy, loss, target };
}

let gamma = on(Tensor.ones([D]));
const losses: number[] = [];
for (let step = 0; step < STEPS; step++) {
  const residual = random(1000 + step);
  const attention = random(2000 + step);
  const { f, dy, loss } = blockLoss(attention, residual, gamma);
  // Backward through the norm: dx reaches both summands (x = x1 + x2).
  using g = rmsNormGrad({ dy: on(Tensor.fromArray(dy, SHAPE)), x: f.x, rstd: f.rstd, gamma });
  const dgamma = g.dgamma.toFloat64Array();
  const next = gamma.toFloat64Array().map((v, i) => v - LR * dgamma[i]);
  gamma.dispose();
  gamma = on(Tensor.fromArray(next, [D]));
  losses.push(loss);
  console.log(`step ${step}: loss ${loss.toFixed(4)}, |dgamma| ${norm(dgamma).toExponential(2)}`);
  f[Symbol.dispose]();
}

function norm(v: Float64Array): number {
  return Math.sqrt(v.reduce((s, x) => s + x * x, 0));
}

const fell = losses[losses.length - 1] < losses[0] / 2;
console.log(
  `loss fell from ${losses[0].toFixed(4)} to ${losses[losses.length - 1].toFixed(4)}: ${
    fell ? "ok" : "FAIL"
  }`,
);

// The residual's gradient (what flows on down the residual stream) against central differences
// of the forward, for a few of its elements, at gamma = 1 and a fixed target.
const ones = on(Tensor.ones([D]));
const residual = random(3000);
const attention = random(3001);
const { f, dy, target } = blockLoss(attention, residual, ones);
using g = rmsNormGrad({ dy: on(Tensor.fromArray(dy, SHAPE)), x: f.x, rstd: f.rstd, gamma: ones });
const dx = g.dx.toFloat64Array();
const base = residual.toFloat64Array();
let worst = 0;
for (const i of [0, 5, 77, 300, B * S * D - 1]) {
  const h = 1e-2;
  const probe = (delta: number) => {
    const v = Float64Array.from(base);
    v[i] = Math.fround(base[i] + delta);
    const moved = on(Tensor.fromArray(v, SHAPE));
    return { loss: blockLoss(attention, moved, ones, target).loss, at: v[i] };
  };
  const up = probe(h);
  const down = probe(-h);
  const numeric = (up.loss - down.loss) / (up.at - down.at);
  worst = Math.max(worst, Math.abs(numeric - dx[i]) / Math.max(1e-3, Math.abs(numeric)));
}
const ok = worst < 1e-2;
console.log(
  `dL/dresidual vs finite differences: worst relative error ${worst.toExponential(2)}: ${
    ok ? "ok" : "FAIL"
  }`,
);
backend.close();
if (!fell || !ok) Deno.exit(1);
