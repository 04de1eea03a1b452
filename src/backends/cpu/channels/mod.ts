/**
 * The channel family's kernels on the CPU: BatchNorm and its pieces, GroupNorm, InstanceNorm and
 * the activated GroupNorms, whose statistics run over (n, inner) per channel or group. Each runs
 * as stages of float32 WebAssembly kernels (../kernels/) in place in the host heap, over NCHW rows
 * or channels-last pixels, its work split over the worker pool for large tensors; empty tensors
 * get CANN's fills; calls the kernels cannot take in place (mixed dtypes, outputs that overlap
 * their inputs other than element for element, tensors outside the heap, other layouts) run on
 * heap copies (staging.ts). The row norms are beside them in ../rows/; ../mod.ts joins both.
 *
 * @module
 */

import type { BatchNormKernels } from "../../types.ts";
import type { BatchNormFamilyKernels } from "../../batch_norm_family_types.ts";
import type { GroupNormKernels } from "../../group_norm_types.ts";
import type { GroupNormActKernels } from "../../group_norm_act_types.ts";
import {
  batchNormBackward,
  batchNormElemtBackward,
  batchNormReduceBackward,
} from "./batch_norm_backward.ts";
import { batchNorm, batchNormElemt, batchNormStats } from "./batch_norm_forward.ts";
import { batchNormGatherStatsWithCounts } from "./batch_norm_gather_stats.ts";
import { batchNormReduce } from "./batch_norm_reduce.ts";
import { syncBatchNormGatherStats } from "./sync_batch_norm_gather_stats.ts";
import { groupNorm, groupNormBackward, instanceNorm } from "./group_norm.ts";
import { groupNormSilu, groupNormSwish } from "./group_norm_act.ts";
import { groupNormSwishGrad } from "./group_norm_swish_grad.ts";

/** The kernels of the channel family's operators (module doc). */
export type ChannelKernels =
  & BatchNormKernels
  & BatchNormFamilyKernels
  & GroupNormKernels
  & GroupNormActKernels;

/** The channel family's kernels, by operator. */
export const channelKernels: ChannelKernels = {
  batchNormReduceBackward,
  batchNormBackward,
  groupNormBackward,
  batchNormStats,
  batchNormGatherStatsWithCounts,
  batchNormElemt,
  batchNormElemtBackward,
  batchNorm,
  groupNorm,
  groupNormSilu,
  groupNormSiluV2: groupNormSilu,
  groupNormSwish,
  groupNormSwishGrad,
  batchNormReduce,
  syncBatchNormGatherStats,
  instanceNorm,
  // aclnnFastBatchNormBackward computes what aclnnBatchNormBackward computes (ops-nn
  // aclnn_fast_batch_norm_backward.cpp runs the same BatchNormGradV3 kernel on A2).
  fastBatchNormBackward: batchNormBackward,
};
