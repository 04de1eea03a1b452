/**
 * The rows of a row-norm call as the WebAssembly row kernels take them: rows at unit stride in
 * the host heap, one row stride per tensor, every tensor in the kernel's dtype. A tensor that
 * already is such rows is used in place; any other (outside the heap, strided, or of another
 * dtype than the call's, e.g. a float32 output of float16 data) gets a contiguous scratch copy in
 * the heap ({@linkcode RowStaging}): an input is copied in first, an output is computed there
 * and copied into the caller's tensor afterwards (widening or rounding once to its dtype). So
 * every call runs the same kernels, wherever its tensors live.
 *
 * @module
 */

import type { DType, HostData } from "../../../tensor/dtype.ts";
import { Tensor } from "../../../tensor/tensor.ts";
import { heapAddress, heapFree, heapScratch } from "../../../tensor/host_heap.ts";
import { dataCode, hostData } from "../fast/tensor_arrays.ts";
import { hostAllocationError } from "../../../tensor/host_errors.ts";

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
 * The single stride that walks (shape, strides) in row-major order, size-1 dims ignored, or
 * undefined when it takes more than one (1 for no dims).
 */
function collapsedStride(shape: readonly number[], strides: readonly number[]): number | undefined {
  let stride: number | undefined;
  let extent = 0;
  for (let i = shape.length - 1; i >= 0; i--) {
    if (shape[i] === 1) continue;
    if (stride === undefined) {
      stride = strides[i];
      extent = shape[i];
    } else if (strides[i] === stride * extent) {
      extent *= shape[i];
    } else {
      return undefined;
    }
  }
  return stride ?? 1;
}

/**
 * `t` split at `axis` (rows = the dims before it) as heap rows of `dtype`, or undefined when it
 * is not: another dtype, not in the heap, elements of a row not at unit stride, or rows not one
 * stride apart.
 */
export function heapRowsOf(t: Tensor, axis: number, dtype: DType): HeapRows | undefined {
  if (t.dtype !== dtype) return undefined;
  const base = heapAddress(hostData(t));
  if (base < 0) return undefined;
  if (collapsedStride(t.shape.slice(axis), t.strides.slice(axis)) !== 1) return undefined;
  const rowStride = collapsedStride(t.shape.slice(0, axis), t.strides.slice(0, axis));
  if (rowStride === undefined) return undefined;
  const bytes = dtype === "float32" ? 4 : 2;
  return { at: base + t.offset * bytes, stride: rowStride * bytes, dt: dataCode(dtype) };
}

/** A contiguous tensor of `shape` in `dtype` on a scratch block of the heap. */
function scratchTensor(shape: readonly number[], dtype: DType): Tensor {
  const length = shape.reduce((a, b) => a * b, 1);
  const bytes = length * (dtype === "float32" ? 4 : 2);
  const block = heapScratch(bytes);
  if (!block) throw hostAllocationError("row norm scratch", shape, dtype, bytes);
  const { buffer, at } = block;
  const data: HostData = dtype === "float32"
    ? new Float32Array(buffer, at, length)
    : dtype === "float16"
    ? new Float16Array(buffer, at, length)
    : new Uint16Array(buffer, at, length);
  block.adopt(data);
  return Tensor.fromData(data, shape);
}

/** The raw elements of a host array: float32 as itself, 16-bit types as their bits. */
function rawOf(data: HostData): Float32Array | Uint16Array {
  if (data instanceof Float32Array || data instanceof Uint16Array) return data;
  return new Uint16Array(data.buffer, data.byteOffset, data.length);
}

/**
 * Copies the elements of `src` (any strides) into or out of the contiguous `dense` array
 * (`gather`: src -> dense; else dense -> src), raw, in row-major order: the innermost dim's
 * runs through `set` when they are contiguous.
 */
function copyDense(src: Tensor, dense: Float32Array | Uint16Array, gather: boolean): void {
  const raw = rawOf(hostData(src));
  const { shape, strides } = src;
  const rank = shape.length;
  const n = src.numel;
  if (n === 0) return;
  const inner = rank === 0 ? 1 : shape[rank - 1];
  const step = rank === 0 ? 1 : strides[rank - 1];
  const index = new Array<number>(Math.max(rank - 1, 0)).fill(0);
  let base = src.offset;
  for (let done = 0; done < n; done += inner) {
    if (step === 1) {
      if (gather) dense.set(raw.subarray(base, base + inner), done);
      else raw.set(dense.subarray(done, done + inner), base);
    } else if (gather) {
      for (let i = 0; i < inner; i++) dense[done + i] = raw[base + i * step];
    } else {
      for (let i = 0; i < inner; i++) raw[base + i * step] = dense[done + i];
    }
    for (let d = rank - 2; d >= 0; d--) {
      base += strides[d];
      if (++index[d] < shape[d]) break;
      base -= strides[d] * shape[d];
      index[d] = 0;
    }
  }
}

/**
 * The data tensors of one row-norm call as heap rows of the call's dtype, staged where needed
 * (module doc). Add the inputs and outputs, run the kernels on {@linkcode RowStaging.rows},
 * then {@linkcode RowStaging.finish} (copies the outputs back) and, in any case,
 * {@linkcode RowStaging.release} (frees the scratch blocks).
 */
export class RowStaging {
  /** The heap rows of each tensor added, in order. */
  readonly rows: HeapRows[] = [];
  /** A heap array of the call (for the pool's stage: every thread then finds the heap). */
  anchor: HostData | undefined;
  readonly #axis: number;
  readonly #dtype: DType;
  readonly #scratch: Tensor[] = [];
  readonly #copyBack: [target: Tensor, scratch: Tensor][] = [];

  /** Rows split at `axis`, in `dtype` (the kernels' dtype: the call's data dtype). */
  constructor(axis: number, dtype: DType) {
    this.#axis = axis;
    this.#dtype = dtype;
  }

  /** Adds input `t` (of the call's dtype): its rows, or a scratch copy's. */
  input(t: Tensor): HeapRows {
    return this.#add(t, false);
  }

  /** Adds output `t`: its rows, or a scratch tensor's that {@linkcode finish} copies into it. */
  output(t: Tensor): HeapRows {
    return this.#add(t, true);
  }

  #add(t: Tensor, output: boolean): HeapRows {
    let rows = heapRowsOf(t, this.#axis, this.#dtype);
    let held = t;
    if (!rows) {
      held = scratchTensor(t.shape, this.#dtype);
      this.#scratch.push(held);
      if (output) this.#copyBack.push([t, held]);
      else if (t.dtype === this.#dtype) copyDense(t, rawOf(hostData(held)), true);
      else held.copy_(t);
      rows = heapRowsOf(held, this.#axis, this.#dtype)!;
    }
    this.anchor ??= hostData(held);
    this.rows.push(rows);
    return rows;
  }

  /** Copies each staged output into its tensor (rounded once to the tensor's dtype). */
  finish(): void {
    for (const [target, scratch] of this.#copyBack) {
      if (target.dtype === this.#dtype) copyDense(target, rawOf(hostData(scratch)), false);
      else target.copy_(scratch);
    }
  }

  /** Frees the scratch blocks (idempotent). */
  release(): void {
    for (const t of this.#scratch) heapFree(hostData(t));
    this.#scratch.length = 0;
  }
}
