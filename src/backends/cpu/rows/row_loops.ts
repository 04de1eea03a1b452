/**
 * The row loops of the TypeScript row kernels, one per operator for every layout and dtype:
 * each tensor's rows seen through a {@linkcode RowView}, which reads and writes float32 rows
 * at unit stride in their own Float32Array (no decoded copy) and every other row through a
 * float64 scratch row (decoded once on load, rounded once per element on store). The
 * arithmetic is float64 on the same values in the same order either way, so both give the
 * same bits, and the same as the WebAssembly row kernels (sums.ts).
 *
 * Each function runs rows [first, end) of one work item; they are plain functions called per
 * item (a closure made per call would be compiled again on every call).
 *
 * @module
 */

import { loadRow, type RowAccess, scratchRow, storeRow } from "./access.ts";
import { moments8, rstd8, sum8 } from "./sums.ts";

/**
 * One tensor's rows as the loops read and write them: after {@linkcode RowView.load} or
 * {@linkcode RowView.seek} of row r, its elements are `data[at .. at + n)`.
 */
export class RowView {
  /** The array holding the current row: the tensor's own float32 storage, or a scratch row. */
  readonly data: Float32Array | Float64Array;
  /** Index of the current row's first element in `data`. */
  at = 0;
  readonly #access: RowAccess;
  readonly #n: number;
  /** Whether the rows are float32 at unit stride with one row stride (read in place). */
  readonly #direct: boolean;

  /** The rows of `access`, `n` elements each, through scratch row `slot` when not direct. */
  constructor(access: RowAccess, n: number, slot: number) {
    this.#access = access;
    this.#n = n;
    this.#direct = access.code === 0 && access.step === 1 && access.rowStride >= 0;
    this.data = this.#direct ? access.bits as Float32Array : scratchRow(slot, n);
  }

  /** Makes row `r` current with its values (decoded into the scratch row when not direct). */
  load(r: number): void {
    if (this.#direct) this.at = this.#access.offset + r * this.#access.rowStride;
    else loadRow(this.#access, r, this.data as Float64Array, this.#n);
  }

  /** Makes row `r` current for writing all of it (nothing is read). */
  seek(r: number): void {
    if (this.#direct) this.at = this.#access.offset + r * this.#access.rowStride;
  }

  /** Writes the current row back as row `r` (a scratch row's store; nothing when direct). */
  store(r: number): void {
    if (!this.#direct) storeRow(this.#access, r, this.data as Float64Array, this.#n);
  }
}

/** First scratch slot of the loops' row terms (the views of a call take slots 0 to 3). */
const TERMS = 4;

/** LayerNorm forward of rows [first, end): y, and each row's mean and rstd. */
export function layerNormRows(
  x: RowView,
  y: RowView,
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
  for (let r = first; r < end; r++) {
    x.load(r);
    y.seek(r);
    const xd = x.data;
    const b = x.at;
    const yd = y.data;
    const o = y.at;
    moments8(xd, b, n, eps, moments);
    const m = moments[0];
    const rs = moments[1];
    for (let i = 0; i < n; i++) yd[o + i] = (xd[b + i] - m) * rs * w[i] + bias[i];
    y.store(r);
    mean[r] = m;
    rstd[r] = rs;
  }
}

/**
 * LayerNorm backward of rows [first, end) of item `item`: each row's sums, the column
 * partials of the item (when `pw`/`pb` are given) and gradInput (when `gi` is).
 */
export function layerNormGradRows(
  dy: RowView,
  x: RowView,
  gi: RowView | undefined,
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
  const at = item * n;
  const t1 = scratchRow(TERMS, n);
  const t2 = scratchRow(TERMS + 1, n);
  for (let r = first; r < end; r++) {
    dy.load(r);
    x.load(r);
    const dd = dy.data;
    const d = dy.at;
    const xd = x.data;
    const b = x.at;
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
    gi.seek(r);
    const gd = gi.data;
    const o = gi.at;
    const a = s1 / n;
    const c = s2 / n;
    for (let i = 0; i < n; i++) {
      const xh = (xd[b + i] - m) * rs;
      gd[o + i] = rs * (dd[d + i] * w[i] - a - xh * c);
    }
    gi.store(r);
  }
}

/** RMSNorm forward of rows [first, end): y = x * rstd * g, and each row's rstd. */
export function rmsNormRows(
  x: RowView,
  y: RowView,
  n: number,
  eps: number,
  g: Float64Array,
  rstd: Float64Array,
  first: number,
  end: number,
): void {
  for (let r = first; r < end; r++) {
    x.load(r);
    y.seek(r);
    const xd = x.data;
    const b = x.at;
    const yd = y.data;
    const o = y.at;
    const rs = rstd8(xd, b, n, eps);
    for (let i = 0; i < n; i++) yd[o + i] = xd[b + i] * rs * g[i];
    y.store(r);
    rstd[r] = rs;
  }
}

/** RMSNorm backward of rows [first, end) of item `item`: dgamma partials and dx. */
export function rmsNormGradRows(
  dy: RowView,
  x: RowView,
  dx: RowView,
  n: number,
  rstd: Float64Array,
  g: Float64Array,
  pg: Float64Array,
  first: number,
  end: number,
  item: number,
): void {
  const at = item * n;
  const t = scratchRow(TERMS, n);
  for (let r = first; r < end; r++) {
    dy.load(r);
    x.load(r);
    dx.seek(r);
    const dd = dy.data;
    const d = dy.at;
    const xd = x.data;
    const b = x.at;
    const od = dx.data;
    const o = dx.at;
    const rs = rstd[r];
    for (let i = 0; i < n; i++) {
      const p = dd[d + i] * xd[b + i];
      t[i] = p * g[i];
      pg[at + i] += p * rs;
    }
    const s = sum8(t, n);
    const k = rs * rs * rs * s / n;
    for (let i = 0; i < n; i++) od[o + i] = rs * dd[d + i] * g[i] - xd[b + i] * k;
    dx.store(r);
  }
}

/**
 * AddRmsNorm's sum of rows [first, end): x = x1 + x2, rounded by its store (the statistics,
 * {@linkcode rmsNormRows} of x afterwards, see the stored sum).
 */
export function addRows(
  x1: RowView,
  x2: RowView,
  x: RowView,
  n: number,
  first: number,
  end: number,
): void {
  for (let r = first; r < end; r++) {
    x1.load(r);
    x2.load(r);
    x.seek(r);
    const ad = x1.data;
    const a = x1.at;
    const bd = x2.data;
    const c = x2.at;
    const xd = x.data;
    const o = x.at;
    for (let i = 0; i < n; i++) xd[o + i] = ad[a + i] + bd[c + i];
    x.store(r);
  }
}
