/**
 * Tensors of the property suite: logical values in a dtype, stored in a random layout on the
 * backend's device. A layout is a storage order (a permutation of the dims: identity,
 * channels-last, transposed, any permutation) and an optional slice (every `step`-th element
 * of a storage dim, after `offset` skipped ones). The gaps of a sliced storage hold NaN, so a
 * kernel that reads outside its view poisons its result, and an output view's gaps must still
 * hold NaN afterwards.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import type { Device } from "../../src/tensor/device.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";

/** How a tensor is laid out in its storage (see the module doc). */
export interface Layout {
  /** Storage dims in order of decreasing stride: a permutation of 0..rank-1. */
  readonly order: readonly number[];
  /** Slice of one storage dim (an index into `order`), or none. */
  readonly slice?: { readonly dim: number; readonly step: number; readonly offset: number };
}

/** The row-major layout. */
export function contiguous(rank: number): Layout {
  return { order: Array.from({ length: rank }, (_, i) => i) };
}

/** NHWC-style: dim 1 innermost. */
export function channelsLastOrder(rank: number): number[] {
  return [0, ...Array.from({ length: rank - 2 }, (_, i) => i + 2), 1];
}

function permutationArb(rank: number): fc.Arbitrary<number[]> {
  const identity = Array.from({ length: rank }, (_, i) => i);
  if (rank < 2) return fc.constant(identity);
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant(identity) },
    { weight: 2, arbitrary: fc.constant(channelsLastOrder(rank)) },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.nat({ max: rank - 1 }), fc.nat({ max: rank - 1 })).map(([a, b]) => {
        const o = [...identity];
        [o[a], o[b]] = [o[b], o[a]];
        return o;
      }),
    },
    { weight: 1, arbitrary: fc.shuffledSubarray(identity, { minLength: rank, maxLength: rank }) },
  );
}

/** Random layouts of a rank-`rank` tensor (row-major most often; it shrinks to row-major). */
export function layoutArb(rank: number): fc.Arbitrary<Layout> {
  return fc.record({
    order: permutationArb(rank),
    slice: fc.option(
      fc.record({
        dim: fc.nat({ max: rank - 1 }),
        step: fc.integer({ min: 1, max: 3 }),
        offset: fc.integer({ min: 0, max: 2 }),
      }),
      { freq: 3, nil: undefined },
    ),
  }, { requiredKeys: ["order"] });
}

/** A tensor placed on a device, with what the property needs to check it. */
export interface Placed {
  /** The logical view on the device. */
  readonly tensor: Tensor;
  /** Its logical values (rounded to its dtype), row-major. */
  readonly values: Float64Array;
  /** The whole storage the view lives in (to check gaps). */
  readonly storage: Tensor;
}

function inverse(order: readonly number[]): number[] {
  const inv = new Array<number>(order.length);
  order.forEach((d, i) => inv[d] = i);
  return inv;
}

/**
 * Places `values` (logical row-major; rounded to `dtype` here) of shape `shape` on `device`
 * in `layout`. Gaps of a sliced storage hold NaN.
 */
export function place(
  values: ArrayLike<number>,
  shape: readonly number[],
  dtype: DType,
  layout: Layout,
  device: Device,
): Placed {
  const logical = Tensor.fromArray(values, shape, dtype);
  const stored = logical.permute(layout.order).contiguous();
  const s = layout.slice;
  if (!s || shape.length === 0) {
    const storage = stored.to(device);
    return {
      tensor: storage.permute(inverse(layout.order)),
      values: logical.toFloat64Array(),
      storage,
    };
  }
  const wide = [...stored.shape];
  wide[s.dim] = stored.shape[s.dim] * s.step + s.offset;
  const gapFill = dtype === "int32" ? -123456 : NaN;
  const host = Tensor.full(wide, gapFill, dtype);
  const end = s.offset + stored.shape[s.dim] * s.step;
  host.slice(s.dim, s.offset, end, s.step).copy_(stored);
  const storage = host.to(device);
  const view = storage.slice(s.dim, s.offset, end, s.step);
  return {
    tensor: view.permute(inverse(layout.order)),
    values: logical.toFloat64Array(),
    storage,
  };
}

/** An output view: `place` of NaN values, for `out`. */
export function placeOutput(
  shape: readonly number[],
  dtype: DType,
  layout: Layout,
  device: Device,
): Placed {
  const n = shape.reduce((a, b) => a * b, 1);
  return place(new Float64Array(n).fill(NaN), shape, dtype, layout, device);
}

/** Asserts that the storage elements outside the view still hold the gap fill (NaN). */
export function assertGapsUntouched(p: Placed, what: string): void {
  const all = p.storage.toFloat64Array();
  if (all.length === p.tensor.numel) return;
  const inside = new Uint8Array(all.length);
  const { shape, strides } = p.tensor;
  const base = p.tensor.offset - p.storage.offset;
  const index = new Array<number>(shape.length).fill(0);
  for (let k = 0; k < p.tensor.numel; k++) {
    let at = base;
    for (let d = 0; d < shape.length; d++) at += index[d] * strides[d];
    inside[at] = 1;
    for (let d = shape.length - 1; d >= 0; d--) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  for (let i = 0; i < all.length; i++) {
    if (!inside[i]) assert.ok(Number.isNaN(all[i]), `${what}: storage gap [${i}] was written`);
  }
}
