/**
 * Inputs for the module tests: seeded random data of a dtype in one of three layouts
 * (row-major, channel innermost, a strided slice of a larger tensor), the same logical values
 * in each, and the shapes of ranks 2-8 the tests sweep.
 *
 * @module
 */

import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";

/** The layouts a module test runs its inputs in. */
export type LayoutName = "contiguous" | "channels-last" | "strided";

/** The layouts, in sweep order. */
export const LAYOUTS: readonly LayoutName[] = ["contiguous", "channels-last", "strided"];

/** One shape per rank 2-8, channel = dim 1 = 3, at least 2 values per channel. */
export const RANK_SHAPES: readonly (readonly number[])[] = [
  [6, 3],
  [4, 3, 5],
  [2, 3, 4, 5],
  [2, 3, 2, 3, 2],
  [2, 3, 2, 1, 2, 2],
  [2, 3, 1, 2, 1, 2, 2],
  [2, 3, 1, 1, 2, 1, 2, 2],
];

/** Seeded values of `shape` in `dtype`, laid out as `layout` (a view of new storage). */
export function data(
  shape: readonly number[],
  seed: number,
  dtype: DType,
  layout: LayoutName,
  low = -2,
  high = 3,
): Tensor {
  const r = shape.length;
  if (layout === "channels-last") {
    const toLast = [0, ...Array.from({ length: r - 2 }, (_, i) => i + 2), 1];
    const back = [0, r - 1, ...Array.from({ length: r - 2 }, (_, i) => i + 1)];
    const stored = toLast.map((d) => shape[d]);
    return Tensor.random(stored, { seed, dtype, low, high }).permute(back);
  }
  if (layout === "strided") {
    // Every other element of a tensor twice as long in its last dim.
    const wide = [...shape.slice(0, -1), 2 * shape[r - 1]];
    return Tensor.random(wide, { seed, dtype, low, high }).slice(r - 1, 0, 2 * shape[r - 1], 2);
  }
  return Tensor.random(shape, { seed, dtype, low, high });
}
