/**
 * The GroupNorm family's plans and tensors (aclnnGroupNorm, aclnnGroupNormBackward,
 * aclnnInstanceNorm) and their kernels' signatures ({@linkcode GroupNormKernels}), re-exported by
 * types.ts with the rest of the kernel contract.
 *
 * @module
 */

import type { Tensor } from "../tensor/tensor.ts";
import type { OutputMask } from "./output_mask.ts";

/** GroupNorm's view of the data: (N, C, HxW) in logical row-major order, `group` groups. */
export interface GroupGeometry {
  /** Batch size. */
  readonly N: number;
  /** Channels. */
  readonly C: number;
  /** Elements per channel and sample. */
  readonly HxW: number;
  /** Number of groups (divides C). */
  readonly group: number;
}

/** aclnnGroupNormBackward. */
export interface GroupNormBackwardPlan extends GroupGeometry {
  /** gradInput, gradGamma, gradBeta. */
  readonly mask: OutputMask;
}

/** Tensors of aclnnGroupNormBackward. */
export interface GroupNormBackwardTensors {
  /** dL/dy, N*C*HxW elements. */
  readonly gradOut: Tensor;
  /** x, N*C*HxW elements. */
  readonly input: Tensor;
  /** Per-(n, group) mean. */
  readonly mean: Tensor;
  /** Per-(n, group) 1/sqrt(var + eps). */
  readonly rstd: Tensor;
  /** Per-channel scale (ones when absent). */
  readonly gamma?: Tensor;
  /** Output dL/dx. */
  readonly gradInput?: Tensor;
  /** Output dL/dgamma. */
  readonly gradGamma?: Tensor;
  /** Output dL/dbeta. */
  readonly gradBeta?: Tensor;
}

/** aclnnGroupNorm. */
export interface GroupNormPlan extends GroupGeometry {
  /** Added to the variance (> 0). */
  readonly eps: number;
}

/** Tensors of aclnnGroupNorm. */
export interface GroupNormTensors {
  /** x. */
  readonly input: Tensor;
  /** Per-channel scale (ones when absent). */
  readonly gamma?: Tensor;
  /** Per-channel offset (zeros when absent). */
  readonly beta?: Tensor;
  /** Output y. */
  readonly output: Tensor;
  /** Output: per-(n, group) mean. */
  readonly mean: Tensor;
  /** Output: per-(n, group) 1/sqrt(var + eps). */
  readonly rstd: Tensor;
}

/**
 * aclnnInstanceNorm: per (n, c) over H * W, GroupNorm with group = C whose second statistic is
 * the biased variance (not rstd).
 */
export interface InstanceNormPlan {
  /** Batch size. */
  readonly N: number;
  /** Channels (x dim 1 for NCHW, dim 3 for NHWC). */
  readonly C: number;
  /** H * W: elements per (n, c). */
  readonly HxW: number;
  /** Added to the variance (any finite value; CANN passes it on as a float attribute). */
  readonly eps: number;
  /** x is [N, H, W, C] (dataFormat starts with "NHWC"), else [N, C, H, W]. */
  readonly channelsLast: boolean;
  /** The dataFormat string as given (what the NPU path passes to CANN). */
  readonly dataFormat: string;
}

/** Tensors of aclnnInstanceNorm (every one present: CANN refuses a NULL one). */
export interface InstanceNormTensors {
  /** x, 4-D in the plan's layout. */
  readonly x: Tensor;
  /** Per-channel scale, C elements. */
  readonly gamma: Tensor;
  /** Per-channel offset, C elements. */
  readonly beta: Tensor;
  /** Output y, x's shape. */
  readonly y: Tensor;
  /** Output: per-(n, c) mean, [N, C, 1, 1] (NCHW) or [N, 1, 1, C] (NHWC). */
  readonly mean: Tensor;
  /** Output: per-(n, c) biased variance, mean's shape. */
  readonly variance: Tensor;
}

/** The GroupNorm family's kernels (part of `Kernels`). */
export interface GroupNormKernels {
  /** aclnnGroupNorm. */
  groupNorm(plan: GroupNormPlan, tensors: GroupNormTensors): void;
  /** aclnnGroupNormBackward. */
  groupNormBackward(plan: GroupNormBackwardPlan, tensors: GroupNormBackwardTensors): void;
  /** aclnnInstanceNorm. */
  instanceNorm(plan: InstanceNormPlan, tensors: InstanceNormTensors): void;
}
