/**
 * The WebAssembly row kernels of LayerNorm and RMSNorm (src/backends/cpu/wasm/row_norms.wat and
 * row_norms_grad.wat, part of the kernels' module) run in place on tensors in the host heap
 * (src/tensor/host_heap.ts): rows of unit stride whose bases are `offset + r * rowStride`,
 * every data tensor of the call in the heap and of one dtype. Their per-column and per-row
 * float64 arrays (weights, biases, gamma, mean, rstd, column partials) live in a block of the
 * heap that this module keeps (grown on demand), so that every thread can reach them by
 * address. They give the bits of the TypeScript row loops (row_loops.ts): same formulas,
 * same association of sums (sums.ts).
 *
 * They run on the calling thread's one instance of the kernels (pool.ts callerKernels); calls
 * fall back to the TypeScript kernels (heap_rows.ts returns undefined) when there is none: no
 * WebAssembly SIMD, no heap, WebAssembly kernels turned off (the CPU policy, ../policy.ts), or
 * no room in the heap.
 *
 * @module
 */

import type { Tensor } from "../../../tensor/tensor.ts";
import { heapAddress, heapAllocate, heapFree } from "../../../tensor/host_heap.ts";
import { hostData } from "../fast/tensor_arrays.ts";
import { callerKernels } from "../pool/pool.ts";
import type { RowAccess } from "./access.ts";
import type { RowNormExports } from "../kernels/row_norm_stage.ts";

/**
 * The row kernels of the calling thread's one instance of the kernels on the heap (the one
 * its other stages run), or null when they cannot run.
 */
export function rowNormKernels(): RowNormExports | null {
  const kernels = callerKernels();
  return kernels === null ? null : kernels.exports as unknown as RowNormExports;
}

/** Rows of one tensor in the heap: byte address of row 0, bytes between rows, dtype code. */
export interface HeapRows {
  /** Heap byte address of row 0's first element. */
  readonly at: number;
  /** Bytes between consecutive rows. */
  readonly stride: number;
  /** Dtype code: 0 float32, 1 float16, 2 bfloat16. */
  readonly dt: number;
}

/**
 * The heap rows of `t` seen through `a` (its row access), or undefined when `t` is not in
 * the heap or its rows are not at unit stride with one row stride.
 */
export function heapRows(t: Tensor | undefined, a: RowAccess | undefined): HeapRows | undefined {
  if (!t || !a || a.step !== 1 || a.rowStride < 0) return undefined;
  const base = heapAddress(hostData(t));
  if (base < 0) return undefined;
  const bytes = a.code === 0 ? 4 : 2;
  return { at: base + a.offset * bytes, stride: a.rowStride * bytes, dt: a.code };
}

/** Whether every present entry of `rows` is defined and of one dtype. */
export function sameHeapRows(rows: readonly (HeapRows | undefined)[]): rows is HeapRows[] {
  const dt = rows[0]?.dt;
  return rows.every((r) => r !== undefined && r.dt === dt);
}

/** The holder of this thread's float64 block in the heap, its buffer, address and size. */
let holder: object | undefined;
let holderBuffer: SharedArrayBuffer | undefined;
let holderAt = 0;
let holderLength = 0;

/**
 * A float64 block of at least `length` entries in the heap (contents undefined), reused by
 * every call on this thread: its byte address and a view of it (over the buffer the heap
 * gave with it, which the pool's job words can describe). Undefined when the heap cannot
 * hold it.
 */
export function heapFloat64(length: number): { at: number; view: Float64Array } | undefined {
  if (length > holderLength || !holderBuffer) {
    if (holder) heapFree(holder);
    holder = undefined;
    holderBuffer = undefined;
    holderLength = 0;
    const want = Math.max(length, 4096);
    const block = heapAllocate(want * 8, false);
    if (!block) return undefined;
    holder = {};
    block.adopt(holder);
    holderBuffer = block.buffer;
    holderAt = block.at;
    holderLength = want;
  }
  return { at: holderAt, view: new Float64Array(holderBuffer, holderAt, length) };
}

/** `n` rounded up to a multiple of 4 (the kernels read per-column arrays in vectors of 4). */
export function padded(n: number): number {
  return (n + 3) & ~3;
}
