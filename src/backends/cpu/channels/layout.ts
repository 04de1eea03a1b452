/**
 * Chooses the loop structure of a call from its data tensors' strides: each tensor is seen
 * as (N, C, inner dims); inner dims are dropped when of size 1 and merged when every tensor
 * has them contiguous among themselves. Then:
 * - `rows` when every tensor's inner elements are one unit-stride run (NCHW, sliced N or C);
 * - `pixels` when every tensor has channel stride 1 and one inner stride (channels-last);
 * - `strided` otherwise (e.g. a sliced W, or tensors whose layouts differ).
 *
 * @module
 */

import type { Tensor } from "../../../tensor/tensor.ts";
import type { Layout, TensorAddress } from "../kernels/layout_types.ts";
import { reshapeStrides } from "../../../tensor/layout.ts";

/** A data tensor seen as (N, C, inner dims): its strides over those dims and its offset. */
export interface ChannelDims {
  /** [strideN, strideC, ...inner strides]. */
  readonly strides: readonly number[];
  /** Element index of (0, 0, ...). */
  readonly base: number;
}

/** A layout and every tensor's address in it (same order as given). */
export interface ChosenLayout {
  /** The loop structure and geometry. */
  readonly layout: Layout;
  /** Address of each tensor. */
  readonly addresses: TensorAddress[];
}

/**
 * The layout of tensors that all have the logical shape [N, C, ...innerShape], given their
 * strides over those dims.
 */
export function chooseLayout(
  N: number,
  C: number,
  innerShape: readonly number[],
  tensors: readonly ChannelDims[],
): ChosenLayout {
  // Merge inner dims where every tensor allows it; drop dims of size 1.
  const sizes: number[] = [];
  const strides: number[][] = tensors.map(() => []);
  for (let d = 0; d < innerShape.length; d++) {
    const size = innerShape[d];
    if (size === 1) continue;
    const last = sizes.length - 1;
    const mergeable = last >= 0 &&
      tensors.every((t, k) => strides[k][last] === size * t.strides[2 + d]);
    if (mergeable) {
      sizes[last] *= size;
      tensors.forEach((t, k) => (strides[k][last] = t.strides[2 + d]));
    } else {
      sizes.push(size);
      tensors.forEach((t, k) => strides[k].push(t.strides[2 + d]));
    }
  }
  const inner = sizes.reduce((a, b) => a * b, 1);
  const address = (t: ChannelDims, k: number): TensorAddress => ({
    base: t.base,
    strideN: N === 1 ? 0 : t.strides[0],
    strideC: C === 1 ? 0 : t.strides[1],
    strideI: sizes.length === 1 ? strides[k][0] : 0,
    innerStrides: strides[k],
  });
  const unitRows = sizes.length === 0 || (sizes.length === 1 && strides.every((s) => s[0] === 1));
  const channelsLast = sizes.length <= 1 && (C === 1 || tensors.every((t) => t.strides[1] === 1));
  let kind: Layout["kind"];
  if (unitRows && sizes.length === 1) kind = "rows";
  else if (channelsLast) kind = "pixels";
  else if (unitRows) kind = "rows";
  else kind = "strided";
  return {
    layout: { kind, N, C, inner, innerShape: sizes, perSample: false },
    addresses: tensors.map(address),
  };
}

/** A BatchNorm data tensor (rank >= 2, channel = dim 1) as (N, C, inner dims). */
export function batchNormDims(t: Tensor): ChannelDims {
  return { strides: t.strides, base: t.offset };
}

/**
 * A GroupNorm data tensor as (N, C, inner dims): its own dims when its shape starts with
 * [N, C] and has HxW elements after them, else a strided view [N, C, HxW] of it when its
 * layout allows one (undefined otherwise).
 */
export function groupNormDims(
  t: Tensor,
  N: number,
  C: number,
  HxW: number,
): { dims: ChannelDims; innerShape: readonly number[] } | undefined {
  const shape = t.shape;
  if (shape.length >= 2 && shape[0] === N && shape[1] === C) {
    return { dims: { strides: t.strides, base: t.offset }, innerShape: shape.slice(2) };
  }
  return flatGroupNormDims(t, N, C, HxW);
}

/** A GroupNorm data tensor as a strided view [N, C, HxW], when its layout allows one. */
export function flatGroupNormDims(
  t: Tensor,
  N: number,
  C: number,
  HxW: number,
): { dims: ChannelDims; innerShape: readonly number[] } | undefined {
  const strides = reshapeStrides(t.shape, t.strides, [N, C, HxW]);
  if (!strides) return undefined;
  return { dims: { strides, base: t.offset }, innerShape: [HxW] };
}
