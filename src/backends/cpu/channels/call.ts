/**
 * One kernel call's execution plan: its layout, whether it runs on the worker pool, and the
 * float64 arrays its stages share (SharedArrayBuffer-backed when pooled, so that the workers
 * see the same memory).
 *
 * @module
 */

import type { Tensor } from "../../../tensor/tensor.ts";
import type { ChosenLayout } from "./layout.ts";
import type { Layout, TensorAddress } from "../kernels/layout_types.ts";
import type { DataCode, Stage } from "../kernels/stage_types.ts";
import { choosePool, readyPool, runInline, runPooled, type WorkerPool } from "../pool/pool.ts";
import { governor, groupKey } from "../pool/governor.ts";
import { cpuThreads, MIN_PARALLEL_ELEMENTS } from "../threads.ts";
import { dataCode, isShared } from "../tensors/tensor_arrays.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";
import { Float64Arena } from "../arena.ts";

/**
 * Bytes of the arena of the calls that run on this thread alone (256 KiB: a channels-last
 * [32,64,56,56] call's partials take 64 KiB; a call that needs more takes slab temporaries).
 */
export const INLINE_ARENA_BYTES = 1 << 18;

/** The temporaries of the calls that run on this thread alone. */
const inlineArena = new Float64Arena(() => new Float64Array(INLINE_ARENA_BYTES / 8));

/** A prepared call. */
export interface Call {
  /** Loop structure and geometry. */
  readonly layout: Layout;
  /** Address of each data tensor, in the order given to {@linkcode prepareCall}. */
  readonly addresses: readonly TensorAddress[];
  /** Element type of the data tensors. */
  readonly dtype: DataCode;
  /** The ready pool it may run on, or undefined to run on the calling thread. */
  readonly pool: WorkerPool | undefined;
  /** Elements of the call (what the pool's governor measures per). */
  readonly numel: number;
}

/**
 * Decides whether a call may run on the pool: when more than one thread is configured, the
 * call has at least {@linkcode MIN_PARALLEL_ELEMENTS} elements, every data tensor lives in a
 * SharedArrayBuffer, and the pool is up (otherwise it starts, and this call runs alone).
 * Whether it does is decided when it runs ({@linkcode execute}).
 */
export function prepareCall(chosen: ChosenLayout, data: readonly Tensor[], numel: number): Call {
  const threads = cpuThreads();
  const pooled = threads > 1 && numel >= MIN_PARALLEL_ELEMENTS && data.every(isShared);
  const pool = pooled ? readyPool(threads - 1) : undefined;
  // One call at a time: the last call's temporaries are dead now.
  (pool?.arena ?? inlineArena).reset();
  return {
    layout: chosen.layout,
    addresses: chosen.addresses,
    dtype: dataCode(data[0].dtype),
    pool,
    numel,
  };
}

/**
 * A zero-filled float64 array the call's threads can all see, valid until the next call: from
 * the pool's arena when it has room (the workers find it from the job words), or from this
 * thread's arena when the call runs here alone (../arena.ts).
 */
export function float64(call: Call, length: number): Float64Array {
  if (!call.pool) return inlineArena.take(length) ?? temporaryFloat64(length);
  return call.pool.arena.take(length) ??
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
 * finished stage i (and before stage i + 1 starts). A call that may use the pool does when
 * the governor's measurements of such calls say the pool is faster (pool/governor.ts), and
 * its time is recorded; or always, under a policy that says so (../policy.ts; pool.ts
 * choosePool). Stages of one item each run on the calling thread: a worker could only take
 * that item from it. The items are the shape's, so the results are the same
 * whichever threads run them.
 */
export function execute(
  call: Call,
  stages: readonly Stage[],
  between: readonly ((() => void) | undefined)[] = [],
): void {
  const pool = call.pool;
  if (pool === undefined || !stages.some((s) => s.items > 1)) {
    runInline(stages, between);
    return;
  }
  const key = groupKey(stages.map((s) => s.op), call.dtype, call.layout.kind, call.numel);
  const start = performance.now();
  const pooled = choosePool(pool, key, start);
  if (pooled) runPooled(pool, stages, between);
  else runInline(stages, between);
  governor.record(key, pooled, start, performance.now() - start, call.numel);
}
