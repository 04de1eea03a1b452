/**
 * The row norms on the WebAssembly row kernels in place (wasm_rows.ts): each function takes
 * a call whose data tensors are all heap rows of one dtype, puts its parameters and its
 * per-column and per-row float64 arrays in the heap block, and runs the work items (items.ts:
 * the same items, hence the same column partials merged in the same order, as the TypeScript
 * kernels) as one stage (kernels/row_norm_stage.ts): on the worker pool when the call is
 * large and the pool's governor measures it faster there, else on this thread. Each returns
 * its results, or undefined having written nothing (the caller then runs the TypeScript
 * kernels).
 *
 * @module
 */

import type { Tensor } from "../../../tensor/tensor.ts";
import { hostData } from "../fast/tensor_arrays.ts";
import { MIN_PARALLEL_ELEMENTS } from "../fast/call.ts";
import {
  ROW_ARRAYS,
  ROW_DATA,
  ROW_DT,
  ROW_EPS,
  ROW_FLAGS,
  ROW_N,
  ROW_PARAMS,
  ROW_PER,
  ROW_ROWS,
  type RowNormExports,
  type RowNormOp,
  type RowNormStage,
  runRowNormItems,
} from "../kernels/row_norm_stage.ts";
import { type ReadArray, uniformStage } from "../kernels/stage_types.ts";
import type { TensorAddress } from "../kernels/layout_types.ts";
import { choosePool, readyPool, runPooled } from "../pool/pool.ts";
import { governor, groupKey } from "../pool/governor.ts";
import { cpuThreads } from "../threads.ts";
import { itemCount, mergeColumns, rowsPerItem } from "./items.ts";
import { heapFloat64, type HeapRows, padded, rowNormKernels, sameHeapRows } from "./wasm_rows.ts";

/** A call being set up: its kernels, parameters, the block's address and float64 view. */
interface RowCall {
  readonly k: RowNormExports;
  readonly p: Float64Array;
  readonly at: number;
  readonly view: Float64Array;
}

/**
 * The kernels and a heap block of ROW_PARAMS parameters then `arrays` float64s, with the
 * shape's parameters and the data tensors' rows set; undefined when the kernels cannot run.
 */
function setUp(
  data: readonly (HeapRows | undefined)[],
  rows: number,
  n: number,
  eps: number,
  arrays: number,
): RowCall | undefined {
  const k = rowNormKernels();
  if (!k || !sameHeapRows(data)) return undefined;
  const block = heapFloat64(ROW_PARAMS + arrays);
  if (!block) return undefined;
  const p = block.view.subarray(0, ROW_PARAMS);
  p.fill(0);
  p[ROW_N] = n;
  p[ROW_ROWS] = rows;
  p[ROW_PER] = rowsPerItem(rows, n);
  p[ROW_DT] = data[0]!.dt;
  p[ROW_EPS] = eps;
  data.forEach((d, i) => {
    p[ROW_DATA + 2 * i] = d!.at;
    p[ROW_DATA + 2 * i + 1] = d!.stride;
  });
  const view = block.view.subarray(ROW_PARAMS);
  return { k, p, at: block.at + 8 * ROW_PARAMS, view };
}

/** Sets array parameter `i` to entry `entry` of the call's float64 arrays. */
function array(c: RowCall, i: number, entry: number): void {
  c.p[ROW_ARRAYS + i] = c.at + 8 * entry;
}

/** Nowhere: the row-norm stages keep their addresses in their parameters. */
const NO_ADDRESS: TensorAddress = { base: 0, strideN: 0, strideC: 0, strideI: 0, innerStrides: [] };

/**
 * Runs every item of row-norm stage `op`: pooled when more than one thread is configured, the
 * call has at least MIN_PARALLEL_ELEMENTS elements and more than one item, the pool is up and
 * the governor chooses it (as for the other kernels: fast/call.ts); else here.
 */
function run(op: RowNormOp, c: RowCall, x: Tensor): void {
  const n = c.p[ROW_N];
  const rows = c.p[ROW_ROWS];
  const items = itemCount(rows, n);
  const numel = rows * n;
  const threads = cpuThreads();
  const pool = threads > 1 && numel >= MIN_PARALLEL_ELEMENTS && items > 1
    ? readyPool(threads - 1)
    : undefined;
  if (!pool) return runRowNormItems(c.k, op, c.p, 0, items);
  const dt = c.p[ROW_DT] as 0 | 1 | 2;
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
      // The input, so that every thread's kernels find it in the heap (stages.ts inHeap).
      x: hostData(x) as unknown as ReadArray,
      constants: c.p,
    });
    try {
      runPooled(pool, [stage], []);
    } catch {
      // A thread without the kernels on the heap (or a failed worker): every item rewrites
      // its rows and zeroes its partials first, so running them all here gives the results.
      runRowNormItems(c.k, op, c.p, 0, items);
    }
  } else {
    runRowNormItems(c.k, op, c.p, 0, items);
  }
  governor.record(key, pooled, start, performance.now() - start, numel);
}

