/**
 * The row norms on the WebAssembly row kernels (wasm_rows.ts): each function takes a call's
 * data tensors as heap rows of one dtype (row_staging.ts puts them there), puts its parameters
 * and its per-column and per-row float32 arrays in the heap block, and runs the work items
 * (items.ts: they depend on the shape only, and each item's column partials are its own,
 * merged in item order) as one stage (kernels/row_norm_stage.ts): on the worker pool when the
 * call is large and the pool's governor measures it faster there, else on this thread. The
 * per-row results they return are views of the block, valid until the next call.
 *
 * @module
 */

import type { HostData } from "../../../tensor/dtype.ts";
import type { Tensor } from "../../../tensor/tensor.ts";
import type { ReadValues } from "../tensors/channel_values.ts";
import { MIN_PARALLEL_ELEMENTS } from "../threads.ts";
import {
  ROW_ALPHA,
  ROW_ARRAYS,
  ROW_DATA,
  ROW_DT,
  ROW_EPS,
  ROW_FLAGS,
  ROW_N,
  ROW_PARAMS,
  ROW_PER,
  ROW_ROWS,
  ROW_SCRATCH,
  ROW_SEQ,
  ROW_SLOTS,
  type RowNormOp,
  type RowNormStage,
  runRowNormItems,
} from "../kernels/row_norm_stage.ts";
import type { RowNormExports } from "../kernels/row_exports.ts";
import {
  BFLOAT16,
  constantsCode,
  type DataCode,
  type ReadArray,
  uniformStage,
} from "../kernels/stage_types.ts";
import type { TensorAddress } from "../kernels/layout_types.ts";
import { WASM_REGION_BYTES } from "../kernels/wasm_instance.ts";
import { choosePool, readyPool, runPooled } from "../pool/pool.ts";
import { governor, groupKey } from "../pool/governor.ts";
import { cpuThreads } from "../threads.ts";
import { itemCount, rowsPerItem } from "./items.ts";
import { mergeColumns, mergeColumnsInto } from "./merge_columns.ts";
import type { HeapRows } from "./row_staging.ts";
import { padded, rowBlock, rowNormKernels } from "./wasm_rows.ts";

/** A call being set up: its kernels, parameters, float32 arrays and their byte address. */
interface RowCall {
  readonly k: RowNormExports;
  /** This thread's region of the heap. */
  readonly region: number;
  readonly p: Float64Array;
  readonly arrays: Float32Array;
  readonly at: number;
  /** The data tensors' dtype code. */
  readonly dt: DataCode;
  /**
   * Whether a float constant of the kernels (eps, alpha, a column or per-row array written
   * here) is NaN: a bfloat16 call runs with the kernels' code 2 then, else with
   * BFLOAT16_NO_NAN_CONSTANTS (stage_types.ts constantsCode; see {@linkcode run}).
   */
  nan: boolean;
}

/**
 * The kernels and a heap block of ROW_PARAMS parameters then `floats` float32s, with the
 * shape's parameters (eps rounded to float32, as CANN's kernels receive it) and the data
 * tensors' rows set.
 */
function setUp(
  data: readonly HeapRows[],
  rows: number,
  n: number,
  eps: number,
  floats: number,
): RowCall {
  const kernels = rowNormKernels();
  const block = rowBlock(ROW_PARAMS, floats);
  const p = block.params;
  p.fill(0);
  p[ROW_N] = n;
  p[ROW_ROWS] = rows;
  p[ROW_PER] = rowsPerItem(rows, n);
  p[ROW_EPS] = Math.fround(eps);
  data.forEach((d, i) => {
    p[ROW_DATA + 2 * i] = d.at;
    p[ROW_DATA + 2 * i + 1] = d.stride;
  });
  return {
    k: kernels.exports,
    region: kernels.at,
    p,
    arrays: block.arrays,
    at: block.arraysAt,
    dt: data[0].dt as DataCode,
    nan: Number.isNaN(p[ROW_EPS]),
  };
}

/** Sets array parameter `i` to entry `entry` of the call's float32 arrays. */
function array(c: RowCall, i: number, entry: number): void {
  c.p[ROW_ARRAYS + i] = c.at + 4 * entry;
}

/** Writes n per-column values at `entry` and zeroes their padding to a whole vector. */
function columns(c: RowCall, entry: number, values: ReadValues, n: number): void {
  writeConstants(c, entry, values, n);
  c.arrays.fill(0, entry + n, entry + padded(n));
}

/**
 * Writes the first `count` of `values` (per-row or per-column constants) at `entry`, rounded
 * to float32 (a NaN only from a NaN: only a bfloat16 call looks for one, see RowCall.nan).
 */
