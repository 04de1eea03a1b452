/**
 * One kernel call's execution plan: its layout, whether it runs on the worker pool, and the
 * float64 arrays its stages share (SharedArrayBuffer-backed when pooled, so that the workers
 * see the same memory).
 *
 * @module
 */

import type { Tensor } from "../../../tensor/tensor.ts";
import type { ChosenLayout } from "./layout.ts";
import type { Layout, TensorAddress } from "./kernels/layout_types.ts";
import type { DataCode, Stage } from "./kernels/stage_types.ts";
import { readyPool, runInline, runPooled, type WorkerPool } from "../pool/pool.ts";
import { cpuThreads } from "../threads.ts";
import { dataCode, isShared } from "./tensor_arrays.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";

/**
 * Calls with fewer elements stay on the calling thread. Measured on 2 vCPUs (AMD EPYC,
 * Deno 2.9.6, float32 [n, 16, 32, 32], medians of 30): a pooled job costs 20-40 us more than
 * an inline run at the median and up to 300-500 us at the 90th percentile (waking a worker
 * through its event loop); batchNormBackward took 0.22 ms alone vs 0.55 ms pooled at 64K
 * elements, 0.37 vs 0.36 ms at 128K, 0.71 vs 0.60 ms at 256K and 1.43 vs 0.89 ms at 512K;
 * batchNormReduceBackward broke even at 128K-256K. So the pool starts at 256K elements.
 * Re-measured with claimed items (pool/sync.ts) and the kernels in place (float32
 * [n, 32, 32, 32] contiguous, threshold lowered for the test, 1 vs 2 threads, medians): at
 * 64K batchNormBackward 92-137 vs 106-171 us and batchNormReduceBackward 60 vs 97 us (alone
 * wins), at 128K even (166-170 vs 157-161, 105 vs 118), at 256K 324-333 vs 267-276 and
 * 194-198 vs 117-152 (the pool wins): the threshold stays.
 * Re-measured once jobs went through shared memory (pool/serve.ts; threshold lowered for the
 * test, 1 vs 2 threads, medians): at 16K elements even (float32 [1,16,32,32]: 1.0-1.3x
 * either way), at 32K mostly a small gain but channels-last batchNormBackward 48 vs 90 us,
 * at 64K the pool wins everywhere (float32 [4,16,32,32] batchNormBackward 74 vs 50 us,
 * channels-last 165 vs 98, bfloat16 121 vs 71, groupNorm channels-last 71 vs 41) but
 * channels-last float32 groupNormBackward (82 vs 92 us: 4 items, one per sample). So the
 * pool now starts at 64K elements.
 */
export const MIN_PARALLEL_ELEMENTS = 1 << 16;

/** A prepared call. */
export interface Call {
  /** Loop structure and geometry. */
  readonly layout: Layout;
  /** Address of each data tensor, in the order given to {@linkcode prepareCall}. */
  readonly addresses: readonly TensorAddress[];
  /** Element type of the data tensors. */
  readonly dtype: DataCode;
  /** The ready pool to run on, or undefined to run on the calling thread. */
  readonly pool: WorkerPool | undefined;
}

/**
 * Decides where a call runs: on the pool when more than one thread is configured, the call
 * has at least {@linkcode MIN_PARALLEL_ELEMENTS} elements, every data tensor lives in a
 * SharedArrayBuffer, and the pool is up (otherwise it starts, and this call runs alone).
 */
export function prepareCall(chosen: ChosenLayout, data: readonly Tensor[], numel: number): Call {
  const threads = cpuThreads();
  const pooled = threads > 1 && numel >= MIN_PARALLEL_ELEMENTS && data.every(isShared);
  const pool = pooled ? readyPool(threads - 1) : undefined;
  // One call at a time: the last pooled call's temporaries are dead now.
  pool?.resetArena();
  return {
    layout: chosen.layout,
    addresses: chosen.addresses,
    dtype: dataCode(data[0].dtype),
    pool,
  };
}

/**
 * A zero-filled float64 array the call's threads can all see: from the pool's arena when
 * it has room (the workers find it from the job words), valid until the next call.
 */
export function float64(call: Call, length: number): Float64Array {
  if (!call.pool) return temporaryFloat64(length);
  return call.pool.arenaFloat64(length) ??
    new Float64Array(new SharedArrayBuffer(length * Float64Array.BYTES_PER_ELEMENT));
}

/** `values`, copied into shared memory when the call is pooled. */
export function visible(call: Call, values: Float64Array): Float64Array {
  if (!call.pool) return values;
  const copy = float64(call, values.length);
  copy.set(values);
  return copy;
}

/**
 * Runs the stages in order; `between[i]` runs on the calling thread once every thread has
 * finished stage i (and before stage i + 1 starts). Stages of one item each run on the
 * calling thread even when the call is pooled: a worker could only take that item from it
 * (the items are the shape's, so the results are the same either way).
 */
export function execute(
  call: Call,
  stages: readonly Stage[],
  between: readonly ((() => void) | undefined)[] = [],
): void {
  if (call.pool && stages.some((s) => s.items > 1)) runPooled(call.pool, stages, between);
  else runInline(stages, between);
}
