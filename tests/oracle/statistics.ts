/**
 * Batch statistics from their definitions: the per-channel mean and biased variance of
 * BatchNorm, the per-(n, group) mean and biased variance of GroupNorm.
 *
 * Empty reductions follow the library's documented semantics (README "What runs where"):
 * the mean of nothing is 0, and its variance (0 / 0) is NaN, so invstd/rstd are NaN too.
 *
 * @module
 */

import { channelSplit, eachElement } from "./geometry.ts";

/** Mean and biased variance. */
export interface Moments {
  mean: Float64Array;
  variance: Float64Array;
}

/** Per-channel mean and biased variance of (N, C, *) data: sum(x)/M, sum((x - mean)^2)/M. */
export function batchStats64(x: ArrayLike<number>, shape: readonly number[]): Moments {
  const s = channelSplit(shape);
  const sum = new Float64Array(s.C);
  eachElement(s, (i, c) => sum[c] += x[i]);
  const mean = sum.map((v) => (s.M === 0 ? 0 : v / s.M));
  const squares = new Float64Array(s.C);
  eachElement(s, (i, c) => squares[c] += (x[i] - mean[c]) ** 2);
  return { mean, variance: squares.map((v) => v / s.M) };
}

/**
 * Per-(n, g) mean and biased variance of GroupNorm data read as (N, C, HxW), groups of
 * C / group consecutive channels; element n * group + g.
 */
export function groupStats64(
  x: ArrayLike<number>,
  N: number,
  C: number,
  HxW: number,
  group: number,
): Moments {
  const size = (C / group) * HxW;
  const mean = new Float64Array(N * group);
  const variance = new Float64Array(N * group);
  for (let n = 0; n < N; n++) {
    for (let g = 0; g < group; g++) {
      // A group's elements are contiguous in (N, C, HxW) order.
      const base = (n * group + g) * size;
      let s = 0;
      for (let i = 0; i < size; i++) s += x[base + i];
      const m = size === 0 ? 0 : s / size;
      let q = 0;
      for (let i = 0; i < size; i++) q += (x[base + i] - m) ** 2;
      mean[n * group + g] = m;
      variance[n * group + g] = q / size;
    }
  }
  return { mean, variance };
}

/** 1 / sqrt(variance + eps), element by element. */
export function invstdOf(variance: ArrayLike<number>, eps: number): Float64Array {
  return Float64Array.from(variance, (v) => 1 / Math.sqrt(v + eps));
}
