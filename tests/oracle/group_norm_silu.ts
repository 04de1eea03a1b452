/**
 * aclnnGroupNormSilu / aclnnGroupNormSiluV2 / aclnnGroupNormSwish in float64: GroupNorm
 * (group_norm.ts: biased variance, mean 0 and rstd NaN for an empty group), then, when active,
 * y = g / (1 + exp(-s * g)) of each normalized value g, s = 1 for SiLU (CANN's numerator is g,
 * not s * g: ops-nn norm/group_norm_swish/op_kernel/group_norm_swish_base.h:270-282).
 *
 * @module
 */

import { groupNorm64 } from "./group_norm.ts";

/** The outputs of the activated GroupNorms: output (y), mean, rstd per (n, group). */
export interface GroupNormSwish64 {
  output: Float64Array;
  mean: Float64Array;
  rstd: Float64Array;
}

/** x / (1 + exp(-s * x)) in float64. */
export function swish64(x: number, s: number): number {
  return x / (1 + Math.exp(-s * x));
}

/**
 * GroupNorm over (N, C, HxW) then swish with scale `swishScale` (undefined: no activation).
 * SiLU is `swishScale` 1.
 */
export function groupNormSwish64(
  x: ArrayLike<number>,
  N: number,
  C: number,
  HxW: number,
  group: number,
  gamma: ArrayLike<number> | undefined,
  beta: ArrayLike<number> | undefined,
  eps: number,
  swishScale: number | undefined,
): GroupNormSwish64 {
  const r = groupNorm64(x, N, C, HxW, group, gamma, beta, eps);
  if (swishScale !== undefined) {
    for (let i = 0; i < r.output.length; i++) r.output[i] = swish64(r.output[i], swishScale);
  }
  return r;
}
