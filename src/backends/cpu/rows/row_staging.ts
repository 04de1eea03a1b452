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
import type { Tensor } from "../../../tensor/tensor.ts";
import { heapAddress, heapFree } from "../../../tensor/host_heap.ts";
import { heapScratchTensor, stageInto, stageOut } from "../heap_scratch.ts";
import { dataCode, hostData } from "../tensors/tensor_arrays.ts";

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
 * The single stride that walks dims `from` to `to` (exclusive) of (shape, strides) in row-major
 * order, size-1 dims ignored, or undefined when it takes more than one (1 for no dims).
 */
function collapsedStride(
  shape: readonly number[],
  strides: readonly number[],
  from: number,
  to: number,
): number | undefined {
  let stride: number | undefined;
  let extent = 0;
  for (let i = to - 1; i >= from; i--) {
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
  const { shape, strides } = t;
  if (collapsedStride(shape, strides, axis, shape.length) !== 1) return undefined;
  const rowStride = collapsedStride(shape, strides, 0, axis);
  if (rowStride === undefined) return undefined;
  const bytes = dtype === "float32" ? 4 : 2;
  return { at: base + t.offset * bytes, stride: rowStride * bytes, dt: dataCode(dtype) };
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
      held = heapScratchTensor(t.shape, this.#dtype, "row norm scratch");
      this.#scratch.push(held);
      if (output) this.#copyBack.push([t, held]);
      else stageInto(held, t);
      rows = heapRowsOf(held, this.#axis, this.#dtype)!;
    }
    this.anchor ??= hostData(held);
    this.rows.push(rows);
    return rows;
  }

  /** Copies each staged output into its tensor (rounded once to the tensor's dtype). */
  finish(): void {
    for (const [target, scratch] of this.#copyBack) stageOut(target, scratch);
  }

  /** Frees the scratch blocks (idempotent). */
  release(): void {
    for (const t of this.#scratch) heapFree(hostData(t));
    this.#scratch.length = 0;
  }
}

/**
 * Runs `run` on the heap rows of `inputs` then `outputs` (split at `axis`, in `dtype`), staged
 * where needed; copies the staged outputs back when it returns and frees the scratch in any
 * case.
 */
export function withHeapRows<R>(
  axis: number,
  dtype: DType,
  inputs: readonly Tensor[],
  outputs: readonly Tensor[],
  run: (anchor: HostData, rows: readonly HeapRows[]) => R,
): R {
  const staging = new RowStaging(axis, dtype);
  try {
    for (const t of inputs) staging.input(t);
    for (const t of outputs) staging.output(t);
    const result = run(staging.anchor!, staging.rows);
    staging.finish();
    return result;
  } finally {
    staging.release();
  }
}
