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
