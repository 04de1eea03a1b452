/**
 * The float64 oracle in the backends' kernel contract: each kernel reads its tensors whole as
 * float64 (logical order), computes with the oracle's functions (tests/oracle) and rounds each
 * result once into its output. The CPU backend's kernels are tested against these, and
 * bench/cpu_compare.ts times them as its reference column.
 *
 * @module
 */

import type { Kernels } from "../../../src/backends/types.ts";
import {
  batchNormBackward,
  batchNormElemtBackward,
  batchNormReduceBackward,
} from "./batch_norm_backward.ts";
import {
  batchNorm,
  batchNormElemt,
  batchNormGatherStatsWithCounts,
  batchNormStats,
} from "./batch_norm_forward.ts";
import { addLayerNorm, deepNorm } from "./fused_layer_norms.ts";
import { adaLayerNorm, adaLayerNormBackward, addRmsNormCast } from "./ada_layer_norm.ts";
import { addLayerNormGrad, deepNormGrad } from "./fused_layer_norm_grads.ts";
import { groupNorm, groupNormBackward } from "./group_norm.ts";
import { groupNormSilu, groupNormSwish, groupNormSwishGrad } from "./group_norm_act.ts";
import {
  addRmsNorm,
  gemmaRmsNorm,
  inplaceAddRmsNorm,
  layerNorm,
  layerNormBackward,
  rmsNorm,
  rmsNormGrad,
} from "./row_norms.ts";
import { batchNormReduce, syncBatchNormGatherStats } from "./batch_norm_family.ts";
import { instanceNorm } from "./instance_norm.ts";

/** Every operator's float64 oracle kernel. */
export const referenceKernels: Kernels = {
  batchNormReduceBackward,
  batchNormBackward,
  groupNormBackward,
  batchNormStats,
  batchNormGatherStatsWithCounts,
  batchNormElemt,
  batchNormElemtBackward,
  batchNorm,
  groupNorm,
  instanceNorm,
  layerNorm,
  layerNormBackward,
  rmsNorm,
  rmsNormGrad,
  addRmsNorm,
  gemmaRmsNorm,
  inplaceAddRmsNorm,
  batchNormReduce,
  syncBatchNormGatherStats,
  addLayerNorm,
  deepNorm,
  // aclnnFastBatchNormBackward computes aclnnBatchNormBackward's gradients (same oracle).
  addRmsNormCast,
  adaLayerNorm,
  adaLayerNormV2: adaLayerNorm,
  adaLayerNormBackward,
  fastBatchNormBackward: batchNormBackward,
  addLayerNormGrad,
  deepNormGrad,
  groupNormSilu,
  groupNormSiluV2: groupNormSilu,
  groupNormSwish,
  // aclnnFastLayerNorm computes aclnnLayerNorm's output and statistics (same oracle).
  fastLayerNorm: layerNorm,
  groupNormSwishGrad,
};