function writeConstants(c: RowCall, entry: number, values: ReadValues, count: number): void {
  const arrays = c.arrays;
  arrays.set(values.length === count ? values : values.subarray(0, count), entry);
  if (c.dt !== BFLOAT16 || c.nan) return;
  for (let i = entry; i < entry + count; i++) {
    if (arrays[i] !== arrays[i]) {
      c.nan = true;
      return;
    }
  }
}

/** Sets the fused add's alpha (a float32, as CANN's kernels take it). */
function setAlpha(c: RowCall, alpha: number): void {
  c.p[ROW_ALPHA] = Math.fround(alpha);
  c.nan ||= Number.isNaN(alpha);
}

/** Nowhere: the row-norm stages keep their addresses in their parameters. */
const NO_ADDRESS: TensorAddress = { base: 0, strideN: 0, strideC: 0, strideI: 0, innerStrides: [] };

/**
 * Runs every item of row-norm stage `op`: pooled when more than one thread is configured, the
 * call has at least MIN_PARALLEL_ELEMENTS elements and more than one item, the pool is up and
 * the governor chooses it (as for the other kernels: channels/call.ts), and not `alone`; else here.
 */
function run(op: RowNormOp, c: RowCall, anchor: HostData, alone = false): void {
  const n = c.p[ROW_N];
  const rows = c.p[ROW_ROWS];
  const items = itemCount(rows, n);
  const numel = rows * n;
  const threads = alone ? 1 : cpuThreads();
  const pool = threads > 1 && numel >= MIN_PARALLEL_ELEMENTS && items > 1
    ? readyPool(threads - 1)
    : undefined;
  const dt = c.dt;
  // The kernels' code: bfloat16 stores without the NaN lanes' choice when no float constant
  // of the call is NaN (its data's NaNs are widened bfloat16 ones: kernels.wat $bits4).
  c.p[ROW_DT] = constantsCode(dt, c.nan);
  if (!pool) return runRowNormItems(c.k, op, c.p, 0, items, c.region);
  const key = groupKey([op], dt, "rows", numel);
  const start = performance.now();
  const pooled = choosePool(pool, key, start);
  if (pooled) {
    const stage = uniformStage<RowNormStage>({
      op,
      layout: { kind: "rows", N: rows, C: 1, inner: n, innerShape: [], perSample: false },
      dtype: dt,
      items,
      dyAt: NO_ADDRESS,
      xAt: NO_ADDRESS,
      outAt: NO_ADDRESS,
      // A heap array of the call, so that every thread's kernels find the heap.
      x: anchor as unknown as ReadArray,
      constants: c.p,
    });
    try {
      runPooled(pool, [stage], []);
    } catch {
      // A thread without the kernels on the heap (or a failed worker): every item rewrites
      // its rows and zeroes its partials first, so running them all here gives the results.
      runRowNormItems(c.k, op, c.p, 0, items, c.region);
    }
  } else {
    runRowNormItems(c.k, op, c.p, 0, items, c.region);
  }
  governor.record(key, pooled, start, performance.now() - start, numel);
}

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
 * wanted): gradInput when given, the column sums (gradWeight, gradBias) into `sums` when given.
 */
