/**
 * LayerNorm, RMSNorm and their fused-add forms on the WebAssembly row kernels: each function
 * takes a call's data tensors as heap rows of one dtype (row_staging.ts puts them there), puts
 * its parameters and its per-column and per-row float32 arrays in the heap block and runs its
 * work items (row_call.ts; items.ts: they depend on the shape only, and each item's column
 * partials are its own, merged in item order). The per-row results they return are views of
 * the block, valid until the next call. AdaLayerNorm's are in heap_rows_ada.ts.
 *
 * @module
 */

import type { HostData } from "../../../tensor/dtype.ts";
import type { Tensor } from "../../../tensor/tensor.ts";
import type { ReadValues } from "../tensors/channel_values.ts";
import { ROW_DATA, ROW_FLAGS, ROW_SCRATCH } from "../kernels/row_norm_stage.ts";
import { WASM_REGION_BYTES } from "../kernels/wasm_instance.ts";
import { itemCount } from "./items.ts";
import { mergeColumnsInto } from "./merge_columns.ts";
import type { HeapRows } from "./row_staging.ts";
import { padded } from "./wasm_rows.ts";
import { array, columns, type RowCall, run, setAlpha, setUp, writeConstants } from "./row_call.ts";

/** Per-row float32 arrays a LayerNorm forward gives back (views of the call's block). */
export interface RowStats {
  /** Each row's mean. */
  readonly mean: Float32Array;
  /** Each row's 1/sqrt(variance + eps). */
  readonly rstd: Float32Array;
}

/** LayerNorm forward of every row of the heap rows `data` (x, y). */
export function layerNormHeap(
  anchor: HostData,
  data: readonly HeapRows[],
  rows: number,
  n: number,
  eps: number,
  w: ReadValues,
  bias: ReadValues,
): RowStats {
  const c4 = padded(n);
  const c = setUp(data, rows, n, eps, 2 * c4 + 2 * rows);
  columns(c, 0, w, n);
  columns(c, c4, bias, n);
  [0, c4, 2 * c4, 2 * c4 + rows].forEach((entry, i) => array(c, i, entry));
  run("layerNormRows", c, anchor);
  return {
    mean: c.arrays.subarray(2 * c4, 2 * c4 + rows),
    rstd: c.arrays.subarray(2 * c4 + rows, 2 * c4 + 2 * rows),
  };
}

/** Where a backward call's column sums go (merged over the items in float64, rounded once). */
export interface ColumnTargets {
  /** gradWeight: the sum over rows of gradOut * xhat (undefined: not written). */
  readonly first: Tensor | undefined;
  /** gradBias: the sum over rows of gradOut (undefined: not written). */
  readonly second: Tensor | undefined;
}

/**
 * LayerNorm backward of every row of the heap rows `data` (dy, x, and gradInput when it is
 * wanted): gradInput when given, the column sums into the targets of `sums` (the partials only
 * when one is given).
 */
export function layerNormBackwardHeap(
  anchor: HostData,
  data: readonly HeapRows[],
  sums: ColumnTargets,
  rows: number,
  n: number,
  mean: ReadValues,
  rstd: ReadValues,
  w: ReadValues,
): void {
  const wantInput = data.length > 2;
  const wantSums = sums.first !== undefined || sums.second !== undefined;
  const b = backwardCall(data, rows, n, w, mean, rstd, wantSums);
  b.c.p[ROW_FLAGS] = (wantSums ? 1 : 0) | (wantInput ? 2 : 0);
  run("layerNormBackwardRows", b.c, anchor);
  if (wantSums) columnSums(b, n, sums);
}

/** A LayerNorm-style backward call set up: its block holds w, mean, rstd, then the partials. */
interface BackwardCall {
  readonly c: RowCall;
  readonly items: number;
  /** Float32s of each partials array (0 without column sums). */
  readonly partials: number;
  /** Entries of the two partials arrays. */
  readonly pw: number;
  readonly pb: number;
}

