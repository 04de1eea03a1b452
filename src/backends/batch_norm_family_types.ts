/**
 * Plans and tensors of the BatchNorm operators of issue 39 (aclnnBatchNormReduce,
 * aclnnSyncBatchNormGatherStats, aclnnFastBatchNormBackward) and their kernels' signatures
 * ({@linkcode BatchNormFamilyKernels}): the kernel contract's part for them (re-exported by
 * `types.ts`, whose `Kernels` joins every family's). aclnnFastBatchNormBackward takes the seed
 * aclnnBatchNormBackward's plan and tensors (`batch_norm_types.ts`).
 *
 * @module
 */

import type { Tensor } from "../tensor/tensor.ts";
import type { BatchNormBackwardPlan, BatchNormBackwardTensors } from "./batch_norm_types.ts";

/** aclnnBatchNormReduce. */
export interface BatchNormReducePlan {
  /** C: the channels (x dim 1; 0 when x is empty and of rank < 2). */
  readonly channels: number;
  /**
   * CANN's empty path: x, sum or squareSum holds no element, so sum and squareSum are filled
   * with 0 and x is not read (aclnn_batch_norm_reduce.cpp, before its checks).
   */
  readonly empty: boolean;
}

/** Tensors of aclnnBatchNormReduce. */
export interface BatchNormReduceTensors {
  /** x: 4-D, channel = dim 1 (any shape when the call is empty). */
  readonly x: Tensor;
  /** Output: per-channel sum(x), float32. */
  readonly sum: Tensor;
  /** Output: per-channel sum(x^2), float32. */
  readonly squareSum: Tensor;
}

/** aclnnSyncBatchNormGatherStats. */
export interface SyncBatchNormGatherStatsPlan {
  /** C (totalSum dim 1). */
  readonly channels: number;
  /** Devices (totalSum dim 0, > 0). */
  readonly devices: number;
  /** Weight of the batch statistics in the running update (a C float in CANN). */
  readonly momentum: number;
  /** Added to the batch variance (a C float in CANN). */
  readonly eps: number;
}

/** Tensors of aclnnSyncBatchNormGatherStats. */
export interface SyncBatchNormGatherStatsTensors {
  /** Per-device per-channel sums, `[devices, C]`. */
  readonly totalSum: Tensor;
  /** Per-device per-channel sums of squares, `[devices, C]`. */
  readonly totalSquareSum: Tensor;
  /** Elements per channel on each device, `[devices]`. */
  readonly sampleCount: Tensor;
  /** Running mean `[C]`: read, then updated in place. */
  readonly mean: Tensor;
  /** Running (unbiased) variance `[C]`: read, then updated in place. */
  readonly variance: Tensor;
  /** Output: the batch mean `[C]`. */
  readonly batchMean: Tensor;
  /** Output: the batch 1/sqrt(biased variance + eps) `[C]`. */
  readonly batchInvstd: Tensor;
}

/**
 * aclnnFastBatchNormBackward: aclnnBatchNormBackward's plan (its tensors are
 * `BatchNormBackwardTensors`, saveInvstd always 1/sqrt(var + eps)) and the algorithm version,
 * which CANN only logs (aclnn_fast_batch_norm_backward.cpp, L2_DFX_PHASE_1).
 */
export interface FastBatchNormBackwardPlan extends BatchNormBackwardPlan {
  /** The C int `version` (0 or 1 by the documentation), passed through. */
  readonly version: number;
}

/** The kernels of the BatchNorm operators of issue 39 (part of `Kernels`). */
export interface BatchNormFamilyKernels {
  /** aclnnBatchNormReduce. */
  batchNormReduce(plan: BatchNormReducePlan, tensors: BatchNormReduceTensors): void;
  /** aclnnSyncBatchNormGatherStats (mean and variance updated in place). */
  syncBatchNormGatherStats(
    plan: SyncBatchNormGatherStatsPlan,
    tensors: SyncBatchNormGatherStatsTensors,
  ): void;
  /** aclnnFastBatchNormBackward (never called for an empty input or gradOut). */
  fastBatchNormBackward(plan: FastBatchNormBackwardPlan, tensors: BatchNormBackwardTensors): void;
}
