/**
 * Row loops for the common case of the row kernels: float32 rows at unit stride whose bases
 * are `offset + r * rowStride` in every data tensor, read and written in their own
 * Float32Arrays (no decoded copy of a row: the backward kernels keep only the terms of their
 * row sums in scratch rows, summed by sums.ts). The arithmetic is the scratch path's (float64,
 * the same formulas and association), so both give the same bits.
 *
 * Each function runs rows [first, end) of one work item; they are plain functions called per
 * item (a closure made per call would be compiled again on every call).
 *
 * @module
 */

import { type RowAccess, scratchRow } from "./access.ts";
import { moments8, rstd8, sum8 } from "./sums.ts";

/** A float32 row stream: data, row 0's base and the row stride. */
export interface F32Rows {
  readonly data: Float32Array;
  readonly offset: number;
  readonly stride: number;
}

/** The direct view of `a`, or undefined when it is not float32 rows at unit stride. */
export function f32Rows(a: RowAccess | undefined): F32Rows | undefined {
  if (!a || a.code !== 0 || a.step !== 1 || a.rowStride < 0) return undefined;
  return { data: a.bits as Float32Array, offset: a.offset, stride: a.rowStride };
}

/** LayerNorm forward of rows [first, end): y, and each row's mean and rstd. */
export function layerNormRowsF32(
  x: F32Rows,
  y: F32Rows,
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
  const xd = x.data;
  const yd = y.data;
  for (let r = first; r < end; r++) {
    const b = x.offset + r * x.stride;
    const o = y.offset + r * y.stride;
    moments8(xd, b, n, eps, moments);
    const m = moments[0];
    const rs = moments[1];
    for (let i = 0; i < n; i++) yd[o + i] = (xd[b + i] - m) * rs * w[i] + bias[i];
    mean[r] = m;
    rstd[r] = rs;
  }
}

/**
 * LayerNorm backward of rows [first, end) of item `item`: each row's sums, the column
 * partials of the item (when `pw`/`pb` are given) and gradInput (when `gi` is).
 */
export function layerNormGradRowsF32(
  dy: F32Rows,
  x: F32Rows,
  gi: F32Rows | undefined,
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
  const dd = dy.data;
  const xd = x.data;
  const at = item * n;
  const t1 = scratchRow(2, n);
  const t2 = scratchRow(3, n);
  for (let r = first; r < end; r++) {
    const d = dy.offset + r * dy.stride;
    const b = x.offset + r * x.stride;
    const m = mean[r];
    const rs = rstd[r];
    for (let i = 0; i < n; i++) {
      const e = dd[d + i];
      const xh = (xd[b + i] - m) * rs;
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
    const gd = gi.data;
    const o = gi.offset + r * gi.stride;
    const a = s1 / n;
    const c = s2 / n;
    for (let i = 0; i < n; i++) {
      const xh = (xd[b + i] - m) * rs;
      gd[o + i] = rs * (dd[d + i] * w[i] - a - xh * c);
    }
  }
}

/** RMSNorm forward of rows [first, end): y = x * rstd * g, and each row's rstd. */
export function rmsNormRowsF32(
  x: F32Rows,
  y: F32Rows,
  n: number,
  eps: number,
  g: Float64Array,
  rstd: Float64Array,
  first: number,
  end: number,
): void {
  const xd = x.data;
  const yd = y.data;
  for (let r = first; r < end; r++) {
    const b = x.offset + r * x.stride;
    const o = y.offset + r * y.stride;
    const rs = rstd8(xd, b, n, eps);
    for (let i = 0; i < n; i++) yd[o + i] = xd[b + i] * rs * g[i];
    rstd[r] = rs;
  }
}

/** RMSNorm backward of rows [first, end) of item `item`: dgamma partials and dx. */
export function rmsNormGradRowsF32(
  dy: F32Rows,
  x: F32Rows,
  dx: F32Rows,
  n: number,
  rstd: Float64Array,
  g: Float64Array,
  pg: Float64Array,
  first: number,
  end: number,
  item: number,
): void {
  const dd = dy.data;
  const xd = x.data;
  const od = dx.data;
  const at = item * n;
  const t = scratchRow(2, n);
  for (let r = first; r < end; r++) {
    const d = dy.offset + r * dy.stride;
    const b = x.offset + r * x.stride;
    const o = dx.offset + r * dx.stride;
    const rs = rstd[r];
    for (let i = 0; i < n; i++) {
      const p = dd[d + i] * xd[b + i];
      t[i] = p * g[i];
      pg[at + i] += p * rs;
    }
    const s = sum8(t, n);
    const k = rs * rs * rs * s / n;
    for (let i = 0; i < n; i++) od[o + i] = rs * dd[d + i] * g[i] - xd[b + i] * k;
  }
}

/**
 * AddRmsNorm of rows [first, end): x = x1 + x2 (rounded by the float32 store), then rstd and
 * y = x * rstd * g from the stored x.
 */
export function addRmsNormRowsF32(
  x1: F32Rows,
  x2: F32Rows,
  x: F32Rows,
  y: F32Rows,
  n: number,
  eps: number,
  g: Float64Array,
  rstd: Float64Array,
  first: number,
  end: number,
): void {
  const ad = x1.data;
  const bd = x2.data;
  const xd = x.data;
  const yd = y.data;
  for (let r = first; r < end; r++) {
    const a = x1.offset + r * x1.stride;
    const c = x2.offset + r * x2.stride;
    const o = x.offset + r * x.stride;
    const p = y.offset + r * y.stride;
    for (let i = 0; i < n; i++) xd[o + i] = ad[a + i] + bd[c + i];
    const rs = rstd8(xd, o, n, eps);
    for (let i = 0; i < n; i++) yd[p + i] = xd[o + i] * rs * g[i];
    rstd[r] = rs;
  }
}
