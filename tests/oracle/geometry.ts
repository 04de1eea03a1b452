/**
 * How the oracle reads its logical row-major float64 data: BatchNorm-family tensors as
 * (outer, C, inner) around dim 1, GroupNorm tensors as (N, C, HxW) split into groups.
 *
 * @module
 */

/** A rank >= 2 shape split around the channel dimension (dim 1). */
export interface ChannelSplit {
  /** shape[0]. */
  outer: number;
  /** shape[1], the channels. */
  C: number;
  /** The product of shape[2..]. */
  inner: number;
  /** Elements per channel: outer * inner. */
  M: number;
}

/** Splits a rank >= 2 shape around dim 1. */
export function channelSplit(shape: readonly number[]): ChannelSplit {
  if (shape.length < 2) throw new RangeError(`the oracle needs rank >= 2, got [${shape}]`);
  let inner = 1;
  for (let i = 2; i < shape.length; i++) inner *= shape[i];
  return { outer: shape[0], C: shape[1], inner, M: shape[0] * inner };
}

/** Logical index of element (n, c, j) of (outer, C, inner) data. */
export function at(s: ChannelSplit, n: number, c: number, j: number): number {
  return (n * s.C + c) * s.inner + j;
}

/** Calls `f(i, c)` for every element i of (outer, C, inner) data, with its channel c. */
export function eachElement(s: ChannelSplit, f: (i: number, c: number) => void): void {
  for (let n = 0; n < s.outer; n++) {
    for (let c = 0; c < s.C; c++) {
      for (let j = 0; j < s.inner; j++) f(at(s, n, c, j), c);
    }
  }
}

/** `values`, or `length` copies of `fill` when it is absent (an optional per-channel tensor). */
export function orFill(
  values: ArrayLike<number> | undefined,
  length: number,
  fill: number,
): Float64Array {
  return values ? Float64Array.from(values) : new Float64Array(length).fill(fill);
}
