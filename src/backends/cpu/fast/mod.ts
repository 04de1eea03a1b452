/**
 * The streaming CPU kernels: every operator as one or two passes over each tensor's own
 * typed array (no whole-tensor copies), float64 accumulation, one rounding per output, loops
 * specialised for NCHW rows, channels-last pixels and a strided fallback, and work split
 * over the worker pool for large tensors. Empty tensors get CANN's fills; calls the kernels
 * cannot stream as they are (mixed dtypes, outputs that overlap their inputs other than
 * element for element, storages beyond int32 indices) run on scratch copies (staging.ts).
 *
 * @module
 */

import type { Kernels } from "../../types.ts";
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
import { rowKernels } from "../rows/mod.ts";

/** Every operator's streaming kernel. */
export const fastKernels: Kernels = {
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
  // LayerNorm / RMSNorm: rows of the normalized dims (cpu/rows).
  ...rowKernels,
};
