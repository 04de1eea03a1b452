/**
 * Row loops for the common case of the row kernels: float32 rows at unit stride whose bases
 * are `offset + r * rowStride` in every data tensor, read and written in their own
 * Float32Arrays (no scratch row: two passes over each row instead of four). The arithmetic is
 * the scratch path's (float64, the same formulas and association), so both give the same bits.
 *
 * Each function runs rows [first, end) of one work item; they are plain functions called per
 * item (a closure made per call would be compiled again on every call).
 *
 * @module
 */

import type { RowAccess } from "./access.ts";

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

/** [mean, rstd] of x[b..b+n) into `out` (see layer_norm.ts rowMoments for the contract). */
export function momentsF32(x: Float32Array, b: number, n: number, eps: number, out: Float64Array) {
  const k = x[b];
  let s0 = 0, s1 = 0, q0 = 0, q1 = 0;
  let i = 0;
  for (; i + 1 < n; i += 2) {
    const d0 = x[b + i] - k;
    const d1 = x[b + i + 1] - k;
    s0 += d0;
    q0 += d0 * d0;
    s1 += d1;
    q1 += d1 * d1;
  }
  if (i < n) {
    const d = x[b + i] - k;
    s0 += d;
    q0 += d * d;
  }
  const shift = (s0 + s1) / n;
  out[0] = k + shift;
  out[1] = 1 / Math.sqrt(Math.max((q0 + q1) / n - shift * shift, 0) + eps);
}

/** 1/sqrt(mean(x[b..b+n)^2) + eps). */
export function rstdF32(x: Float32Array, b: number, n: number, eps: number): number {
  let q0 = 0, q1 = 0;
  let i = 0;
  for (; i + 1 < n; i += 2) {
    const a = x[b + i];
    const c = x[b + i + 1];
    q0 += a * a;
    q1 += c * c;
  }
  if (i < n) q0 += x[b + i] * x[b + i];
  return 1 / Math.sqrt((q0 + q1) / n + eps);
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
    momentsF32(xd, b, n, eps, moments);
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
  for (let r = first; r < end; r++) {
    const d = dy.offset + r * dy.stride;
    const b = x.offset + r * x.stride;
    const m = mean[r];
    const rs = rstd[r];
    let s1 = 0;
    let s2 = 0;
    if (pw && pb) {
      for (let i = 0; i < n; i++) {
        const e = dd[d + i];
        const xh = (xd[b + i] - m) * rs;
        const g = e * w[i];
        s1 += g;
        s2 += g * xh;
        pw[at + i] += e * xh;
        pb[at + i] += e;
      }
    } else {
      for (let i = 0; i < n; i++) {
        const g = dd[d + i] * w[i];
        s1 += g;
        s2 += g * (xd[b + i] - m) * rs;
      }
    }
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
    const rs = rstdF32(xd, b, n, eps);
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
  for (let r = first; r < end; r++) {
    const d = dy.offset + r * dy.stride;
    const b = x.offset + r * x.stride;
    const o = dx.offset + r * dx.stride;
    const rs = rstd[r];
    let s = 0;
    for (let i = 0; i < n; i++) {
      const p = dd[d + i] * xd[b + i];
      s += p * g[i];
      pg[at + i] += p * rs;
    }
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
    const rs = rstdF32(xd, o, n, eps);
    for (let i = 0; i < n; i++) yd[p + i] = xd[o + i] * rs * g[i];
    rstd[r] = rs;
  }
}
