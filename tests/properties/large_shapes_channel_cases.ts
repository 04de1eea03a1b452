/**
 * The channel operators' cases for the large-shape suite (large_shapes_batch_norm.test.ts,
 * large_shapes_group_norm.test.ts): [N, C, ...spatial] shapes of 10^4 to 2.3 * 10^6 elements
 * around the channel kernels' thresholds, the fields every case draws, and per-channel tensors.
 *
 * @module
 */

import fc from "fast-check";
import type { DType } from "../../src/tensor/dtype.ts";
import { numel, uniform } from "./harness.ts";
import {
  type DataKind,
  dataKindArb,
  largeDtypeArb,
  largeEpsArb,
  type LargeLayout,
  largeLayoutArb,
  MAX_NUMEL,
  numelTargetArb,
  pick,
  placeIn,
  splitDim,
} from "./large_shapes.ts";
import { contiguous, type Placed } from "./layouts.ts";

/** [N, C, ...spatial] for C channels of `inner` elements each, about `target` elements. */
function channelShape(C: number, inner: number, target: number, spatialDims: number): number[] {
  const perSample = C * inner;
  let N = Math.max(1, Math.round(target / perSample));
  N = Math.min(N, Math.max(1, Math.floor(MAX_NUMEL / perSample)));
  if (N * inner < 2) N = 2; // training needs two values per channel
  const spatial = inner === 1 && spatialDims === 0 ? [] : splitDim(inner, Math.max(1, spatialDims));
  return [N, C, ...spatial];
}

/**
 * Channel shapes (module doc): one channel, channels not a multiple of 4, many channels; the
 * spatial size from the kernels' thresholds or any; 0-3 spatial dims.
 */
export function channelShapeArb(channels?: fc.Arbitrary<number>): fc.Arbitrary<number[]> {
  const inner = pick(
    [1, 2, 3, 5, 7, 15, 17, 63, 64, 65, 255, 1000, 1023, 1024, 1025, 2047],
    1,
    5000,
  );
  const family = fc.oneof(
    // One channel: its rows of 1024 or more elements in memory order, items of 32768.
    fc.tuple(fc.constant(1), pick([1023, 1024, 1025, 4099, 32768, 65537, 1_000_003], 1, 300_000)),
    fc.tuple(channels ?? pick([3, 5, 7, 13, 33, 63, 65, 127], 2, 300), inner),
    fc.tuple(pick([1000, 4097, 8191, 8192, 8193, 9001], 300, 12000), pick([1, 2, 3, 5, 9], 1, 16)),
  );
  return fc.tuple(family, numelTargetArb, fc.integer({ min: 0, max: 3 })).map(
    ([[C, inner], target, dims]) =>
      channelShape(C, Math.min(inner, MAX_NUMEL / C | 0), target, dims),
  );
}

/** A channel operator's case: the fields every case has, and the operator's own (`extra`). */
export interface ChannelCase<T> {
  /** [N, C, ...spatial]. */
  readonly shape: number[];
  /** The data tensors' dtype. */
  readonly dtype: DType;
  /** The data tensors' storage layout. */
  readonly layout: LargeLayout;
  /** How the data is drawn. */
  readonly data: DataKind;
  /** eps, as the operator takes it. */
  readonly eps: number;
  /** The seed of the case's values. */
  readonly seed: number;
  /** The operator's own fields. */
  readonly extra: T;
}

/**
 * Cases of a channel operator: a shape of `shape`, a dtype of `dtypes` (default every float
 * dtype), a layout, data kind, eps and seed, and the operator's `extra` fields.
 */
export function channelCase<T>(
  shape: fc.Arbitrary<number[]>,
  extra: (shape: number[], dtype: DType) => fc.Arbitrary<T>,
  dtypes: fc.Arbitrary<DType> = largeDtypeArb,
): fc.Arbitrary<ChannelCase<T>> {
  return shape.chain((s) =>
    dtypes.chain((dtype) =>
      fc.record({
        shape: fc.constant(s),
        dtype: fc.constant(dtype),
        layout: largeLayoutArb(s.length),
        data: dataKindArb,
        eps: largeEpsArb,
        seed: fc.integer({ min: 1, max: 1_000_000 }),
        extra: extra(s, dtype),
      })
    )
  );
}

/** A per-channel tensor of C uniform values in [lo, hi), contiguous. */
export function perChannel(
  C: number,
  seed: number,
  dtype: DType,
  lo: number,
  hi: number,
): Placed {
  return placeIn(uniform(C, seed, lo, hi), [C], dtype, contiguous(1));
}

/** (N, C, HxW) of a channel shape. */
export function nchw(shape: readonly number[]): { N: number; C: number; HxW: number } {
  return { N: shape[0], C: shape[1], HxW: numel(shape.slice(2)) };
}

/** Channel counts with many divisors, and primes (group 1 or C). */
export const groupChannels: fc.Arbitrary<number> = pick([6, 12, 30, 32, 33, 63, 96, 320], 2, 300);

/** A group count dividing C. */
export function groupArb(C: number): fc.Arbitrary<number> {
  const divisors = Array.from({ length: C }, (_, i) => i + 1).filter((g) => C % g === 0);
  return fc.constantFrom(...divisors);
}
