/**
 * The two common cases of a channel-family call, decided without the general search: every
 * data tensor a dense [N, C, ...] view in the host heap, of one dtype and one shape, with more
 * than one element per (n, c), and an output that is exactly an input's memory or none of it;
 * all of them row-major (NCHW) or all channels-last (C the innermost dim). For such calls
 * `streamable` (aliasing.ts) holds and `chooseLayout` (layout.ts) merges the inner dims into
 * one: `rows` for row-major, `pixels` for channels-last. This gives the same layout and
 * addresses in a few comparisons, which a small call's time notices (batchNormElemt
 * [4,16,8,8]: a quarter of its JavaScript went to the general checks).
 * tests/cpu/dense_layout.test.ts compares the two on many geometries.
 *
 * @module
 */

import { dtypeByteSize } from "../../../tensor/dtype.ts";
import { heapAddress } from "../../../tensor/host_heap.ts";
import type { Tensor } from "../../../tensor/tensor.ts";
import type { TensorAddress } from "../kernels/layout_types.ts";
import { MAX_STORAGE_ELEMENTS } from "./aliasing.ts";
import type { ChosenLayout } from "./layout.ts";
import { channelsLastStrides, contiguousStrides, numel, sameDims } from "../../../tensor/layout.ts";
import { MAX_PIXEL_CHANNELS } from "../kernels/channel_stages.ts";
import { hostData } from "../tensors/tensor_arrays.ts";

/** A dense layout of [N, C, ...]: row-major (NCHW) or channels-last. */
export type DenseOrder = "rows" | "pixels";

/** Whether `t` has `strides` over its dims of more than one element. */
function hasStrides(t: Tensor, strides: readonly number[]): boolean {
  for (let i = 0; i < strides.length; i++) {
    if (t.shape[i] !== 1 && t.strides[i] !== strides[i]) return false;
  }
  return true;
}

/**
 * The layout of `data` ([N, C, ...] tensors of one shape, the output last when `hasOutput`)
 * when every one is dense in `order` in the heap with `inner` > 1 elements per (n, c), one
 * dtype and an output that overlaps no input other than element for element (and, for
 * `pixels`, a channel count the pixel kernels take: kernels/channel_stages.ts
 * channelLayoutFits); undefined otherwise (the general path decides those calls).
 */
export function denseLayout(
  N: number,
  C: number,
  inner: number,
  data: readonly Tensor[],
  hasOutput: boolean,
  order: DenseOrder,
): ChosenLayout | undefined {
  if (inner <= 1 || data.length === 0) return undefined;
  if (order === "pixels" && (C === 1 || C % 4 !== 0 || C > MAX_PIXEL_CHANNELS)) return undefined;
  const { dtype, shape } = data[0];
  if (shape.length < 2 || shape[0] !== N || shape[1] !== C || numel(shape) !== N * C * inner) {
    return undefined;
  }
  const strides = order === "rows" ? contiguousStrides(shape) : channelsLastStrides(shape);
  const starts: number[] = [];
  for (const t of data) {
    if (t.dtype !== dtype || !sameDims(t.shape, shape) || !hasStrides(t, strides)) {
      return undefined;
    }
    const storage = hostData(t);
    const at = heapAddress(storage);
    if (at < 0 || storage.length > MAX_STORAGE_ELEMENTS) return undefined;
    starts.push(at + t.offset * dtypeByteSize(dtype));
  }
  if (hasOutput) {
    // One heap, one dense span each: the output is an input's elements (same start, same
    // shape and strides) or must not meet it.
    const bytes = N * C * inner * dtypeByteSize(dtype);
    const o = starts[starts.length - 1];
    for (let k = 0; k < starts.length - 1; k++) {
      const s = starts[k];
      if (s !== o && s < o + bytes && o < s + bytes) return undefined;
    }
  }
  const rows = order === "rows";
  const strideN = N === 1 ? 0 : C * inner;
  const strideC = C === 1 ? 0 : rows ? inner : 1;
  const strideI = rows ? 1 : C;
  const addresses: TensorAddress[] = data.map((t) => ({
    base: t.offset,
    strideN,
    strideC,
    strideI,
    innerStrides: [strideI],
  }));
  return {
    layout: { kind: order, N, C, inner, innerShape: [inner], perSample: false },
    addresses,
  };
}
