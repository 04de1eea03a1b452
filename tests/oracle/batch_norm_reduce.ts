/**
 * aclnnBatchNormReduce (src/ops/batch_norm_reduce.ts): per channel c of logical (N, C, *) data,
 * sum = Σ x and squareSum = Σ x², in float64. An empty x gives zeros.
 *
 * @module
 */

import { channelSplit, eachElement } from "./geometry.ts";

/** What batchNormReduce returns. */
export interface BatchNormReduce64 {
  /** Per-channel Σx. */
  sum: Float64Array;
  /** Per-channel Σx². */
  squareSum: Float64Array;
}

/** batchNormReduce of logical (N, C, *) data. */
export function batchNormReduce64(
  x: ArrayLike<number>,
  shape: readonly number[],
): BatchNormReduce64 {
  const s = channelSplit(shape);
  const sum = new Float64Array(s.C);
  const squareSum = new Float64Array(s.C);
  eachElement(s, (i, c) => {
    sum[c] += x[i];
    squareSum[c] += x[i] * x[i];
  });
  return { sum, squareSum };
}
