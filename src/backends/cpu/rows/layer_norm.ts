/**
 * The CPU kernels of aclnnLayerNorm and aclnnLayerNormBackward: rows of the normalized dims,
 * each decoded once into a float64 scratch row (see access.ts), its statistics or sums taken in
 * one pass and its output written in a second pass over the cached row, float64 throughout and
 * one rounding per output element. Rows go in work items (items.ts); weight gradients are
 * per-item column partials merged in item order.
 *
 * @module
 */

import type {
  LayerNormBackwardPlan,
  LayerNormBackwardTensors,
  LayerNormPlan,
  LayerNormTensors,
} from "../../types.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";
import { channelValues, channelValuesOr, writeChannelValues } from "../fast/channel_values.ts";
import * as reference from "../reference/layer_norm.ts";
import { loadRow, rowAccess, rowAddressable, scratchRow, storeRow } from "./access.ts";
import { forEachItem, itemCount, mergeColumns } from "./items.ts";

/**
 * Mean and 1/sqrt(biased variance + eps) of `x[0..n)`, in one pass of sums shifted by the
 * row's first element (so that a large |mean| does not cancel the variance away); a variance
 * that rounding leaves below zero counts as zero. Writes [mean, rstd] into `out`.
 */
export function rowMoments(x: Float64Array, n: number, eps: number, out: Float64Array): void {
  const k = x[0];
  let s0 = 0, s1 = 0, q0 = 0, q1 = 0;
  let i = 0;
  for (; i + 1 < n; i += 2) {
    const d0 = x[i] - k;
    const d1 = x[i + 1] - k;
    s0 += d0;
    q0 += d0 * d0;
    s1 += d1;
    q1 += d1 * d1;
  }
  if (i < n) {
    const d = x[i] - k;
    s0 += d;
    q0 += d * d;
  }
  const shift = (s0 + s1) / n;
  const variance = Math.max((q0 + q1) / n - shift * shift, 0);
  out[0] = k + shift;
  out[1] = 1 / Math.sqrt(variance + eps);
}

/**
 * aclnnLayerNorm: per row, mean and rstd = 1/sqrt(biased var + eps) over the normalized dims,
 * y = (x - mean) * rstd * weight + bias. No rows: nothing to write; rows of no element: mean 0
 * and rstd NaN, as CANN fills them.
 */
export function layerNorm(plan: LayerNormPlan, t: LayerNormTensors): void {
  const { rows, cols, axis } = plan.geometry;
  if (rows === 0) return;
  if (cols === 0) {
    writeChannelValues(t.mean, temporaryFloat64(rows));
    writeChannelValues(t.rstd, temporaryFloat64(rows).fill(NaN));
    return;
  }
  if (!rowAddressable(t.input) || !rowAddressable(t.output)) return reference.layerNorm(plan, t);
  const x = rowAccess(t.input, axis);
  const y = rowAccess(t.output, axis);
  const w = channelValuesOr(t.weight, cols, 1);
  const b = channelValuesOr(t.bias, cols, 0);
  const mean = temporaryFloat64(rows);
  const rstd = temporaryFloat64(rows);
  const xs = scratchRow(0, cols);
  const moments = temporaryFloat64(2);
  const eps = plan.eps;
  forEachItem(rows, cols, (first, end) => {
    for (let r = first; r < end; r++) {
      loadRow(x, r, xs, cols);
      rowMoments(xs, cols, eps, moments);
      const m = moments[0];
      const rs = moments[1];
      for (let i = 0; i < cols; i++) xs[i] = (xs[i] - m) * rs * w[i] + b[i];
      storeRow(y, r, xs, cols);
      mean[r] = m;
      rstd[r] = rs;
    }
  });
  writeChannelValues(t.mean, mean);
  writeChannelValues(t.rstd, rstd);
}

/**
 * aclnnLayerNormBackward with the forward's per-row mean and rstd: xhat = (x - mean) * rstd,
 * g = gradOut * weight; gradInput = rstd * (g - mean(g) - xhat * mean(g * xhat)) over the
 * normalized dims; gradWeight = sum over rows of gradOut * xhat; gradBias = sum of gradOut.
 * Only masked-on outputs are computed; no rows give zero gradWeight and gradBias.
 */
export function layerNormBackward(plan: LayerNormBackwardPlan, t: LayerNormBackwardTensors): void {
  const { rows, cols, axis } = plan.geometry;
  const [wantInput, wantWeight, wantBias] = plan.mask;
  const gradInput = wantInput ? t.gradInput : undefined;
  if (!wantInput && !wantWeight && !wantBias) return;
  if (rows === 0 || cols === 0) {
    if (wantWeight && t.gradWeight) writeChannelValues(t.gradWeight, temporaryFloat64(cols));
    if (wantBias && t.gradBias) writeChannelValues(t.gradBias, temporaryFloat64(cols));
    return;
  }
  const data = [t.gradOut, t.input, ...(gradInput ? [gradInput] : [])];
  if (!data.every(rowAddressable)) return reference.layerNormBackward(plan, t);
  const dyAt = rowAccess(t.gradOut, axis);
  const xAt = rowAccess(t.input, axis);
  const outAt = gradInput ? rowAccess(gradInput, axis) : undefined;
  const w = channelValuesOr(t.weight, cols, 1);
  const mean = channelValues(t.mean);
  const rstd = channelValues(t.rstd);
  const sums = wantWeight || wantBias;
  const items = itemCount(rows, cols);
  const pw = sums ? new Float64Array(items * cols) : undefined;
  const pb = sums ? new Float64Array(items * cols) : undefined;
  const dy = scratchRow(0, cols);
  const xs = scratchRow(1, cols);
  const inv = 1 / cols;
  forEachItem(rows, cols, (first, end, item) => {
    const at = item * cols;
    for (let r = first; r < end; r++) {
      loadRow(dyAt, r, dy, cols);
      loadRow(xAt, r, xs, cols);
      const m = mean[r];
      const rs = rstd[r];
      let s1 = 0;
      let s2 = 0;
      if (pw && pb) {
        for (let i = 0; i < cols; i++) {
          const d = dy[i];
          const xh = (xs[i] - m) * rs;
          const g = d * w[i];
          s1 += g;
          s2 += g * xh;
          pw[at + i] += d * xh;
          pb[at + i] += d;
        }
      } else {
        for (let i = 0; i < cols; i++) {
          const g = dy[i] * w[i];
          s1 += g;
          s2 += g * (xs[i] - m) * rs;
        }
      }
      if (!outAt) continue;
      const a = s1 * inv;
      const c = s2 * inv;
      for (let i = 0; i < cols; i++) {
        const xh = (xs[i] - m) * rs;
        dy[i] = rs * (dy[i] * w[i] - a - xh * c);
      }
      storeRow(outAt, r, dy, cols);
    }
  });
  if (wantWeight && t.gradWeight) writeChannelValues(t.gradWeight, mergeColumns(pw!, items, cols));
  if (wantBias && t.gradBias) writeChannelValues(t.gradBias, mergeColumns(pb!, items, cols));
}
