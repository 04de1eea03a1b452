/**
 * The CPU kernels of aclnnRmsNorm, aclnnRmsNormGrad and aclnnAddRmsNorm: rows of gamma's dims,
 * decoded once into float64 scratch rows (access.ts), one pass for the row's sum of squares or
 * dot product and one for the write, one rounding per output element. Rows go in work items
 * (items.ts); dgamma is per-item column partials merged in item order.
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
} from "../../types.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";
import { channelValues, writeChannelValues } from "../fast/channel_values.ts";
import * as reference from "../reference/rms_norm.ts";
import { loadRow, rowAccess, rowAddressable, scratchRow, storeRow } from "./access.ts";
import { forEachItem, itemCount, mergeColumns } from "./items.ts";

/** 1/sqrt(mean(x[0..n)^2) + eps). */
export function rowRstd(x: Float64Array, n: number, eps: number): number {
  let q0 = 0, q1 = 0;
  let i = 0;
  for (; i + 1 < n; i += 2) {
    q0 += x[i] * x[i];
    q1 += x[i + 1] * x[i + 1];
  }
  if (i < n) q0 += x[i] * x[i];
  return 1 / Math.sqrt((q0 + q1) / n + eps);
}

/** aclnnRmsNorm: per row rstd = 1/sqrt(mean(x^2) + epsilon), y = x * rstd * gamma. */
export function rmsNorm(plan: RmsNormPlan, t: RmsNormTensors): void {
  const { rows, cols, axis } = plan.geometry;
  if (rows === 0 || cols === 0) return;
  if (!rowAddressable(t.x) || !rowAddressable(t.y)) return reference.rmsNorm(plan, t);
  const xAt = rowAccess(t.x, axis);
  const yAt = rowAccess(t.y, axis);
  const g = channelValues(t.gamma);
  const rstd = temporaryFloat64(rows);
  const xs = scratchRow(0, cols);
  const eps = plan.epsilon;
  forEachItem(rows, cols, (first, end) => {
    for (let r = first; r < end; r++) {
      loadRow(xAt, r, xs, cols);
      const rs = rowRstd(xs, cols, eps);
      for (let i = 0; i < cols; i++) xs[i] = xs[i] * rs * g[i];
      storeRow(yAt, r, xs, cols);
      rstd[r] = rs;
    }
  });
  writeChannelValues(t.rstd, rstd);
}

/**
 * aclnnRmsNormGrad with the forward's per-row rstd: dx = rstd * (dy * gamma - x * rstd *
 * mean(dy * gamma * x * rstd)) over gamma's dims, dgamma = sum over rows of dy * x * rstd. No
 * rows: dgamma is zero.
 */
export function rmsNormGrad(plan: RmsNormGradPlan, t: RmsNormGradTensors): void {
  const { rows, cols, axis } = plan.geometry;
  if (cols === 0) return;
  if (rows === 0) {
    writeChannelValues(t.dgamma, temporaryFloat64(cols));
    return;
  }
  if (![t.dy, t.x, t.dx].every(rowAddressable)) return reference.rmsNormGrad(plan, t);
  const dyAt = rowAccess(t.dy, axis);
  const xAt = rowAccess(t.x, axis);
  const dxAt = rowAccess(t.dx, axis);
  const g = channelValues(t.gamma);
  const rstd = channelValues(t.rstd);
  const items = itemCount(rows, cols);
  const pg = new Float64Array(items * cols);
  const dy = scratchRow(0, cols);
  const xs = scratchRow(1, cols);
  const inv = 1 / cols;
  forEachItem(rows, cols, (first, end, item) => {
    const at = item * cols;
    for (let r = first; r < end; r++) {
      loadRow(dyAt, r, dy, cols);
      loadRow(xAt, r, xs, cols);
      const rs = rstd[r];
      let s = 0;
      for (let i = 0; i < cols; i++) {
        const dx = dy[i] * xs[i];
        s += dx * g[i];
        pg[at + i] += dx * rs;
      }
      const k = rs * rs * rs * s * inv;
      for (let i = 0; i < cols; i++) dy[i] = rs * dy[i] * g[i] - xs[i] * k;
      storeRow(dxAt, r, dy, cols);
    }
  });
  writeChannelValues(t.dgamma, mergeColumns(pg, items, cols));
}

/**
 * aclnnAddRmsNorm: x = x1 + x2 rounded to x1's dtype (written to `x`), then per row
 * rstd = 1/sqrt(mean(x^2) + epsilon) and y = x * rstd * gamma from the rounded x. Rows of no
 * element give rstd NaN (the mean of no square); no rows, nothing.
 */
export function addRmsNorm(plan: AddRmsNormPlan, t: AddRmsNormTensors): void {
  const { rows, cols, axis } = plan.geometry;
  if (rows === 0) return;
  if (cols === 0) {
    writeChannelValues(t.rstd, temporaryFloat64(rows).fill(NaN));
    return;
  }
  if (![t.x1, t.x2, t.y, t.x].every(rowAddressable)) return reference.addRmsNorm(plan, t);
  const aAt = rowAccess(t.x1, axis);
  const bAt = rowAccess(t.x2, axis);
  const xAt = rowAccess(t.x, axis);
  const yAt = rowAccess(t.y, axis);
  const g = channelValues(t.gamma);
  const rstd = temporaryFloat64(rows);
  const xs = scratchRow(0, cols);
  const bs = scratchRow(1, cols);
  const eps = plan.epsilon;
  forEachItem(rows, cols, (first, end) => {
    for (let r = first; r < end; r++) {
      loadRow(aAt, r, xs, cols);
      loadRow(bAt, r, bs, cols);
      for (let i = 0; i < cols; i++) xs[i] += bs[i];
      storeRow(xAt, r, xs, cols);
      // The sum as stored (rounded to the dtype) is what the statistics see.
      loadRow(xAt, r, xs, cols);
      const rs = rowRstd(xs, cols, eps);
      for (let i = 0; i < cols; i++) xs[i] = xs[i] * rs * g[i];
      storeRow(yAt, r, xs, cols);
      rstd[r] = rs;
    }
  });
  writeChannelValues(t.rstd, rstd);
}