/** Float64 arrays a LayerNorm forward gives back: each row's mean and rstd (heap views). */
export interface RowStats {
  /** Each row's mean. */
  readonly mean: Float64Array;
  /** Each row's 1/sqrt(variance + eps). */
  readonly rstd: Float64Array;
}

/**
 * LayerNorm forward of every row of `input`, its heap rows `data` (x, y), or undefined
 * (nothing written).
 */
export function layerNormHeap(
  input: Tensor,
  data: readonly (HeapRows | undefined)[],
  rows: number,
  n: number,
  eps: number,
  w: Float64Array,
  bias: Float64Array,
): RowStats | undefined {
  const c4 = padded(n);
  const c = setUp(data, rows, n, eps, 2 * c4 + 2 * rows);
  if (!c) return undefined;
  c.view.set(w.subarray(0, n), 0);
  c.view.set(bias.subarray(0, n), c4);
  [0, c4, 2 * c4, 2 * c4 + rows].forEach((entry, i) => array(c, i, entry));
  run("layerNormRows", c, input);
  return {
    mean: c.view.subarray(2 * c4, 2 * c4 + rows),
    rstd: c.view.subarray(2 * c4 + rows, 2 * c4 + 2 * rows),
  };
}

/** Column sums a backward call gives back (merged over the items; fresh arrays). */
export interface ColumnSums {
  /** gradWeight: the sum over rows of gradOut * xhat (undefined without the sums). */
  readonly first: Float64Array | undefined;
  /** gradBias: the sum over rows of gradOut (undefined without the sums). */
  readonly second: Float64Array | undefined;
}

/**
 * LayerNorm backward of every row, its heap rows `data` (dy, x, and gradInput when it is
 * wanted): gradInput when given, the column sums (gradWeight, gradBias) when `sums`;
 * undefined (nothing written) when it cannot run.
 */
export function layerNormBackwardHeap(
  input: Tensor,
  data: readonly (HeapRows | undefined)[],
  sums: boolean,
  rows: number,
  n: number,
  mean: Float64Array,
  rstd: Float64Array,
  w: Float64Array,
): ColumnSums | undefined {
  const wantInput = data.length > 2;
  const c4 = padded(n);
  const partials = sums ? itemCount(rows, n) * n : 0;
  const c = setUp(data, rows, n, NaN, c4 + 2 * rows + 2 * partials);
  if (!c) return undefined;
  c.p[ROW_FLAGS] = (sums ? 1 : 0) | (wantInput ? 2 : 0);
  c.view.set(w.subarray(0, n), 0);
  c.view.set(mean.subarray(0, rows), c4);
  c.view.set(rstd.subarray(0, rows), c4 + rows);
  const pw = c4 + 2 * rows;
  const pb = pw + partials;
  [0, c4, c4 + rows, pw, pb].forEach((entry, i) => array(c, i, entry));
  run("layerNormBackwardRows", c, input);
  if (!sums) return { first: undefined, second: undefined };
  const items = itemCount(rows, n);
  return {
    first: mergeColumns(c.view.subarray(pw, pw + partials), items, n),
    second: mergeColumns(c.view.subarray(pb, pb + partials), items, n),
  };
}

/**
 * RMSNorm backward of every row, its heap rows `data` (dy, x, dx): dx, and dgamma (a fresh
 * array); undefined when it cannot.
 */
export function rmsNormGradHeap(
  input: Tensor,
  data: readonly (HeapRows | undefined)[],
  rows: number,
  n: number,
  rstd: Float64Array,
  g: Float64Array,
): Float64Array | undefined {
  const c4 = padded(n);
  const partials = itemCount(rows, n) * n;
  const c = setUp(data, rows, n, NaN, c4 + rows + partials);
  if (!c) return undefined;
  c.view.set(g.subarray(0, n), 0);
  c.view.set(rstd.subarray(0, rows), c4);
  [0, c4, c4 + rows].forEach((entry, i) => array(c, i, entry));
  run("rmsNormGradRows", c, input);
  const pg = c4 + rows;
  return mergeColumns(c.view.subarray(pg, pg + partials), itemCount(rows, n), n);
}

/**
 * The RMSNorm-style forward kernels (gamma, then one rstd per row, after the padded gamma):
 * runs `kernel` over the heap rows `data` (RMSNorm: x, y; AddRmsNorm, which rounds x = x1 + x2
 * and normalizes the stored x item by item: x1, x2, x, y) and returns each row's rstd (a heap
 * view), or undefined (nothing written).
 */
export function rmsForwardHeap(
  kernel: "rmsNormRows" | "addRmsNormRows",
  input: Tensor,
  data: readonly (HeapRows | undefined)[],
  rows: number,
  n: number,
  eps: number,
  g: Float64Array,
): Float64Array | undefined {
  const c4 = padded(n);
  const c = setUp(data, rows, n, eps, c4 + rows);
  if (!c) return undefined;
  c.view.set(g.subarray(0, n), 0);
  array(c, 0, 0);
  array(c, 1, c4);
  run(kernel, c, input);
  return c.view.subarray(c4, c4 + rows);
}