/**
 * The backward kernels' arrays (ln_bwd, add_ln_bwd): w (padded), one mean and rstd per row, and
 * with `sums` the two column partials (n padded, per item), at array parameters 0-4.
 */
function backwardCall(
  data: readonly HeapRows[],
  rows: number,
  n: number,
  w: ReadValues,
  mean: ReadValues,
  rstd: ReadValues,
  sums: boolean,
): BackwardCall {
  const c4 = padded(n);
  const items = itemCount(rows, n);
  const partials = sums ? items * c4 : 0;
  const c = setUp(data, rows, n, NaN, c4 + 2 * rows + 2 * partials);
  columns(c, 0, w, n);
  writeConstants(c, c4, mean, rows);
  writeConstants(c, c4 + rows, rstd, rows);
  const pw = c4 + 2 * rows;
  const pb = pw + partials;
  [0, c4, c4 + rows, pw, pb].forEach((entry, i) => array(c, i, entry));
  return { c, items, partials, pw, pb };
}

/** The two column partials of a backward call, merged over its items into `into`. */
function columnSums(b: BackwardCall, n: number, into: ColumnTargets): void {
  if (into.first) mergeColumnsInto(into.first, b.c.at + 4 * b.pw, b.items, n, padded(n));
  if (into.second) mergeColumnsInto(into.second, b.c.at + 4 * b.pb, b.items, n, padded(n));
}

/** RMSNorm backward of every row of the heap rows `data` (dy, x, dx): dx, and `dgamma`. */
export function rmsNormGradHeap(
  anchor: HostData,
  data: readonly HeapRows[],
  rows: number,
  n: number,
  rstd: ReadValues,
  g: ReadValues,
  dgamma: Tensor,
): void {
  const c4 = padded(n);
  const items = itemCount(rows, n);
  const partials = items * c4;
  const c = setUp(data, rows, n, NaN, c4 + rows + partials);
  columns(c, 0, g, n);
  writeConstants(c, c4, rstd, rows);
  [0, c4, c4 + rows].forEach((entry, i) => array(c, i, entry));
  run("rmsNormGradRows", c, anchor);
  const pg = c4 + rows;
  mergeColumnsInto(dgamma, c.at + 4 * pg, items, n, c4);
}

/**
 * The RMSNorm-style forward kernels (gamma, then one rstd per row, after the padded gamma):
 * runs `kernel` over the heap rows `data` (RMSNorm: x, y; AddRmsNorm, which stores x = x1 + x2
 * rounded and normalizes the float32 sum: x1, x2, x, y; AddRmsNormCast: x1, x2, x, then y1 as
 * float32 rows and y2) and returns each row's rstd (a view of the call's block).
 */
export function rmsForwardHeap(
  kernel: "rmsNormRows" | "addRmsNormRows" | "addRmsNormCastRows",
  anchor: HostData,
  data: readonly HeapRows[],
  rows: number,
  n: number,
  eps: number,
  g: ReadValues,
): Float32Array {
  const c4 = padded(n);
  const c = setUp(data, rows, n, eps, c4 + rows);
  columns(c, 0, g, n);
  array(c, 0, 0);
  array(c, 1, c4);
  run(kernel, c, anchor);
  return c.arrays.subarray(c4, c4 + rows);
}

/** Float32s of the scratch row a thread's region holds (the rest of a call's rows: its block). */
const REGION_SCRATCH = WASM_REGION_BYTES / 4 - 8;

/** The fused add of AddLayerNorm / DeepNorm: alpha and the bias's form. */
export interface AddRowsOptions {
  /** x1's factor, as a float32 (1 for AddLayerNorm, DeepNorm's alpha). */
  readonly alpha: number;
  /** Whether `data` holds bias rows (after x2); else `columnBias`, or no bias. */
  readonly biasRows: boolean;
  /** The per-column bias (bias of gamma's elements), or undefined. */
  readonly columnBias: Float64Array | undefined;
  /** Whether `data` holds the x output (before y). */
  readonly storeX: boolean;
}

