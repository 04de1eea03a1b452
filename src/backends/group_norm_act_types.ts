/**
 * The kernel contract of the activated GroupNorm operators (aclnnGroupNormSilu,
 * aclnnGroupNormSiluV2, aclnnGroupNormSwish, aclnnGroupNormSwishGrad): their plans and tensors
 * and their kernels' signatures ({@linkcode GroupNormActKernels}), re-exported by `types.ts`,
 * whose `Kernels` joins every family's.
 *
 * @module
 */

import type { Tensor } from "../tensor/tensor.ts";

/** What validation established for aclnnGroupNormSilu / aclnnGroupNormSiluV2. */
export interface GroupNormSiluPlan {
  /** Samples (self dim 0). */
  readonly N: number;
  /** Channels (self dim 1). */
  readonly C: number;
  /** Elements per channel (product of self dims 2..). */
  readonly HxW: number;
  /** Groups (> 0, a divisor of C). */
  readonly group: number;
  /** Added to the variance (> 0); CANN passes it on as a float. */
  readonly eps: number;
  /** SiLU after the normalization (always true for aclnnGroupNormSilu). */
  readonly activateSilu: boolean;
}

/** Tensors of aclnnGroupNormSilu / aclnnGroupNormSiluV2 (names as in CANN, outputs without Out). */
export interface GroupNormSiluTensors {
  /** x: (N, C, ...). */
  readonly self: Tensor;
  /** Per-channel scale (ones when absent). */
  readonly gamma?: Tensor;
  /** Per-channel offset (zeros when absent). */
  readonly beta?: Tensor;
  /** Output: self's shape and dtype. */
  readonly output: Tensor;
  /** Output: per-(n, group) mean, N * group elements. */
  readonly mean: Tensor;
  /** Output: per-(n, group) 1/sqrt(biased var + eps). */
  readonly rstd: Tensor;
}

/** What validation established for aclnnGroupNormSwish. */
export interface GroupNormSwishPlan {
  /** Samples (x dim 0). */
  readonly N: number;
  /** Channels (x dim 1). */
  readonly C: number;
  /** Elements per channel (product of x dims 2..). */
  readonly HxW: number;
  /** Groups (> 0, a divisor of C). */
  readonly numGroups: number;
  /** x's layout as CANN takes it: "NCHW" (the only one documented). */
  readonly dataFormat: string;
  /** Added to the variance (a float attribute). */
  readonly eps: number;
  /** Swish after the normalization. */
  readonly activateSwish: boolean;
  /** s of y = g / (1 + exp(-s * g)) (a float attribute). */
  readonly swishScale: number;
}

/** Tensors of aclnnGroupNormSwish. */
export interface GroupNormSwishTensors {
  /** x: (N, C, ...). */
  readonly x: Tensor;
  /** Per-channel scale. */
  readonly gamma: Tensor;
  /** Per-channel offset. */
  readonly beta: Tensor;
  /** Output: x's shape and dtype. */
  readonly y: Tensor;
  /** Output: per-(n, group) mean, in gamma's dtype. */
  readonly mean: Tensor;
  /** Output: per-(n, group) 1/sqrt(biased var + eps), in gamma's dtype. */
  readonly rstd: Tensor;
}

/** What validation established for aclnnGroupNormSwishGrad. */
export interface GroupNormSwishGradPlan {
  /** Samples (x dim 0). */
  readonly N: number;
  /** Channels (x dim 1). */
  readonly C: number;
  /** Elements per channel (product of x dims 2..). */
  readonly HxW: number;
  /** Groups (> 0, a divisor of C). */
  readonly numGroups: number;
  /** x's layout as CANN takes it: "NCHW" (the only one documented). */
  readonly dataFormat: string;
  /** s of the forward's y = t / (1 + exp(-s * t)) (a float attribute). */
  readonly swishScale: number;
  /** Whether dgamma is computed (written). */
  readonly dgammaIsRequire: boolean;
  /** Whether dbeta is computed (written). */
  readonly dbetaIsRequire: boolean;
}

/** Tensors of aclnnGroupNormSwishGrad (all one dtype). */
export interface GroupNormSwishGradTensors {
  /** dL/dy: x's shape. */
  readonly dy: Tensor;
  /** The forward's per-(n, group) mean: N * numGroups elements. */
  readonly mean: Tensor;
  /** The forward's per-(n, group) rstd: N * numGroups elements. */
  readonly rstd: Tensor;
  /** x: (N, C, ...). */
  readonly x: Tensor;
  /** Per-channel scale: C elements. */
  readonly gamma: Tensor;
  /** Per-channel offset: C elements. */
  readonly beta: Tensor;
  /** Output dL/dx: x's shape. */
  readonly dx: Tensor;
  /** Output dL/dgamma: C elements (written when plan.dgammaIsRequire). */
  readonly dgamma: Tensor;
  /** Output dL/dbeta: C elements (written when plan.dbetaIsRequire). */
  readonly dbeta: Tensor;
}

/** The activated GroupNorm operators' kernels (part of `Kernels`). */
export interface GroupNormActKernels {
  /** aclnnGroupNormSilu (plan.activateSilu is true). */
  groupNormSilu(plan: GroupNormSiluPlan, tensors: GroupNormSiluTensors): void;
  /** aclnnGroupNormSiluV2. */
  groupNormSiluV2(plan: GroupNormSiluPlan, tensors: GroupNormSiluTensors): void;
  /** aclnnGroupNormSwish. */
  groupNormSwish(plan: GroupNormSwishPlan, tensors: GroupNormSwishTensors): void;
  /** aclnnGroupNormSwishGrad. */
  groupNormSwishGrad(plan: GroupNormSwishGradPlan, tensors: GroupNormSwishGradTensors): void;
}