export function layerNormBackwardHeap(
  anchor: HostData,
  data: readonly HeapRows[],
  sums: ColumnTargets | undefined,
  rows: number,
  n: number,
  mean: ReadValues,
  rstd: ReadValues,
  w: ReadValues,
): void {
  const wantInput = data.length > 2;
  const b = backwardCall(data, rows, n, w, mean, rstd, sums !== undefined);
  b.c.p[ROW_FLAGS] = (sums ? 1 : 0) | (wantInput ? 2 : 0);
  run("layerNormBackwardRows", b.c, anchor);
  if (sums) columnSums(b, n, sums);
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

/** AdaLayerNorm's per-batch rows: 1 + scale (formed in float32) and shift, `batches` rows of n. */
export interface AdaRows {
  /** fround(1 + scale), batch-major, n per batch. */
  readonly scale: Float64Array;
  /** shift, batch-major, n per batch. */
  readonly shift: Float64Array;
  /** Number of batch rows. */
  readonly batches: number;
  /** Rows of x per batch row (S). */
  readonly seq: number;
}

/**
 * AdaLayerNorm forward of every row of the heap rows `data` (x, y): LayerNorm with weight `w`
 * and bias `bias`, then times the batch row's 1 + scale and plus its shift (ada_ln_fwd).
 */
export function adaLayerNormHeap(
  anchor: HostData,
  data: readonly HeapRows[],
  rows: number,
  n: number,
  eps: number,
  w: ReadValues,
  bias: ReadValues,
  ada: AdaRows,
): RowStats {
  const c4 = padded(n);
  const per = ada.batches * c4;
  const c = setUp(data, rows, n, eps, 2 * c4 + 2 * per + 2 * rows);
  columns(c, 0, w, n);
  columns(c, c4, bias, n);
  for (let i = 0; i < ada.batches; i++) {
    columns(c, 2 * c4 + i * c4, ada.scale.subarray(i * n), n);
    columns(c, 2 * c4 + per + i * c4, ada.shift.subarray(i * n), n);
  }
  const stats = 2 * c4 + 2 * per;
  [0, c4, 2 * c4, 2 * c4 + per, stats].forEach((entry, i) => array(c, i, entry));
  c.p[ROW_SEQ] = ada.seq;
  run("adaLayerNormRows", c, anchor);
  return {
    mean: c.arrays.subarray(stats, stats + rows),
    rstd: c.arrays.subarray(stats + rows, stats + 2 * rows),
  };
}

/**
 * AdaLayerNormBackward's sums: columns (gradWeight, gradBias) and per batch (gradScale,
 * gradShift), each pair present when it was wanted.
 */
export interface AdaGradSums {
  /** gradWeight: the sum over rows of dy * (1 + scale) * z. */
  readonly weight?: Float64Array;
  /** gradBias: the sum over rows of dy * (1 + scale). */
  readonly bias?: Float64Array;
  /** gradScale: per batch row (batch-major, n each), the sum over S of dy * (z * w + b). */
  readonly scale?: Float64Array;
  /** gradShift: per batch row, the sum over S of dy. */
  readonly shift?: Float64Array;
}

/** Which of AdaLayerNormBackward's sums a call wants (the kernel skips the others). */
export interface AdaGradWanted {
  /** gradWeight or gradBias: the column sums. */
  readonly columns: boolean;
  /** gradScale or gradShift: the per-batch sums. */
  readonly batches: boolean;
}

/**
 * AdaLayerNorm backward of every row of the heap rows `data` (dy, x, and gradInput when it is
 * wanted): gradInput, the column sums merged over the items, and the per-batch sums: each
 * item's slots (the batches its rows touch, from its first row's) added to their batch in
 * item order, in float64 (ada_ln_bwd); only the sums `wanted` asks for.
 */
export function adaLayerNormGradHeap(
  anchor: HostData,
  data: readonly HeapRows[],
  rows: number,
  n: number,
  mean: ReadValues,
  rstd: ReadValues,
  w: ReadValues,
  bias: ReadValues,
  ada: Omit<AdaRows, "shift">,
  wanted: AdaGradWanted,
): AdaGradSums {
  const c4 = padded(n);
  const per = rowsPerItem(rows, n);
  const items = itemCount(rows, n);
  const slots = Math.ceil(per / ada.seq) + 1;
  const sc = 2 * c4;
  const stats = sc + ada.batches * c4;
  const pw = stats + 2 * rows;
  const ps = pw + 2 * items * c4;
  const c = setUp(data, rows, n, NaN, ps + 2 * items * slots * c4);
  columns(c, 0, w, n);
  columns(c, c4, bias, n);
  for (let i = 0; i < ada.batches; i++) columns(c, sc + i * c4, ada.scale.subarray(i * n), n);
  writeConstants(c, stats, mean, rows);
  writeConstants(c, stats + rows, rstd, rows);
  [0, c4, sc, stats, pw].forEach((entry, i) => array(c, i, entry));
  c.p[ROW_FLAGS] = (data.length > 2 ? 1 : 0) | (wanted.columns ? 2 : 0) |
    (wanted.batches ? 4 : 0);
  c.p[ROW_SEQ] = ada.seq;
  c.p[ROW_SLOTS] = slots;
  run("adaLayerNormGradRows", c, anchor);
  const a = c.arrays;
  const batchSums = (at: number): Float64Array => {
    const out = new Float64Array(ada.batches * n);
    for (let item = 0; item < items; item++) {
      const first = item * per;
      const last = Math.min(rows, first + per) - 1;
      const b0 = Math.floor(first / ada.seq);
      for (let b = b0; b <= Math.floor(last / ada.seq); b++) {
        const from = at + (item * slots + b - b0) * c4;
        for (let i = 0; i < n; i++) out[b * n + i] += a[from + i];
      }
    }
    return out;
  };
  return {
    ...(wanted.columns && {
      weight: mergeColumns(c.at + 4 * pw, items, n, c4),
      bias: mergeColumns(c.at + 4 * (pw + items * c4), items, n, c4),
    }),
    ...(wanted.batches && {
      scale: batchSums(ps),
      shift: batchSums(ps + items * slots * c4),
    }),
  };
}
