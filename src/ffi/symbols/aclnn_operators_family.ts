/**
 * The aclnn operators of the BatchNorm/GroupNorm/LayerNorm/RMSNorm family this package has
 * called since its start (aclnn_operators.ts states what a declaration holds and joins these to
 * the later operators in ACLNN_OPERATORS, the one table).
 *
 * @module
 */

import type { AclnnOperatorDeclaration } from "./aclnn_declaration.ts";

/**
 * Not optional: the family torch_npu has called since 2023-08, in every release this package
 * supports; optional from aclnnLayerNormWithImplMode on, as each entry says.
 */
export const ACLNN_FAMILY_OPERATORS = {
  aclnnBatchNormReduceBackward: {
    library: "nn",
    header: "aclnnop/aclnn_batch_norm_backward_reduce.h",
    params: [
      ["gradOut", "tensor"],
      ["input", "tensor"],
      ["mean", "tensor"],
      ["invstd", "tensor"],
      ["weight", "tensor"],
      ["inputG", "bool"],
      ["weightG", "bool"],
      ["biasG", "bool"],
      ["sumDy", "output"],
      ["sumDyXmu", "output"],
      ["gradWeight", "output"],
      ["gradBias", "output"],
    ],
  },
  aclnnBatchNormElemtBackward: {
    library: "nn",
    header: "aclnnop/aclnn_batch_norm_elemt_backward.h",
    params: [
      ["gradOut", "tensor"],
      ["input", "tensor"],
      ["mean", "tensor"],
      ["invstd", "tensor"],
      ["weight", "tensor"],
      ["sumDy", "tensor"],
      ["sumDyXmu", "tensor"],
      ["counter", "tensor"],
      ["gradInput", "output"],
    ],
  },
  aclnnBatchNormBackward: {
    library: "nn",
    header: "aclnnop/aclnn_batch_norm_backward.h",
    params: [
      ["gradOut", "tensor"],
      ["input", "tensor"],
      ["weight", "tensor"],
      ["runningMean", "tensor"],
      ["runningVar", "tensor"],
      ["saveMean", "tensor"],
      ["saveInvstd", "tensor"],
      ["training", "bool"],
      ["eps", "f64"],
      ["outputMask", "boolArray"],
      ["gradInput", "output"],
      ["gradWeight", "output"],
      ["gradBias", "output"],
    ],
  },
  aclnnBatchNorm: {
    library: "nn",
    header: "aclnnop/aclnn_batch_norm.h",
    params: [
      ["input", "tensor"],
      ["weight", "tensor"],
      ["bias", "tensor"],
      ["runningMean", "tensor"],
      ["runningVar", "tensor"],
      ["training", "bool"],
      ["momentum", "f64"],
      ["eps", "f64"],
      ["output", "output"],
      ["saveMean", "output"],
      ["saveInvstd", "output"],
    ],
  },
  aclnnBatchNormElemt: {
    library: "nn",
    header: "aclnnop/aclnn_batch_norm_elemt.h",
    params: [
      ["input", "tensor"],
      ["weight", "tensor"],
      ["bias", "tensor"],
      ["mean", "tensor"],
      ["invstd", "tensor"],
      ["eps", "f64"],
      ["output", "output"],
    ],
  },
  aclnnBatchNormGatherStatsWithCounts: {
    library: "nn",
    header: "aclnnop/aclnn_batch_norm_gather_stats_with_counts.h",
    params: [
      ["input", "tensor"],
      ["mean", "tensor"],
      ["invstd", "tensor"],
      ["runningMean", "tensor"],
      ["runningVar", "tensor"],
      ["momentum", "f64"],
      ["eps", "f64"],
      ["counts", "tensor"],
      ["meanAll", "output"],
      ["invstdAll", "output"],
    ],
  },
  aclnnGroupNorm: {
    library: "nn",
    header: "aclnnop/aclnn_group_norm.h",
    params: [
      ["self", "tensor"],
      ["gamma", "tensor"],
      ["beta", "tensor"],
      ["N", "i64"],
      ["C", "i64"],
      ["HxW", "i64"],
      ["group", "i64"],
      ["eps", "f64"],
      ["out", "output"],
      ["meanOut", "output"],
      ["rstdOut", "output"],
    ],
  },
  aclnnGroupNormBackward: {
    library: "nn",
    header: "aclnnop/aclnn_group_norm_backward.h",
    params: [
      ["gradOut", "tensor"],
      ["input", "tensor"],
      ["mean", "tensor"],
      ["rstd", "tensor"],
      ["gamma", "tensor"],
      ["N", "i64"],
      ["C", "i64"],
      ["HxW", "i64"],
      ["group", "i64"],
      ["outputMask", "boolArray"],
      ["gradInput", "output"],
      ["gradGammaOut", "output"],
      ["gradBetaOut", "output"],
    ],
  },
  aclnnLayerNorm: {
    library: "nn",
    header: "aclnnop/aclnn_layer_norm.h",
    params: [
      ["input", "tensor"],
      ["normalizedShape", "intArray"],
      ["weightOptional", "tensor"],
      ["biasOptional", "tensor"],
      ["eps", "f64"],
      ["out", "output"],
      ["meanOutOptional", "output"],
      ["rstdOutOptional", "output"],
    ],
  },
  // torch_npu never calls it, and the aclnn reference documents it with aclnnLayerNorm only
  // from CANN 8.0.RC1 on.
  aclnnLayerNormWithImplMode: {
    library: "nn",
    header: "aclnnop/aclnn_layer_norm.h",
    optional: true,
    params: [
      ["input", "tensor"],
      ["normalizedShape", "intArray"],
      ["weightOptional", "tensor"],
      ["biasOptional", "tensor"],
      ["eps", "f64"],
      ["out", "output"],
      ["meanOutOptional", "output"],
      ["rstdOutOptional", "output"],
      ["implMode", "i32"],
    ],
  },
  aclnnLayerNormBackward: {
    library: "nn",
    header: "aclnnop/aclnn_layer_norm_backward.h",
    params: [
      ["gradOut", "tensor"],
      ["input", "tensor"],
      ["normalizedShape", "intArray"],
      ["mean", "tensor"],
      ["rstd", "tensor"],
      ["weightOptional", "tensor"],
      ["biasOptional", "tensor"],
      ["outputMask", "boolArray"],
      ["gradInputOut", "output"],
      ["gradWeightOut", "output"],
      ["gradBiasOut", "output"],
    ],
  },
  // torch_npu calls it since 2023-11 (Ascend/op-plugin ff23cea1); the aclnn reference
  // documents it from CANN 8.0.RC1 on.
  aclnnRmsNorm: {
    library: "nn",
    header: "aclnnop/aclnn_rms_norm.h (generated; ops-nn norm/rms_norm/docs/aclnnRmsNorm.md)",
    optional: true,
    params: [
      ["x", "tensor"],
      ["gamma", "tensor"],
      ["epsilon", "f64"],
      ["yOut", "output"],
      ["rstdOut", "output"],
    ],
  },
  // Same release history as aclnnRmsNorm.
  aclnnRmsNormGrad: {
    library: "nn",
    header:
      "aclnnop/aclnn_rms_norm_grad.h (generated; ops-nn norm/rms_norm_grad/docs/aclnnRmsNormGrad.md)",
    optional: true,
    params: [
      ["dy", "tensor"],
      ["x", "tensor"],
      ["rstd", "tensor"],
      ["gamma", "tensor"],
      ["dxOut", "output"],
      ["dgammaOut", "output"],
    ],
  },
  // torch_npu calls it since 2024-01 (Ascend/op-plugin 63c08675).
  aclnnAddRmsNorm: {
    library: "nn",
    header: "aclnnop/aclnn_add_rms_norm.h",
    optional: true,
    params: [
      ["x1", "tensor"],
      ["x2", "tensor"],
      ["gamma", "tensor"],
      ["epsilon", "f64"],
      ["yOut", "output"],
      ["rstdOut", "output"],
      ["xOut", "output"],
    ],
  },
  aclnnBatchNormStats: {
    library: "math",
    header: "aclnnop/aclnn_batch_norm_stats.h",
    params: [
      ["input", "tensor"],
      ["eps", "f64"],
      ["mean", "output"],
      ["invstd", "output"],
    ],
  },
} as const satisfies Readonly<Record<string, AclnnOperatorDeclaration>>;
