/**
 * What the WebAssembly row kernels (src/backends/cpu/wasm/row_norms*.wat, part of the kernels'
 * module) need besides their rows: the calling
 * thread's one instance of the kernels on the host heap (pool.ts callerKernels), and a block
 * of the heap for the call's parameters (float64) and its per-column and per-row float32
 * arrays (weights, biases, gamma, mean, rstd, column partials), so that every thread reaches
 * them by address.
 *
 * @module
 */

import { CACHE_LINE_BYTES, heapFree, heapScratch } from "../../../tensor/host_heap.ts";
import { hostAllocationError } from "../../../tensor/host_errors.ts";
import { callerKernels } from "../pool/pool.ts";
import type { WasmKernels } from "../kernels/wasm_instance.ts";

/**
 * The calling thread's one instance of the kernels on the heap (the one its other stages run)
 * and its region of the heap (the fused add's scratch row). Every engine Deno runs on has WebAssembly SIMD and shared memories;
 * without them the row norms cannot run, and say so.
 */
export function rowNormKernels(): WasmKernels {
  const kernels = callerKernels();
  if (kernels === null) {
    throw new Error(
      "CPU backend: the row norms need WebAssembly SIMD and a shared WebAssembly memory, " +
        "which this engine does not provide",
    );
  }
  return kernels;
}

/** The holder of this thread's block in the heap, its buffer, address and size in bytes. */
let holder: object | undefined;
let holderBuffer: SharedArrayBuffer | undefined;
let holderAt = 0;
let holderBytes = 0;

/** A call's block: `params` float64 parameters, then float32 arrays. */
export interface RowBlock {
  /** The parameters. */
  readonly params: Float64Array;
  /** The float32 arrays after them. */
  readonly arrays: Float32Array;
  /** Byte address of `arrays[0]`. */
  readonly arraysAt: number;
}

/**
 * Where a call's float32 arrays start in its block: past the parameters, on a cache line
 * ({@linkcode CACHE_LINE_BYTES}). The kernels read and write the per-column arrays (weights,
 * column partials) a vector at a time and each work item writes its own partials and per-row
 * statistics: after the 25 parameters
 * (200 bytes) the arrays sat 8 bytes past a line, so that a quarter of those vectors straddled
 * two lines and neighbouring items' partials shared a line that both threads wrote row after
 * row (layerNormBackward [64,1024] float32 on the pool, 4 items: bench/RESULTS.md, twelfth
 * session).
 */
const ARRAYS_ALIGN = CACHE_LINE_BYTES;

/**
 * A block of `params` float64s then `floats` float32s in the heap (contents undefined), the
 * float32s from the next {@linkcode ARRAYS_ALIGN}-byte boundary, reused by every call on this
 * thread and grown on demand (past the heap's maximum if need be: it is scratch). The
 * parameters' view is over the buffer the heap gave with it, which the pool's job words can
 * describe.
 */
export function rowBlock(params: number, floats: number): RowBlock {
  const arraysOffset = Math.ceil((params * 8) / ARRAYS_ALIGN) * ARRAYS_ALIGN;
  const bytes = arraysOffset + floats * 4;
  if (bytes > holderBytes || !holderBuffer) {
    if (holder) heapFree(holder);
    holder = undefined;
    holderBuffer = undefined;
    holderBytes = 0;
    const want = Math.max(bytes, 32768);
    const block = heapScratch(want);
    if (!block) throw hostAllocationError("row norm parameters", [floats], "float32", want);
    holder = {};
    block.adopt(holder);
    holderBuffer = block.buffer;
    holderAt = block.at;
    holderBytes = want;
  }
  const arraysAt = holderAt + arraysOffset;
  return {
    params: new Float64Array(holderBuffer, holderAt, params),
    arrays: new Float32Array(holderBuffer, arraysAt, floats),
    arraysAt,
  };
}

/** `n` rounded up to a multiple of 4 (the kernels read per-column arrays in vectors of 4). */
export function padded(n: number): number {
  return (n + 3) & ~3;
}
