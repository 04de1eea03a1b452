/**
 * The tests' one float64 oracle: independent float64 implementations of every operator of
 * the package, written from the formulas of the seed documents and the operators' JSDoc, over
 * logical row-major float64 data (what `Tensor.toFloat64Array()` returns). Its formulas share
 * no code with `src/`; the tests read tensors into Float64Arrays and compare the kernels'
 * results with these under the one tolerance table (tests/helpers/tolerance.ts).
 *
 * Every function takes the inputs exactly as the operator receives them (already rounded to
 * their dtype), so a correct kernel differs from the oracle only by the final rounding of its
 * outputs (and, on an NPU, fp32 accumulation). Empty batches follow the README's documented
 * values. Gradient formulas are themselves checked against central differences of the
 * forward passes (tests/oracle/self_check.test.ts).
 *
 * `referenceKernels` (kernels/) is the same oracle in the backends' kernel contract
 * (src/backends/types.ts `Kernels`): whole tensors read as float64 (`Tensor.toFloat64Array`),
 * computed by the functions below, each output rounded once (`Tensor.copy_`); the CPU
 * backend's kernel tests and the benchmark's reference column call it.
 * The oracle is not part of the published package and nothing in `src/` imports it
 * (tests/oracle/module_graph.test.ts).
 *
 * @module
 */

export { referenceKernels } from "./kernels/mod.ts";
export { type InstanceNorm64, instanceNorm64 } from "./instance_norm.ts";

export { at, type ChannelSplit, channelSplit, eachElement, orFill } from "./geometry.ts";
export { batchStats64, groupStats64, invstdOf, type Moments } from "./statistics.ts";
export { type BatchNormForward64, batchNormForward64 } from "./batch_norm_forward.ts";
export { dot, numericalGradient } from "./finite_differences.ts";
export { type BatchNormStats64, batchNormStats64 } from "./batch_norm_stats.ts";
export { type BatchNormReduce64, batchNormReduce64 } from "./batch_norm_reduce.ts";
export {
  syncBatchNormGatherStats64,
  type SyncGatherStats64,
  type SyncGatherStatsArgs,
} from "./sync_batch_norm_gather_stats.ts";
export {
  batchNormGatherStatsWithCounts64,
  type GatherStats64,
  type GatherStatsArgs,
} from "./gather_stats.ts";
export { type BatchNorm64, batchNorm64, type BatchNormArgs } from "./batch_norm.ts";
export { batchNormElemt64, type BatchNormElemtArgs } from "./batch_norm_elemt.ts";
export { batchNormElemtBackward64, type ElemtBackwardArgs } from "./batch_norm_elemt_backward.ts";
export { batchNormReduceBackward64, type ReduceBackward64 } from "./batch_norm_reduce_backward.ts";
export {
  type BatchNormBackward64,
  batchNormBackward64,
  type BatchNormBackwardArgs,
  batchNormBackwardAt64,
} from "./batch_norm_backward.ts";
export {
  type InfiniopBackwardArgs,
  infiniopBatchNormBackward64,
} from "./infiniop_batch_norm_backward.ts";
export {
  type GroupNorm64,
  groupNorm64,
  type GroupNormForward64,
  groupNormForward64,
} from "./group_norm.ts";
export { type GroupNormBackward64, groupNormBackward64 } from "./group_norm_backward.ts";
export { type GroupNormSwish64, groupNormSwish64, swish64 } from "./group_norm_silu.ts";
export { type GroupNormSwishGrad64, groupNormSwishGrad64 } from "./group_norm_swish_grad.ts";
export {
  gemmaRmsNorm as gemmaRmsNorm64,
  layerNorm as layerNorm64,
  layerNormBackward as layerNormBackward64,
  type LayerNormGrads,
  type LayerNormResult,
  rmsNorm as rmsNorm64,
  rmsNormBackward as rmsNormBackward64,
  type RmsNormGrads,
  type RmsNormResult,
  rounded,
} from "./row_norms.ts";
export { fusedLayerNorm, type FusedLayerNormResult } from "./fused_layer_norms.ts";
export { adaLayerNorm, addRmsNormCast } from "./ada_layer_norm.ts";
export { type AdaLayerNormGrad, adaLayerNormGrad64 } from "./ada_layer_norm_grad.ts";
export {
  addLayerNormGrad as addLayerNormGrad64,
  type AddLayerNormGrads,
  deepNormGrad as deepNormGrad64,
  type DeepNormGrads,
} from "./fused_layer_norm_grads.ts";
