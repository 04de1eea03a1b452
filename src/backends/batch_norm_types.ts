/**
 * The kernel contract of the seed BatchNorm operators (aclnnBatchNorm, aclnnBatchNormBackward,
 * aclnnBatchNormStats, aclnnBatchNormGatherStatsWithCounts, aclnnBatchNormElemt,
 * aclnnBatchNormElemtBackward, aclnnBatchNormReduceBackward): their view of the data
 * ({@linkcode ChannelGeometry}), their plans and tensors, and their kernels' signatures
 * ({@linkcode BatchNormKernels}), re-exported by `types.ts`, whose `Kernels` joins every
 * family's.
 *
 * @module
 */

import type { Tensor } from "../tensor/tensor.ts";
import type { OutputMask } from "./output_mask.ts";

/** How a `(N, C, *)` shape splits around its channel dimension (view dim 1). */
export interface ChannelGeometry {
  /** Product of the dims before the channel (dim 0). */
  readonly outer: number;
  /** Number of channels (dim 1). */
  readonly channels: number;
  /** Product of the dims after the channel. */
  readonly inner: number;
  /** Elements per channel: outer * inner. */
  readonly perChannel: number;
}

/**
 * Splits a shape of rank >= 2 around dim 1.
 *
 * @example
 * ```ts
 * import { channelGeometry } from "@aclnn/norm/backends";
 * console.log(channelGeometry([8, 3, 4, 4])); // { outer: 8, channels: 3, inner: 16, perChannel: 128 }
 * ```
 */
export function channelGeometry(shape: readonly number[]): ChannelGeometry {
  const outer = shape[0];
  const channels = shape[1];
  let inner = 1;
  for (let i = 2; i < shape.length; i++) inner *= shape[i];
  return { outer, channels, inner, perChannel: outer * inner };
}

/** aclnnBatchNormReduceBackward. */
export interface BatchNormReduceBackwardPlan {
  /** Geometry of input. */
  readonly geometry: ChannelGeometry;
  /** Compute sumDy and sumDyXmu. */
  readonly inputG: boolean;
  /** Compute gradWeight. */
  readonly weightG: boolean;
  /** Compute gradBias. */
  readonly biasG: boolean;
}

/** Tensors of aclnnBatchNormReduceBackward (outputs present exactly where masked on). */
export interface BatchNormReduceBackwardTensors {
  /** dL/dy. */
  readonly gradOut: Tensor;
  /** x. */
  readonly input: Tensor;
  /** Per-channel mean. */
  readonly mean: Tensor;
  /** Per-channel invstd. */
  readonly invstd: Tensor;
  /** gamma (checked only; CANN does not read its values). */
  readonly weight?: Tensor;
  /** Output: sum(dy). */
  readonly sumDy?: Tensor;
  /** Output: sum(dy * (x - mean)). */
  readonly sumDyXmu?: Tensor;
  /** Output: sumDyXmu * invstd. */
  readonly gradWeight?: Tensor;
  /** Output: sum(dy). */
  readonly gradBias?: Tensor;
}

/** aclnnBatchNormBackward. */
export interface BatchNormBackwardPlan {
  /** Geometry of input. */
  readonly geometry: ChannelGeometry;
  /** Gradient through the batch statistics (true) or fixed running statistics (false). */
  readonly training: boolean;
  /** Added to runningVar in evaluation mode (and passed to CANN). */
  readonly eps: number;
  /** gradInput, gradWeight, gradBias. */
  readonly mask: OutputMask;
}

/**
 * Tensors of aclnnBatchNormBackward. `saveInvstd` always means 1/sqrt(var + eps), whatever
 * a chip stores in that slot natively: converting is the backend's job.
 */
export interface BatchNormBackwardTensors {
  /** dL/dy. */
  readonly gradOut: Tensor;
  /** x. */
  readonly input: Tensor;
  /** gamma (ones when absent). */
  readonly weight?: Tensor;
  /** Running mean (zeros when absent), read in evaluation mode. */
  readonly runningMean?: Tensor;
  /** Running variance (ones when absent), read in evaluation mode. */
  readonly runningVar?: Tensor;
  /** Batch mean (zeros when absent), read in training mode. */
  readonly saveMean?: Tensor;
  /** Batch 1/sqrt(var + eps) (ones when absent), read in training mode. */
  readonly saveInvstd?: Tensor;
  /** Output dL/dx. */
  readonly gradInput?: Tensor;
  /** Output dL/dweight. */
  readonly gradWeight?: Tensor;
  /** Output dL/dbias. */
  readonly gradBias?: Tensor;
}

/** aclnnBatchNormStats. */
export interface BatchNormStatsPlan {
  /** Geometry of input. */
  readonly geometry: ChannelGeometry;
  /** Added to the biased variance. */
  readonly eps: number;
}

/** Tensors of aclnnBatchNormStats. */
export interface BatchNormStatsTensors {
  /** x. */
  readonly input: Tensor;
  /** Output: per-channel mean (float32). */
  readonly mean: Tensor;
  /** Output: per-channel 1/sqrt(var + eps) (float32). */
  readonly invstd: Tensor;
}

