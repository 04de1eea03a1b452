/**
 * The operators. Each validates its arguments once, then runs the CPU kernel or the NPU
 * dispatch, depending on where its tensors live.
 *
 * @module
 */

export { batchNormReduceBackward } from "./batch_norm_reduce_backward.ts";
export type {
  BatchNormReduceBackwardArgs,
  BatchNormReduceBackwardOut,
  BatchNormReduceBackwardResult,
} from "./batch_norm_reduce_backward.ts";
export type { MaybeTensor } from "./validate.ts";
export { batchNormBackward } from "./batch_norm_backward.ts";
export type {
  BatchNormBackwardArgs,
  BatchNormBackwardOut,
  BatchNormBackwardResult,
} from "./batch_norm_backward.ts";
export { createBatchNormBackwardDescriptor } from "./infiniop_batch_norm_backward.ts";
export type {
  BatchNormBackwardComputeArgs,
  BatchNormBackwardDescriptor,
  BatchNormBackwardDescriptorArgs,
  InfiniopTensorDescriptor,
  TensorOrDescriptor,
} from "./infiniop_batch_norm_backward.ts";
export { groupNormBackward } from "./group_norm_backward.ts";
export type {
  GroupNormBackwardArgs,
  GroupNormBackwardOut,
  GroupNormBackwardResult,
} from "./group_norm_backward.ts";
export { batchNormStats } from "./batch_norm_stats.ts";
export type {
  BatchNormStatsArgs,
  BatchNormStatsOut,
  BatchNormStatsResult,
} from "./batch_norm_stats.ts";
export { batchNormGatherStatsWithCounts } from "./batch_norm_gather_stats_with_counts.ts";
export type {
  BatchNormGatherStatsWithCountsArgs,
  BatchNormGatherStatsWithCountsOut,
  BatchNormGatherStatsWithCountsResult,
} from "./batch_norm_gather_stats_with_counts.ts";
export { batchNormElemtBackward } from "./batch_norm_elemt_backward.ts";
export type {
  BatchNormElemtBackwardArgs,
  BatchNormElemtBackwardOut,
} from "./batch_norm_elemt_backward.ts";
export { batchNormElemt } from "./batch_norm_elemt.ts";
export type { BatchNormElemtArgs, BatchNormElemtOut } from "./batch_norm_elemt.ts";
export { batchNorm } from "./batch_norm.ts";
export type { BatchNormArgs, BatchNormOut, BatchNormResult } from "./batch_norm.ts";
export { groupNorm } from "./group_norm.ts";
export { groupNormSilu, groupNormSiluV2 } from "./group_norm_silu.ts";
export { groupNormSwish } from "./group_norm_swish.ts";
export { groupNormSwishGrad } from "./group_norm_swish_grad.ts";
export type {
  GroupNormSwishGradArgs,
  GroupNormSwishGradOut,
  GroupNormSwishGradResult,
} from "./group_norm_swish_grad.ts";
export type {
  GroupNormSwishArgs,
  GroupNormSwishOut,
  GroupNormSwishResult,
} from "./group_norm_swish.ts";
export type {
  GroupNormSiluArgs,
  GroupNormSiluOut,
  GroupNormSiluResult,
  GroupNormSiluV2Args,
} from "./group_norm_silu.ts";
export type { GroupNormArgs, GroupNormOut, GroupNormResult } from "./group_norm.ts";
export { instanceNorm } from "./instance_norm.ts";
export type { InstanceNormArgs, InstanceNormOut, InstanceNormResult } from "./instance_norm.ts";
export { syncBatchNormBackward, syncBatchNormForward } from "./sync_batch_norm.ts";
export type {
  AllGather,
  AllReduceSum,
  CollectiveCall,
  SyncBatchNormBackwardArgs,
  SyncBatchNormBackwardResult,
  SyncBatchNormCollectives,
  SyncBatchNormForwardArgs,
  SyncBatchNormForwardResult,
} from "./sync_batch_norm.ts";
export { layerNorm } from "./layer_norm.ts";
export type { LayerNormArgs, LayerNormOut, LayerNormResult } from "./layer_norm.ts";
export { layerNormBackward } from "./layer_norm_backward.ts";
export type {
  LayerNormBackwardArgs,
  LayerNormBackwardOut,
  LayerNormBackwardResult,
} from "./layer_norm_backward.ts";
export { rmsNorm } from "./rms_norm.ts";
export type { RmsNormArgs, RmsNormOut, RmsNormResult } from "./rms_norm.ts";
export { rmsNormGrad } from "./rms_norm_grad.ts";
export type { RmsNormGradArgs, RmsNormGradOut, RmsNormGradResult } from "./rms_norm_grad.ts";
export { addRmsNorm } from "./add_rms_norm.ts";
export type { AddRmsNormArgs, AddRmsNormOut, AddRmsNormResult } from "./add_rms_norm.ts";
export { gemmaRmsNorm } from "./gemma_rms_norm.ts";
export type { GemmaRmsNormArgs, GemmaRmsNormOut, GemmaRmsNormResult } from "./gemma_rms_norm.ts";
export { inplaceAddRmsNorm } from "./inplace_add_rms_norm.ts";
export type {
  InplaceAddRmsNormArgs,
  InplaceAddRmsNormOut,
  InplaceAddRmsNormResult,
} from "./inplace_add_rms_norm.ts";
export { batchNormReduce } from "./batch_norm_reduce.ts";
export type {
  BatchNormReduceArgs,
  BatchNormReduceOut,
  BatchNormReduceResult,
} from "./batch_norm_reduce.ts";
export { syncBatchNormGatherStats } from "./sync_batch_norm_gather_stats.ts";
export type {
  SyncBatchNormGatherStatsArgs,
  SyncBatchNormGatherStatsOut,
  SyncBatchNormGatherStatsResult,
} from "./sync_batch_norm_gather_stats.ts";
export { addLayerNorm } from "./add_layer_norm.ts";
export type { AddLayerNormArgs, AddLayerNormOut, AddLayerNormResult } from "./add_layer_norm.ts";
export { deepNorm } from "./deep_norm.ts";
export type { DeepNormArgs, DeepNormOut, DeepNormResult } from "./deep_norm.ts";
export { fastBatchNormBackward } from "./fast_batch_norm_backward.ts";
export type {
  FastBatchNormBackwardArgs,
  FastBatchNormBackwardOut,
  FastBatchNormBackwardResult,
} from "./fast_batch_norm_backward.ts";
export { addRmsNormCast } from "./add_rms_norm_cast.ts";
export type {
  AddRmsNormCastArgs,
  AddRmsNormCastOut,
  AddRmsNormCastResult,
} from "./add_rms_norm_cast.ts";
export { adaLayerNorm } from "./ada_layer_norm.ts";
export type { AdaLayerNormArgs, AdaLayerNormOut, AdaLayerNormResult } from "./ada_layer_norm.ts";
export type { AdaLayerNormInputs } from "./ada_layer_norm_checks.ts";
export { adaLayerNormV2 } from "./ada_layer_norm_v2.ts";
export { adaLayerNormBackward } from "./ada_layer_norm_backward.ts";
export type {
  AdaLayerNormBackwardArgs,
  AdaLayerNormBackwardOut,
  AdaLayerNormBackwardResult,
} from "./ada_layer_norm_backward.ts";
export type {
  AdaLayerNormV2Args,
  AdaLayerNormV2Out,
  AdaLayerNormV2Result,
} from "./ada_layer_norm_v2.ts";
export { addLayerNormGrad } from "./add_layer_norm_grad.ts";
export type {
  AddLayerNormGradArgs,
  AddLayerNormGradOut,
  AddLayerNormGradResult,
} from "./add_layer_norm_grad.ts";
export { deepNormGrad } from "./deep_norm_grad.ts";
export type { DeepNormGradArgs, DeepNormGradOut, DeepNormGradResult } from "./deep_norm_grad.ts";
export { fastLayerNorm } from "./fast_layer_norm.ts";
export type {
  FastLayerNormArgs,
  FastLayerNormOut,
  FastLayerNormResult,
} from "./fast_layer_norm.ts";
