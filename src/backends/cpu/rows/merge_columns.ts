/**
 * The weight gradients of the row kernels' backward calls: each work item adds its rows' terms
 * to float32 column partials of its own (items.ts), which are summed here over the items, in
 * float64 and in item order, so that any split of the items over threads gives the bits of
 * one thread. The sums run in the kernels (row_norms.wat rf_merge_cols) into this thread's
 * region of the heap, a chunk of columns at a time: a JavaScript loop over a shared float32
 * array took about 1 ns an element (8 us of a 58 us layerNormBackward [64,1024] on one thread).
 *
 * @module
 */

import type { Tensor } from "../../../tensor/tensor.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";
import { denseChannels, writeChannelValues } from "../tensors/channel_values.ts";
import { rowNormKernels } from "./wasm_rows.ts";

/**
 * Sums over `items` items the float32 partials at byte address `at` of the heap (item k's
 * column i at at + 4 (k * stride + i); `stride` a multiple of 4, its padding past `cols`
 * zeroed), in float64 and in item order, into `out` (`cols` values), rounded once to its type.
 */
function mergeInto(
  out: Float64Array | Float32Array | Float16Array,
  at: number,
  items: number,
  cols: number,
  stride: number,
): void {
  const kernels = rowNormKernels();
  const sums = kernels.f64;
  // Columns merged per kernel call: float64 sums that fit the region (an even count, as the
  // kernel writes the columns in pairs).
  const chunk = sums.length & ~1;
  for (let c0 = 0; c0 < cols; c0 += chunk) {
    const count = Math.min(chunk, cols - c0);
    kernels.exports.rf_merge_cols(at + 4 * c0, items, count, stride, kernels.at);
    out.set(sums.subarray(0, count), c0);
  }
}

/** {@linkcode mergeInto}'s sums of `cols` columns as a new float64 temporary (slab.ts). */
export function mergeColumns(
  at: number,
  items: number,
  cols: number,
  stride: number,
): Float64Array {
  const out = temporaryFloat64(cols);
  mergeInto(out, at, items, cols, stride);
  return out;
}

/**
 * {@linkcode mergeInto}'s sums of `cols` columns written into `target` (`cols` elements),
 * each rounded once to its dtype: straight into its storage when it is a dense float32 or
 * float16 run (no float64 array between), else through a temporary.
 */
export function mergeColumnsInto(
  target: Tensor,
  at: number,
  items: number,
  cols: number,
  stride: number,
): void {
  const dense = denseChannels(target);
  if (dense) return mergeInto(dense, at, items, cols, stride);
  writeChannelValues(target, mergeColumns(at, items, cols, stride));
}
