/**
 * The common case of a channel-family call, decided without the general search: every data
 * tensor a row-major [N, C, ...] view in the host heap, of one dtype, with more than one
 * element per (n, c), and an output that is exactly an input's memory or none of it. For such
 * calls `streamable` (aliasing.ts) holds and `chooseLayout` (layout.ts) picks `rows` with one
 * merged inner dim; this gives the same layout and addresses in a few comparisons, which a
 * small call's time notices (batchNormElemt [4,16,8,8]: a quarter of its JavaScript went to the
 * general checks). tests/cpu/contiguous_call.test.ts compares the two on many geometries.
 *
 * @module
 */

import { dtypeByteSize } from "../../../tensor/dtype.ts";
import { heapAddress } from "../../../tensor/host_heap.ts";
import type { Tensor } from "../../../tensor/tensor.ts";
import type { TensorAddress } from "../kernels/layout_types.ts";
import { MAX_STORAGE_ELEMENTS } from "./aliasing.ts";
import type { ChosenLayout } from "./layout.ts";
import { hostData } from "../tensors/tensor_arrays.ts";

/** Whether two shapes are equal. */
function sameShape(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Whether `t` is a row-major [N, C, ...] view of N * C * inner elements. */
function rowMajor(t: Tensor, N: number, C: number, inner: number): boolean {
  const shape = t.shape;
  if (shape.length < 2 || shape[0] !== N || shape[1] !== C) return false;
  let expected = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    const d = shape[i];
    if (d !== 1 && t.strides[i] !== expected) return false;
    expected *= d;
  }
  return expected === N * C * inner;
}

/**
 * The `rows` layout of `data` ([N, C, ...] tensors of one shape, the output last when
 * `hasOutput`) when every one is row-major in the heap with `inner` > 1 elements per (n, c), one dtype and an
 * output that overlaps no input other than element for element; undefined otherwise (the
 * general path decides those calls).
 */
export function contiguousRows(
  N: number,
  C: number,
  inner: number,
  data: readonly Tensor[],
  hasOutput: boolean,
): ChosenLayout | undefined {
  if (inner <= 1 || data.length === 0) return undefined;
  const { dtype, shape } = data[0];
  const starts: number[] = [];
  for (const t of data) {
    if (t.dtype !== dtype || !sameShape(t.shape, shape) || !rowMajor(t, N, C, inner)) {
      return undefined;
    }
    const storage = hostData(t);
    const at = heapAddress(storage);
    if (at < 0 || storage.length > MAX_STORAGE_ELEMENTS) return undefined;
    starts.push(at + t.offset * dtypeByteSize(dtype));
  }
  if (hasOutput) {
    // One heap, one shape: the output is an input's elements (same start) or must not meet it.
    const bytes = N * C * inner * dtypeByteSize(dtype);
    const o = starts[starts.length - 1];
    for (let k = 0; k < starts.length - 1; k++) {
      const s = starts[k];
      if (s !== o && s < o + bytes && o < s + bytes) return undefined;
    }
  }
  const strideN = N === 1 ? 0 : C * inner;
  const strideC = C === 1 ? 0 : inner;
  const addresses: TensorAddress[] = data.map((t) => ({
    base: t.offset,
    strideN,
    strideC,
    strideI: 1,
    innerStrides: [1],
  }));
  return {
    layout: { kind: "rows", N, C, inner, innerShape: [inner], perSample: false },
    addresses,
  };
}
