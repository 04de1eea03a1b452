/**
 * Float64 reference kernels of aclnnRmsNorm, aclnnRmsNormGrad and aclnnAddRmsNorm: whole
 * tensors read as float64 in logical order, the documented formulas, each output rounded once.
 * The row kernels (cpu/rows) fall back to these for storages beyond int32 indexing, and the
 * tests compare the two.
 *
 * @module
 */

import type {
  AddRmsNormPlan,
  AddRmsNormTensors,
  RmsNormGradPlan,
  RmsNormGradTensors,
  RmsNormPlan,
  RmsNormTensors,
} from "../../../src/backends/types.ts";

/** Per row of `x`, 1/sqrt(mean(x^2) + eps); y = x * rstd * gamma. */
function normalize(
  x: Float64Array,
  g: Float64Array,
  rows: number,
  cols: number,
  eps: number,
): { y: Float64Array; rstd: Float64Array } {
  const y = new Float64Array(x.length);
  const rstd = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    const at = r * cols;
    let q = 0;
    for (let i = 0; i < cols; i++) q += x[at + i] ** 2;
    const rs = 1 / Math.sqrt(q / cols + eps);
    for (let i = 0; i < cols; i++) y[at + i] = x[at + i] * rs * g[i];
    rstd[r] = rs;
  }
  return { y, rstd };
}

/** aclnnRmsNorm (see cpu/rows/rms_norm.ts for the contract). */
export function rmsNorm(plan: RmsNormPlan, t: RmsNormTensors): void {
  const { rows, cols } = plan.geometry;
  if (rows === 0 || cols === 0) return;
  const { y, rstd } = normalize(
    t.x.toFloat64Array(),
    t.gamma.toFloat64Array(),
    rows,
    cols,
    plan.epsilon,
  );
  t.y.copy_(y);
  t.rstd.copy_(rstd);
}

/** aclnnRmsNormGrad (see cpu/rows/rms_norm.ts for the contract). */
export function rmsNormGrad(plan: RmsNormGradPlan, t: RmsNormGradTensors): void {
  const { rows, cols } = plan.geometry;
  if (cols === 0) return;
  const dgamma = new Float64Array(cols);
  if (rows > 0) {
    const dy = t.dy.toFloat64Array();
    const x = t.x.toFloat64Array();
    const rstd = t.rstd.toFloat64Array();
    const g = t.gamma.toFloat64Array();
    const dx = new Float64Array(dy.length);
    for (let r = 0; r < rows; r++) {
      const at = r * cols;
      const rs = rstd[r];
      let s = 0;
      for (let i = 0; i < cols; i++) {
        s += dy[at + i] * g[i] * x[at + i] * rs;
        dgamma[i] += dy[at + i] * x[at + i] * rs;
      }
      for (let i = 0; i < cols; i++) {
        dx[at + i] = rs * (dy[at + i] * g[i] - x[at + i] * rs * s / cols);
      }
    }
    t.dx.copy_(dx);
  }
  t.dgamma.copy_(dgamma);
}

/** aclnnAddRmsNorm (see cpu/rows/rms_norm.ts for the contract). */
export function addRmsNorm(plan: AddRmsNormPlan, t: AddRmsNormTensors): void {
  const { rows, cols } = plan.geometry;
  if (rows === 0) return;
  if (cols === 0) {
    t.rstd.copy_(new Float64Array(rows).fill(NaN));
    return;
  }
  const a = t.x1.toFloat64Array();
  const b = t.x2.toFloat64Array();
  for (let i = 0; i < a.length; i++) a[i] += b[i];
  t.x.copy_(a);
  const { y, rstd } = normalize(
    t.x.toFloat64Array(),
    t.gamma.toFloat64Array(),
    rows,
    cols,
    plan.epsilon,
  );
  t.y.copy_(y);
  t.rstd.copy_(rstd);
}
