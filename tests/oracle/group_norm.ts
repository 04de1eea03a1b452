/**
 * aclnnGroupNorm (src/ops/group_norm.ts): the input read as (N, C, HxW), groups of
 * D = C / group channels; per (n, g), over the group's D * HxW elements:
 *
 * ```
 * mean = sum(x) / (D * HxW),  rstd = 1 / sqrt(sum((x - mean)^2) / (D * HxW) + eps)
 * output = (x - mean) * rstd * gamma[c] + beta[c]          (gamma 1, beta 0 when absent)
 * ```
 *
 * mean and rstd are (N, group), element n * group + g. An empty input gives mean 0 and rstd
 * NaN (README). `groupNormForward64` is the same forward, the function finite differences
 * differentiate.
 *
 * @module
 */

import { groupStats64, invstdOf } from "./statistics.ts";

/** Result of a float64 GroupNorm forward: y, and mean/rstd per (n, group). */
export interface GroupNormForward64 {
  y: Float64Array;
  mean: Float64Array;
  rstd: Float64Array;
}

/** GroupNorm over (N, C, HxW) with biased variance, as PyTorch and aclnnGroupNorm define it. */
export function groupNormForward64(
  x: ArrayLike<number>,
  N: number,
  C: number,
  HxW: number,
  group: number,
  gamma: ArrayLike<number> | undefined,
  beta: ArrayLike<number> | undefined,
  eps: number,
): GroupNormForward64 {
  const D = C / group;
  const { mean, variance } = groupStats64(x, N, C, HxW, group);
  const rstd = invstdOf(variance, eps);
  const y = new Float64Array(N * C * HxW);
  for (let n = 0; n < N; n++) {
    for (let c = 0; c < C; c++) {
      const k = n * group + Math.floor(c / D);
      for (let h = 0; h < HxW; h++) {
        const i = (n * C + c) * HxW + h;
        y[i] = (x[i] - mean[k]) * rstd[k] * (gamma ? gamma[c] : 1) + (beta ? beta[c] : 0);
      }
    }
  }
  return { y, mean, rstd };
}

/** groupNorm's outputs: output, mean, rstd. */
export interface GroupNorm64 {
  output: Float64Array;
  mean: Float64Array;
  rstd: Float64Array;
}

/** groupNorm (the forward above; its statistics of an empty group are mean 0, rstd NaN). */
export function groupNorm64(
  x: ArrayLike<number>,
  N: number,
  C: number,
  HxW: number,
  group: number,
  gamma: ArrayLike<number> | undefined,
  beta: ArrayLike<number> | undefined,
  eps: number,
): GroupNorm64 {
  const f = groupNormForward64(x, N, C, HxW, group, gamma, beta, eps);
  return { output: f.y, mean: f.mean, rstd: f.rstd };
}