/**
 * AddLayerNorm / DeepNorm forward of every row of the heap rows `data` (x1, x2, [bias rows],
 * [x], y): s = alpha * x1 + x2 (+ bias) in float32, x = s rounded, then LayerNorm of s with
 * gamma `g` and beta `beta` (add_ln_fwd). Rows longer than a thread's region take their scratch
 * row from the call's block and run on this thread alone.
 */
export function addLayerNormHeap(
  anchor: HostData,
  data: readonly HeapRows[],
  rows: number,
  n: number,
  eps: number,
  g: ReadValues,
  beta: ReadValues,
  o: AddRowsOptions,
): RowStats {
  const c4 = padded(n);
  const own = c4 > REGION_SCRATCH;
  const c = setUp(data, rows, n, eps, 3 * c4 + 2 * rows + (own ? c4 + 4 : 0));
  const d = data.length;
  // Data pairs: x1 0, x2 1, bias rows 2, x 3, y 4 (absent ones stay 0).
  const pairs = [0, 1, ...(o.biasRows ? [2] : []), ...(o.storeX ? [3] : []), 4];
  for (let i = d - 1; i >= 0; i--) {
    c.p[ROW_DATA + 2 * pairs[i]] = data[i].at;
    c.p[ROW_DATA + 2 * pairs[i] + 1] = data[i].stride;
    if (pairs[i] !== i) c.p[ROW_DATA + 2 * i] = c.p[ROW_DATA + 2 * i + 1] = 0;
  }
  columns(c, 0, g, n);
  columns(c, c4, beta, n);
  if (o.columnBias) columns(c, 2 * c4, o.columnBias, n);
  [0, c4, 2 * c4, 3 * c4, 3 * c4 + rows].forEach((entry, i) => array(c, i, entry));
  c.p[ROW_FLAGS] = (o.storeX ? 1 : 0) | (o.biasRows ? 2 : 0) | (o.columnBias ? 4 : 0);
  setAlpha(c, o.alpha);
  c.p[ROW_SCRATCH] = own ? c.at + 4 * (3 * c4 + 2 * rows) : -1;
  run("addLayerNormRows", c, anchor, own);
  return {
    mean: c.arrays.subarray(3 * c4, 3 * c4 + rows),
    rstd: c.arrays.subarray(3 * c4 + rows, 3 * c4 + 2 * rows),
  };
}

/**
 * AddLayerNormGrad / DeepNormGrad backward of every row of the heap rows `data` (dy, a, b, c,
 * o: dy, x1, x2, dsum or nothing, dx for AddLayerNormGrad; dy, x, gx, dx, dgx for DeepNormGrad,
 * `deep`): the row outputs, and the column sums (dgamma, dbeta) merged over the items.
 */
export function addLayerNormGradHeap(
  anchor: HostData,
  data: readonly HeapRows[],
  rows: number,
  n: number,
  mean: ReadValues,
  rstd: ReadValues,
  g: ReadValues,
  o: { readonly alpha: number; readonly dsum: boolean; readonly deep: boolean },
  sums: ColumnTargets,
): void {
  const b = backwardCall(data, rows, n, g, mean, rstd, true);
  const p = b.c.p;
  if (data.length === 4) {
    // No dsum: the output takes pair 4, pair 3 stays empty.
    p[ROW_DATA + 8] = data[3].at;
    p[ROW_DATA + 9] = data[3].stride;
    p[ROW_DATA + 6] = p[ROW_DATA + 7] = 0;
  }
  p[ROW_FLAGS] = (o.dsum ? 1 : 0) | (o.deep ? 2 : 0);
  setAlpha(b.c, o.alpha);
  run("addLayerNormGradRows", b.c, anchor);
  columnSums(b, n, sums);
}