/** aclnnBatchNormGatherStatsWithCounts. */
export interface BatchNormGatherStatsPlan {
  /** C. */
  readonly channels: number;
  /** W, the number of ranks (rows of mean/invstd). */
  readonly ranks: number;
  /** Weight of the new statistics in the running update. */
  readonly momentum: number;
  /** The eps of the per-rank invstd (and of the global one). */
  readonly eps: number;
}

/** Tensors of aclnnBatchNormGatherStatsWithCounts. */
export interface BatchNormGatherStatsTensors {
  /** This rank's x (only its shape matters). */
  readonly input: Tensor;
  /** Per-rank means `[W, C]`. */
  readonly mean: Tensor;
  /** Per-rank invstd `[W, C]`. */
  readonly invstd: Tensor;
  /** Updated in place when present. */
  readonly runningMean?: Tensor;
  /** Updated in place when present. */
  readonly runningVar?: Tensor;
  /** Elements per channel on each rank `[W]`. */
  readonly counts: Tensor;
  /** Output: global mean. */
  readonly meanAll: Tensor;
  /** Output: global invstd. */
  readonly invstdAll: Tensor;
}

/** aclnnBatchNormElemt. */
export interface BatchNormElemtPlan {
  /** Geometry of input. */
  readonly geometry: ChannelGeometry;
  /** Passed to CANN (the formula does not use it). */
  readonly eps: number;
}

/** Tensors of aclnnBatchNormElemt. */
export interface BatchNormElemtTensors {
  /** x. */
  readonly input: Tensor;
  /** gamma (ones when absent). */
  readonly weight?: Tensor;
  /** beta (zeros when absent). */
  readonly bias?: Tensor;
  /** Per-channel mean. */
  readonly mean: Tensor;
  /** Per-channel invstd. */
  readonly invstd: Tensor;
  /** Output y. */
  readonly output: Tensor;
}

/** aclnnBatchNormElemtBackward. */
export interface BatchNormElemtBackwardPlan {
  /** Geometry of input. */
  readonly geometry: ChannelGeometry;
}

/** Tensors of aclnnBatchNormElemtBackward. */
export interface BatchNormElemtBackwardTensors {
  /** dL/dy. */
  readonly gradOut: Tensor;
  /** x. */
  readonly input: Tensor;
  /** Global per-channel mean. */
  readonly mean: Tensor;
  /** Global per-channel invstd. */
  readonly invstd: Tensor;
  /** gamma (ones when absent). */
  readonly weight?: Tensor;
  /** All-reduced sum(dy). */
  readonly sumDy: Tensor;
  /** All-reduced sum(dy * (x - mean)). */
  readonly sumDyXmu: Tensor;
  /** Element counts, summed to the global M. */
  readonly counter: Tensor;
  /** Output dL/dx. */
  readonly gradInput: Tensor;
}

/** aclnnBatchNorm. */
export interface BatchNormPlan {
  /** Geometry of input. */
  readonly geometry: ChannelGeometry;
  /** Batch statistics (true) or running statistics (false). */
  readonly training: boolean;
  /** Weight of the batch statistics in the running update. */
  readonly momentum: number;
  /** Added to the variance. */
  readonly eps: number;
}

/**
 * Tensors of aclnnBatchNorm. In training mode `saveInvstd` receives 1/sqrt(var + eps) on every
 * backend (a chip that stores the variance natively is converted by its backend).
 */
export interface BatchNormTensors {
  /** x. */
  readonly input: Tensor;
  /** gamma (ones when absent). */
  readonly weight?: Tensor;
  /** beta (zeros when absent). */
  readonly bias?: Tensor;
  /** Read in evaluation mode, updated in place in training mode. */
  readonly runningMean?: Tensor;
  /** Read in evaluation mode, updated in place (unbiased) in training mode. */
  readonly runningVar?: Tensor;
  /** Output y. */
  readonly output: Tensor;
  /** Output (training): batch mean; unwritten in evaluation mode. */
  readonly saveMean: Tensor;
  /** Output (training): batch invstd; unwritten in evaluation mode. */
  readonly saveInvstd: Tensor;
}

/** The seed BatchNorm operators' kernels (part of {@linkcode Kernels}). */
export interface BatchNormKernels {
  /** aclnnBatchNormReduceBackward. */
  batchNormReduceBackward(
    plan: BatchNormReduceBackwardPlan,
    tensors: BatchNormReduceBackwardTensors,
  ): void;
  /** aclnnBatchNormBackward. */
  batchNormBackward(plan: BatchNormBackwardPlan, tensors: BatchNormBackwardTensors): void;
  /** aclnnBatchNormStats. */
  batchNormStats(plan: BatchNormStatsPlan, tensors: BatchNormStatsTensors): void;
  /** aclnnBatchNormGatherStatsWithCounts. */
  batchNormGatherStatsWithCounts(
    plan: BatchNormGatherStatsPlan,
    tensors: BatchNormGatherStatsTensors,
  ): void;
  /** aclnnBatchNormElemt. */
  batchNormElemt(plan: BatchNormElemtPlan, tensors: BatchNormElemtTensors): void;
  /** aclnnBatchNormElemtBackward. */
  batchNormElemtBackward(
    plan: BatchNormElemtBackwardPlan,
    tensors: BatchNormElemtBackwardTensors,
  ): void;
  /** aclnnBatchNorm. */
  batchNorm(plan: BatchNormPlan, tensors: BatchNormTensors): void;
}
