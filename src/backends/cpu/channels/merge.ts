/**
 * Merging per-item partials into per-channel results on the calling thread, always in item
 * order: the partition into items depends on the shape only, so the results are the same
 * bits whatever the number of threads.
 *
 * @module
 */

import type { Layout } from "../kernels/layout_types.ts";
import {
  pixelsPerBlock,
  rowChunks,
  rowsInMemoryOrder,
  rowsPerItem,
} from "../kernels/layout_types.ts";
import { mergeMoments } from "../kernels/moments.ts";
import { mergePixelBlocks, mergeSamplePartials } from "../kernels/partials_merge.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";

/** Two per-channel results. */
export interface ChannelPair {
  /** First result per channel (e.g. sum(dy)). */
  readonly first: Float64Array;
  /** Second result per channel (e.g. sum(dy * (x - mean))). */
  readonly second: Float64Array;
}

/**
 * A `perSample` layout's partials (GroupNorm's), per (n, c) at n * C + c: each sample merged
 * as a GroupNorm work item merges it (kernels/partials_merge.ts mergeSamplePartials).
 */
function perSamplePartials(layout: Layout, partials: Float64Array, moments: boolean): ChannelPair {
  const size = layout.N * layout.C;
  const both = temporaryFloat64(2 * size);
  for (let n = 0; n < layout.N; n++) {
    mergeSamplePartials(layout, partials, n, moments, both, n * layout.C, size + n * layout.C);
  }
  return { first: both.subarray(0, size), second: both.subarray(size) };
}

/**
 * Per-channel totals of a sums stage's partials (per (n, c), at n * C + c, when the layout is
 * `perSample`; rows in memory order summed per channel in n order).
 */
export function mergeChannelSums(layout: Layout, partials: Float64Array): ChannelPair {
  if (layout.perSample) return perSamplePartials(layout, partials, false);
  if (layout.kind === "pixels") return mergePixelPartials(layout, partials, false);
  const C = layout.C;
  const first = temporaryFloat64(C);
  const second = temporaryFloat64(C);
  if (rowsInMemoryOrder(layout)) {
    // One pair per (n, c) row at n * C + c: each channel's rows in n order.
    for (let n = 0; n < layout.N; n++) {
      for (let c = 0; c < C; c++) {
        first[c] += partials[2 * (n * C + c)];
        second[c] += partials[2 * (n * C + c) + 1];
      }
    }
    return { first, second };
  }
  const chunks = rowChunks(layout);
  for (let c = 0; c < C; c++) {
    for (let k = 0; k < chunks; k++) {
      first[c] += partials[2 * (c * chunks + k)];
      second[c] += partials[2 * (c * chunks + k) + 1];
    }
  }
  return { first, second };
}

/**
 * Per-channel (sum, m2) of a stats stage's partials: `first` = sum(x), `second` =
 * sum((x - mean)^2), each item merged with its element count.
 */
export function mergeChannelMoments(layout: Layout, partials: Float64Array): ChannelPair {
  if (layout.perSample) return perSamplePartials(layout, partials, true);
  if (layout.kind === "pixels") return mergePixelPartials(layout, partials, true);
  const C = layout.C;
  if (rowsInMemoryOrder(layout)) {
    // One (sum, m2) per (n, c) row at n * C + c, merged into its channel in n order.
    const both = temporaryFloat64(2 * C);
    const inner = layout.inner;
    for (let n = 0; n < layout.N; n++) {
      for (let c = 0; c < C; c++) {
        const slot = 2 * (n * C + c);
        mergeMoments(both, c, C + c, n * inner, partials[slot], partials[slot + 1], inner);
      }
    }
    return { first: both.subarray(0, C), second: both.subarray(C) };
  }
  const out = temporaryFloat64(2);
  const first = temporaryFloat64(C);
  const second = temporaryFloat64(C);
  const rows = rowsPerItem(layout);
  const chunks = rowChunks(layout);
  for (let c = 0; c < C; c++) {
    let done = 0;
    for (let k = 0; k < chunks; k++) {
      const count = (Math.min(layout.N, (k + 1) * rows) - k * rows) * layout.inner;
      const slot = 2 * (c * chunks + k);
      mergeMoments(out, 0, 1, done, partials[slot], partials[slot + 1], count);
      done += count;
    }
    first[c] = out[0];
    second[c] = out[1];
  }
  return { first, second };
}

/**
 * The per-channel results of a pixels stage's partials (2C per block, in block order), the
 * whole tensor one run of pixels: each channel's blocks taken in order, summed (a sums stage)
 * or merged as moments with their pixel counts (a stats stage). Per-sample layouts:
 * {@linkcode perSamplePartials}.
 */
export function mergePixelPartials(
  layout: Layout,
  partials: Float64Array,
  moments: boolean,
): ChannelPair {
  const C = layout.C;
  const pixels = layout.N * layout.inner;
  const per = pixelsPerBlock(layout);
  const both = temporaryFloat64(2 * C);
  mergePixelBlocks(partials, C, 0, Math.ceil(pixels / per), pixels, per, moments, both, 0, C);
  return { first: both.subarray(0, C), second: both.subarray(C) };
}
