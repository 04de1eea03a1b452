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
