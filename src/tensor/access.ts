/**
 * Reading and writing the elements of a host view as float64 in logical row-major order.
 * The CPU kernels gather their inputs with {@linkcode readView}, compute in float64, and
 * scatter results with {@linkcode writeView}, which rounds to the view's dtype.
 *
 * @module
 */

import { bf16ToNumber, type DType, type HostData, numberToBf16 } from "./dtype.ts";
import { forEachStorageIndex, isContiguousLayout, numel } from "./layout.ts";

/** A host view: storage plus the (shape, strides, offset) that select its elements. */
export interface HostView {
  /** Element type of the storage. */
  readonly dtype: DType;
  /** Logical shape. */
  readonly shape: readonly number[];
  /** Strides in elements. */
  readonly strides: readonly number[];
  /** Offset of the first element, in elements. */
  readonly offset: number;
  /** Host storage. */
  readonly data: HostData;
}

/** Copies the view's elements, in logical row-major order, into a new Float64Array. */
export function readView(view: HostView): Float64Array {
  const n = numel(view.shape);
  const out = new Float64Array(n);
  if (n === 0) return out;
  const { data, offset } = view;
  const bf16 = view.dtype === "bfloat16";
  if (isContiguousLayout(view.shape, view.strides)) {
    if (bf16) { for (let i = 0; i < n; i++) out[i] = bf16ToNumber(data[offset + i]); }
    // Native element conversion: several times faster than a JS loop.
    else out.set(data.subarray(offset, offset + n));
    return out;
  }
  if (bf16) {
    forEachStorageIndex(view.shape, view.strides, offset, (p, i) => {
      out[i] = bf16ToNumber(data[p]);
    });
  } else {
    forEachStorageIndex(view.shape, view.strides, offset, (p, i) => {
      out[i] = data[p];
    });
  }
  return out;
}

/**
 * Writes `values` (logical row-major order) into the view, rounding each to the view's
 * dtype with round-to-nearest-even (the typed arrays do this for float32 and float16).
 */
export function writeView(view: HostView, values: ArrayLike<number>): void {
  const n = numel(view.shape);
  if (values.length !== n) {
    throw new RangeError(`writeView: ${values.length} values for a view of ${n} elements`);
  }
  // An empty view touches no element; its offset may lie past the storage's end.
  if (n === 0) return;
  if (isContiguousLayout(view.shape, view.strides)) {
    writeRun(view, values, 0);
    return;
  }
  const { data, offset } = view;
  const convert = converter(view.dtype);
  if (convert) {
    forEachStorageIndex(view.shape, view.strides, offset, (p, i) => {
      data[p] = convert(values[i]);
    });
  } else {
    forEachStorageIndex(view.shape, view.strides, offset, (p, i) => {
      data[p] = values[i];
    });
  }
}

/** How a number becomes a stored element of `dtype`, where a typed array does not do it. */
function converter(dtype: DType): ((v: number) => number) | undefined {
  if (dtype === "bfloat16") return numberToBf16;
  return dtype === "int32" ? Math.trunc : undefined;
}

/**
 * Writes `values` into elements [start, start + values.length) of a contiguous view, rounding
 * each to the view's dtype as {@linkcode writeView} does.
 */
export function writeRun(view: HostView, values: ArrayLike<number>, start: number): void {
  const { data } = view;
  const at = view.offset + start;
  const convert = converter(view.dtype);
  if (convert) { for (let i = 0; i < values.length; i++) data[at + i] = convert(values[i]); }
  // Native conversion rounds to nearest even, as float32/float16 stores require.
  else data.set(values, at);
}
