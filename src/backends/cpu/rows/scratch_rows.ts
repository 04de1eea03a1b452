/**
 * Row loops for every layout and dtype: each row decoded once into a float64 scratch row
 * (access.ts), its statistics or sums taken over it, its output computed into a scratch row and
 * encoded with one rounding per element. The arithmetic is direct_f32.ts's, element for element,
 * so the two paths give the same bits on the same values.
 *
 * Each function runs rows [first, end) of one work item (see direct_f32.ts for why these are
 * plain functions).
 *
 * @module
 */

import { loadRow, type RowAccess, scratchRow, storeRow } from "./access.ts";
import { moments8, rstd8, sum8 } from "./sums.ts";

/** LayerNorm forward of rows [first, end) (direct_f32.ts layerNormRowsF32 for any layout). */
export function layerNormRows(
  x: RowAccess,
  y: RowAccess,
  n: number,
  eps: number,
  w: Float64Array,
  bias: Float64Array,
  mean: Float64Array,
  rstd: Float64Array,
  moments: Float64Array,
  first: number,
  end: number,
): void {
  const xs = scratchRow(0, n);
  for (let r = first; r < end; r++) {
    loadRow(x, r, xs, n);
    moments8(xs, 0, n, eps, moments);
    const m = moments[0];
    const rs = moments[1];
    for (let i = 0; i < n; i++) xs[i] = (xs[i] - m) * rs * w[i] + bias[i];
    storeRow(y, r, xs, n);
    mean[r] = m;
    rstd[r] = rs;
  }
}

/** LayerNorm backward of rows [first, end) of item `item` (layerNormGradRowsF32, any layout). */
export function layerNormGradRows(
  dyAt: RowAccess,
  xAt: RowAccess,
  gi: RowAccess | undefined,
  n: number,
  mean: Float64Array,
  rstd: Float64Array,
  w: Float64Array,
  pw: Float64Array | undefined,
  pb: Float64Array | undefined,
  first: number,
  end: number,
  item: number,
): void {
  const dy = scratchRow(0, n);
  const xs = scratchRow(1, n);
  const t1 = scratchRow(2, n);
  const t2 = scratchRow(3, n);
  const at = item * n;
  for (let r = first; r < end; r++) {
    loadRow(dyAt, r, dy, n);
    loadRow(xAt, r, xs, n);
    const m = mean[r];
    const rs = rstd[r];
    for (let i = 0; i < n; i++) {
      const e = dy[i];
      const xh = (xs[i] - m) * rs;
      const g = e * w[i];
      t1[i] = g;
      t2[i] = g * xh;
      if (pw && pb) {
        pw[at + i] += e * xh;
        pb[at + i] += e;
      }
    }
    const s1 = sum8(t1, n);
    const s2 = sum8(t2, n);
    if (!gi) continue;
    const a = s1 / n;
    const c = s2 / n;
    for (let i = 0; i < n; i++) {
      const xh = (xs[i] - m) * rs;
      dy[i] = rs * (dy[i] * w[i] - a - xh * c);
    }
    storeRow(gi, r, dy, n);
  }
}

/** RMSNorm forward of rows [first, end) (rmsNormRowsF32, any layout). */
export function rmsNormRows(
  x: RowAccess,
  y: RowAccess,
  n: number,
  eps: number,
  g: Float64Array,
  rstd: Float64Array,
  first: number,
  end: number,
): void {
  const xs = scratchRow(0, n);
  for (let r = first; r < end; r++) {
    loadRow(x, r, xs, n);
    const rs = rstd8(xs, 0, n, eps);
    for (let i = 0; i < n; i++) xs[i] = xs[i] * rs * g[i];
    storeRow(y, r, xs, n);
    rstd[r] = rs;
  }
}

/** RMSNorm backward of rows [first, end) of item `item` (rmsNormGradRowsF32, any layout). */
export function rmsNormGradRows(
  dyAt: RowAccess,
  xAt: RowAccess,
  dxAt: RowAccess,
  n: number,
  rstd: Float64Array,
  g: Float64Array,
  pg: Float64Array,
  first: number,
  end: number,
  item: number,
): void {
  const dy = scratchRow(0, n);
  const xs = scratchRow(1, n);
  const t = scratchRow(2, n);
  const at = item * n;
  for (let r = first; r < end; r++) {
    loadRow(dyAt, r, dy, n);
    loadRow(xAt, r, xs, n);
    const rs = rstd[r];
    for (let i = 0; i < n; i++) {
      const p = dy[i] * xs[i];
      t[i] = p * g[i];
      pg[at + i] += p * rs;
    }
    const s = sum8(t, n);
    const k = rs * rs * rs * s / n;
    for (let i = 0; i < n; i++) dy[i] = rs * dy[i] * g[i] - xs[i] * k;
    storeRow(dxAt, r, dy, n);
  }
}

/** AddRmsNorm of rows [first, end) (addRmsNormRowsF32, any layout and dtype). */
export function addRmsNormRows(
  x1: RowAccess,
  x2: RowAccess,
  x: RowAccess,
  y: RowAccess,
  n: number,
  eps: number,
  g: Float64Array,
  rstd: Float64Array,
  first: number,
  end: number,
): void {
  const xs = scratchRow(0, n);
  const bs = scratchRow(1, n);
  for (let r = first; r < end; r++) {
    loadRow(x1, r, xs, n);
    loadRow(x2, r, bs, n);
    for (let i = 0; i < n; i++) xs[i] += bs[i];
    storeRow(x, r, xs, n);
    // The sum as stored (rounded to the dtype) is what the statistics see.
    loadRow(x, r, xs, n);
    const rs = rstd8(xs, 0, n, eps);
    for (let i = 0; i < n; i++) xs[i] = xs[i] * rs * g[i];
    storeRow(y, r, xs, n);
    rstd[r] = rs;
  }
}
