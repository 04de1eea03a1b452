/**
 * Float64 reference kernels of aclnnLayerNorm and aclnnLayerNormBackward: whole tensors read
 * as float64 in logical order, the documented formulas with two-pass statistics, each output
 * rounded once. The row kernels (cpu/rows) fall back to these for storages beyond int32
 * indexing, and the tests compare the two.
 *
 * @module
 */

import type {
  LayerNormBackwardPlan,
  LayerNormBackwardTensors,
  LayerNormPlan,
  LayerNormTensors,
} from "../../../src/backends/types.ts";
import { valuesOr } from "./values.ts";

/** aclnnLayerNorm (see cpu/rows/layer_norm.ts for the contract). */
export function layerNorm(plan: LayerNormPlan, t: LayerNormTensors): void {
  const { rows, cols } = plan.geometry;
  if (rows === 0) return;
  const mean = new Float64Array(rows);
  const rstd = new Float64Array(rows).fill(NaN);
  if (cols === 0) {
    t.mean.copy_(mean);
    t.rstd.copy_(rstd);
    return;
  }
  const x = t.input.toFloat64Array();
  const w = valuesOr(t.weight, cols, 1);
  const b = valuesOr(t.bias, cols, 0);
  const y = new Float64Array(x.length);
  for (let r = 0; r < rows; r++) {
    const at = r * cols;
    let s = 0;
    for (let i = 0; i < cols; i++) s += x[at + i];
    const m = s / cols;
    let q = 0;
    for (let i = 0; i < cols; i++) q += (x[at + i] - m) ** 2;
    const rs = 1 / Math.sqrt(q / cols + plan.eps);
    for (let i = 0; i < cols; i++) y[at + i] = (x[at + i] - m) * rs * w[i] + b[i];
    mean[r] = m;
    rstd[r] = rs;
  }
  t.output.copy_(y);
  t.mean.copy_(mean);
  t.rstd.copy_(rstd);
}

/** aclnnLayerNormBackward (see cpu/rows/layer_norm.ts for the contract). */
export function layerNormBackward(plan: LayerNormBackwardPlan, t: LayerNormBackwardTensors): void {
  const { rows, cols } = plan.geometry;
  const [wantInput, wantWeight, wantBias] = plan.mask;
  const gw = new Float64Array(cols);
  const gb = new Float64Array(cols);
  if (rows > 0 && cols > 0) {
    const dy = t.gradOut.toFloat64Array();
    const x = t.input.toFloat64Array();
    const mean = t.mean.toFloat64Array();
    const rstd = t.rstd.toFloat64Array();
    const w = valuesOr(t.weight, cols, 1);
    const gi = new Float64Array(dy.length);
    for (let r = 0; r < rows; r++) {
      const at = r * cols;
      let s1 = 0;
      let s2 = 0;
      for (let i = 0; i < cols; i++) {
        const xh = (x[at + i] - mean[r]) * rstd[r];
        const g = dy[at + i] * w[i];
        s1 += g;
        s2 += g * xh;
        gw[i] += dy[at + i] * xh;
        gb[i] += dy[at + i];
      }
      for (let i = 0; i < cols; i++) {
        const xh = (x[at + i] - mean[r]) * rstd[r];
        gi[at + i] = rstd[r] * (dy[at + i] * w[i] - s1 / cols - xh * s2 / cols);
      }
    }
    if (wantInput && t.gradInput) t.gradInput.copy_(gi);
  }
  if (wantWeight && t.gradWeight) t.gradWeight.copy_(gw);
  if (wantBias && t.gradBias) t.gradBias.copy_(gb);
}
