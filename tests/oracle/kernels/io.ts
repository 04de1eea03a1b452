/**
 * How the oracle's kernels meet tensors: every tensor read whole as float64 in logical
 * row-major order, every result rounded once into its tensor (`Tensor.copy_`).
 *
 * @module
 */

import type { Tensor } from "../../../src/tensor/tensor.ts";
import type { ChannelGeometry } from "../../../src/backends/types.ts";

/** The tensor's elements as float64, in logical order. */
export function read(t: Tensor): Float64Array {
  return t.toFloat64Array();
}

/** The tensor's elements, or undefined when it is absent (the oracle's own defaults apply). */
export function readIf(t: Tensor | undefined): Float64Array | undefined {
  return t?.toFloat64Array();
}

/** Writes `values` into `t` when `t` is present, each rounded once to its dtype. */
export function write(t: Tensor | undefined, values: ArrayLike<number>): void {
  t?.copy_(values);
}

/** The logical (outer, C, inner) shape of a BatchNorm geometry, as the oracle reads data. */
export function channelShape(g: ChannelGeometry): number[] {
  return [g.outer, g.channels, g.inner];
}
