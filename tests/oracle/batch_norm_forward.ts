/**
 * The BatchNorm forward pass as a differentiable float64 function, for finite differences:
 * gradients from the operators are checked against derivatives of this forward, never
 * against the kernels.
 *
 * @module
 */

import { channelSplit, eachElement } from "./geometry.ts";
import { batchStats64, invstdOf, type Moments } from "./statistics.ts";

/** Result of a float64 BatchNorm forward over (N, C, *) in row-major order. */
export interface BatchNormForward64 {
  y: Float64Array;
  mean: Float64Array;
  invstd: Float64Array;
}

/**
 * y = (x - mean_c) * invstd_c * w_c + b_c. Without `stats` (training) mean and var are the
 * batch's (biased variance); with `stats` (evaluation) they are fixed. invstd = 1/sqrt(var +
 * eps). Absent weight/bias mean 1/0.
 */
export function batchNormForward64(
  x: ArrayLike<number>,
  shape: readonly number[],
  weight: ArrayLike<number> | undefined,
  bias: ArrayLike<number> | undefined,
  eps: number,
  stats?: Moments,
): BatchNormForward64 {
  const s = channelSplit(shape);
  const { mean, variance } = stats ?? batchStats64(x, shape);
  const invstd = invstdOf(variance, eps);
  const y = new Float64Array(x.length);
  eachElement(s, (i, c) => {
    y[i] = (x[i] - mean[c]) * invstd[c] * (weight ? weight[c] : 1) + (bias ? bias[c] : 0);
  });
  return { y, mean: Float64Array.from(mean), invstd };
}
