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

import { rowNormKernels } from "./wasm_rows.ts";

/**
 * Sums over `items` items the float32 partials at byte address `at` of the heap (item k's
 * column i at at + 4 (k * stride + i); `stride` a multiple of 4, its padding past `cols`
 * zeroed), in float64 and in item order, into a new array of `cols` values.
 */
export function mergeColumns(
  at: number,
  items: number,
  cols: number,
  stride: number,
): Float64Array {
  const kernels = rowNormKernels();
  const sums = kernels.f64;
  // Columns merged per kernel call: float64 sums that fit the region (an even count, as the
  // kernel writes the columns in pairs).
  const chunk = sums.length & ~1;
  const out = new Float64Array(cols);
  for (let c0 = 0; c0 < cols; c0 += chunk) {
    const count = Math.min(chunk, cols - c0);
    kernels.exports.rf_merge_cols(at + 4 * c0, items, count, stride, kernels.at);
    out.set(sums.subarray(0, count), c0);
  }
  return out;
}
