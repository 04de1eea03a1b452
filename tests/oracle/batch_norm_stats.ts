/**
 * aclnnBatchNormStats (src/ops/batch_norm_stats.ts): per channel, mean = sum(x) / M and
 * invstd = 1 / sqrt(sum((x - mean)^2) / M + eps). An empty batch gives mean 0, invstd NaN.
 *
 * @module
 */

import { batchStats64, invstdOf } from "./statistics.ts";

/** What batchNormStats returns. */
export interface BatchNormStats64 {
  mean: Float64Array;
  invstd: Float64Array;
}

/** batchNormStats of logical (N, C, *) data. */
export function batchNormStats64(
  x: ArrayLike<number>,
  shape: readonly number[],
  eps: number,
): BatchNormStats64 {
  const { mean, variance } = batchStats64(x, shape);
  return { mean, invstd: invstdOf(variance, eps) };
}
