/**
 * One row-norm call on the WebAssembly row kernels (wasm_rows.ts), as heap_rows.ts and
 * heap_rows_ada.ts set it up: the kernels, the heap block of its parameters and its per-column
 * and per-row float32 arrays, and the run of its work items (items.ts) as one stage
 * (kernels/row_norm_stage.ts): on the worker pool when the call is large and the pool's governor
 * measures it faster there, else on this thread.
 *
 * @module
 */

import type { HostData } from "../../../tensor/dtype.ts";
import type { ReadValues } from "../tensors/channel_values.ts";
import { MIN_PARALLEL_ELEMENTS } from "../threads.ts";
import {
  ROW_ALPHA,
  ROW_ARRAYS,
  ROW_DATA,
  ROW_DT,
  ROW_EPS,
  ROW_N,
  ROW_PARAMS,
  ROW_PER,
  ROW_ROWS,
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
import { choosePool, readyPool, runPooled } from "../pool/pool.ts";
import { governor, groupKey } from "../pool/governor.ts";
import { cpuThreads } from "../threads.ts";
import { itemCount, rowsPerItem } from "./items.ts";
import type { HeapRows } from "./row_staging.ts";
import { padded, rowBlock, rowNormKernels } from "./wasm_rows.ts";

/** A call being set up: its kernels, parameters, float32 arrays and their byte address. */
export interface RowCall {
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
export function setUp(
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
export function array(c: RowCall, i: number, entry: number): void {
  c.p[ROW_ARRAYS + i] = c.at + 4 * entry;
}

/** Writes n per-column values at `entry` and zeroes their padding to a whole vector. */
export function columns(c: RowCall, entry: number, values: ReadValues, n: number): void {
  writeConstants(c, entry, values, n);
  c.arrays.fill(0, entry + n, entry + padded(n));
}

/**
 * Writes the first `count` of `values` (per-row or per-column constants) at `entry`, rounded
 * to float32 (a NaN only from a NaN: only a bfloat16 call looks for one, see RowCall.nan).
 */
export function writeConstants(c: RowCall, entry: number, values: ReadValues, count: number): void {
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
export function setAlpha(c: RowCall, alpha: number): void {
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
export function run(op: RowNormOp, c: RowCall, anchor: HostData, alone = false): void {
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
