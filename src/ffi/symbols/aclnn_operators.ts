/**
 * Every aclnn operator this package calls, declared once: the library that exports it, its
 * phase-1 parameters (`aclnnXGetWorkspaceSize`, before `uint64_t *workspaceSize,
 * aclOpExecutor **executor`) in the C prototype's order, each with its name in CANN's header and
 * how it is passed, whether some supported release lacks it, and the header it comes from.
 * Phase 2 (`aclnnX(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
 * aclrtStream stream)`) is the same for all. From this table derive the symbol tables that
 * `Deno.dlopen` takes (opapi.ts), the Ascend backend's calls by parameter name
 * (ffi/aclnn_call.ts), and the ABI test's comparison with the headers (cann_abi.json).
 *
 * A parameter's kinds and the declaration's fields are in aclnn_declaration.ts.
 *
 * @module
 */

import { ACLNN_FAMILY_OPERATORS } from "./aclnn_operators_family.ts";
import type { AclnnOperatorDeclaration } from "./aclnn_declaration.ts";

export type { AclnnOperatorDeclaration, AclnnParamKind } from "./aclnn_declaration.ts";

/**
 * The operators (module doc): the family's (aclnn_operators_family.ts), then the later ones,
 * which a release without them must still load past (optional).
 */
export const ACLNN_OPERATORS = {
  ...ACLNN_FAMILY_OPERATORS,
  // Issue 39's operators: newer than aclnnAddRmsNorm.
  aclnnGemmaRmsNorm: {
    library: "nn",
    header:
      "aclnnop/aclnn_gemma_rms_norm.h (generated; ops-nn norm/gemma_rms_norm/docs/aclnnGemmaRmsNorm.md, gemma_rms_norm_def.cpp)",
    optional: true,
    params: [
      ["x", "tensor"],
      ["gamma", "tensor"],
      ["epsilon", "f64"],
      ["yOut", "output"],
      ["rstdOut", "output"],
    ],
  },
  aclnnInplaceAddRmsNorm: {
    library: "nn",
    header:
      "aclnnop/aclnn_inplace_add_rms_norm.h (generated; ops-nn norm/inplace_add_rms_norm/docs/aclnnInplaceAddRmsNorm.md)",
    optional: true,
    params: [
      ["x1Ref", "tensor"],
      ["x2Ref", "tensor"],
      ["gamma", "tensor"],
      ["epsilon", "f64"],
      ["rstdOut", "output"],
    ],
  },
  aclnnBatchNormReduce: {
    library: "nn",
    header: "ops-nn norm/bn_training_reduce/op_api/aclnn_batch_norm_reduce.h",
    optional: true,
    params: [
      ["x", "tensor"],
      ["sum", "output"],
      ["squareSum", "output"],
    ],
  },
  aclnnSyncBatchNormGatherStats: {
    library: "nn",
    header: "ops-nn norm/sync_batch_norm_gather_stats/op_api/aclnn_sync_batch_norm_gather_stats.h",
    optional: true,
    params: [
      ["totalSum", "tensor"],
      ["totalSquareSum", "tensor"],
      ["sampleCount", "tensor"],
      ["mean", "tensor"],
      ["variance", "tensor"],
      ["momentum", "f32"],
      ["eps", "f32"],
      ["batchMean", "output"],
      ["batchInvstd", "output"],
    ],
  },
  // version is a C int that CANN only logs.
  aclnnFastBatchNormBackward: {
    library: "nn",
    header: "ops-nn norm/batch_norm_grad_v3/op_host/op_api/aclnn_fast_batch_norm_backward.h",
    optional: true,
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
      ["version", "i32"],
      ["gradInput", "output"],
      ["gradWeight", "output"],
      ["gradBias", "output"],
    ],
  },
  // Generated headers (ops-nn add_layer_norm_def.cpp, deep_norm_def.cpp): inputs, then
  // attributes, then outputs.
  aclnnAddLayerNorm: {
    library: "nn",
    header:
      "aclnnop/aclnn_add_layer_norm.h (generated; ops-nn norm/add_layer_norm/op_host/add_layer_norm_def.cpp)",
    optional: true,
    params: [
      ["x1", "tensor"],
      ["x2", "tensor"],
      ["gamma", "tensor"],
      ["beta", "tensor"],
      ["biasOptional", "tensor"],
      ["epsilon", "f64"],
      ["additionalOutput", "bool"],
      ["yOut", "output"],
      ["meanOut", "output"],
      ["rstdOut", "output"],
      ["xOut", "output"],
    ],
  },
  aclnnDeepNorm: {
    library: "nn",
    header:
      "aclnnop/aclnn_deep_norm.h (generated; ops-nn norm/deep_norm/op_host/deep_norm_def.cpp)",
    optional: true,
    params: [
      ["x", "tensor"],
      ["gx", "tensor"],
      ["beta", "tensor"],
      ["gamma", "tensor"],
      ["alpha", "f64"],
      ["epsilon", "f64"],
      ["meanOut", "output"],
      ["rstdOut", "output"],
      ["yOut", "output"],
    ],
  },
  aclnnInstanceNorm: {
    library: "nn",
    header:
      "ops-nn norm/instance_norm_v3/op_host/op_api/aclnn_instance_norm.h (Atlas inference only)",
    optional: true,
    params: [
      ["x", "tensor"],
      ["gamma", "tensor"],
      ["beta", "tensor"],
      ["dataFormat", "string"],
      ["eps", "f64"],
      ["y", "output"],
      ["mean", "output"],
      ["variance", "output"],
    ],
  },
  aclnnAddLayerNormGrad: {
    library: "nn",
    header:
      "aclnnop/aclnn_add_layer_norm_grad.h (generated; ops-nn norm/add_layer_norm_grad/op_host/add_layer_norm_grad_def.cpp)",
    optional: true,
    params: [
      ["dy", "tensor"],
      ["x1", "tensor"],
      ["x2", "tensor"],
      ["rstd", "tensor"],
      ["mean", "tensor"],
      ["gamma", "tensor"],
      ["dsumOptional", "tensor"],
      ["dxOut", "output"],
      ["dgammaOut", "output"],
      ["dbetaOut", "output"],
    ],
  },
  aclnnDeepNormGrad: {
    library: "nn",
    header:
      "aclnnop/aclnn_deep_norm_grad.h (generated; ops-nn norm/deep_norm_grad/op_host/deep_norm_grad_def.cpp)",
    optional: true,
    params: [
      ["dy", "tensor"],
      ["x", "tensor"],
      ["gx", "tensor"],
      ["gamma", "tensor"],
      ["mean", "tensor"],
      ["rstd", "tensor"],
      ["alpha", "f64"],
      ["dxOut", "output"],
      ["dgxOut", "output"],
      ["dbetaOut", "output"],
      ["dgammaOut", "output"],
    ],
  },
  aclnnAddRmsNormCast: {
    library: "nn",
    header:
      "aclnnop/aclnn_add_rms_norm_cast.h (generated; ops-nn norm/add_rms_norm_cast/docs/aclnnAddRmsNormCast.md, add_rms_norm_cast_def.cpp)",
    optional: true,
    params: [
      ["x1", "tensor"],
      ["x2", "tensor"],
      ["gamma", "tensor"],
      ["epsilon", "f64"],
      ["y1Out", "output"],
      ["y2Out", "output"],
      ["rstdOut", "output"],
      ["xOut", "output"],
    ],
  },
  aclnnAdaLayerNorm: {
    library: "nn",
    header: "ops-nn norm/ada_layer_norm/op_host/op_api/aclnn_ada_layer_norm.h",
    optional: true,
    params: [
      ["x", "tensor"],
      ["scale", "tensor"],
      ["shift", "tensor"],
      ["weightOptional", "tensor"],
      ["biasOptional", "tensor"],
      ["epsilon", "f64"],
      ["out", "output"],
    ],
  },
  aclnnAdaLayerNormV2: {
    library: "nn",
    header: "ops-nn norm/ada_layer_norm_v2/op_host/op_api/aclnn_ada_layer_norm_v2.h",
    optional: true,
    params: [
      ["x", "tensor"],
      ["scale", "tensor"],
      ["shift", "tensor"],
      ["weightOptional", "tensor"],
      ["biasOptional", "tensor"],
      ["epsilon", "f64"],
      ["out", "output"],
      ["meanOutOptional", "output"],
      ["rstdOutOptional", "output"],
    ],
  },
  aclnnAdaLayerNormBackward: {
    library: "nn",
    header: "ops-nn norm/ada_layer_norm_grad/op_host/op_api/aclnn_ada_layer_norm_backward.h",
    optional: true,
    params: [
      ["gradOut", "tensor"],
      ["input", "tensor"],
      ["normalizedShape", "intArray"],
      ["rstd", "tensor"],
      ["mean", "tensor"],
      ["scale", "tensor"],
      ["shift", "tensor"],
      ["weightOptional", "tensor"],
      ["biasOptional", "tensor"],
      ["gradInputOut", "output"],
      ["gradScaleOut", "output"],
      ["gradShiftOut", "output"],
      ["gradWeightOut", "output"],
      ["gradBiasOut", "output"],
    ],
  },
  // ops-nn norm/group_norm_silu/op_host/op_api/aclnn_group_norm_silu.h (hand-written).
  aclnnGroupNormSilu: {
    library: "nn",
    header: "aclnnop/aclnn_group_norm_silu.h",
    optional: true,
    params: [
      ["self", "tensor"],
      ["gamma", "tensor"],
      ["beta", "tensor"],
      ["group", "i64"],
      ["eps", "f64"],
      ["out", "output"],
      ["meanOut", "output"],
      ["rstdOut", "output"],
    ],
  },
  aclnnGroupNormSiluV2: {
    library: "nn",
    header: "aclnnop/aclnn_group_norm_silu.h",
    optional: true,
    params: [
      ["self", "tensor"],
      ["gamma", "tensor"],
      ["beta", "tensor"],
      ["group", "i64"],
      ["eps", "f64"],
      ["activateSilu", "bool"],
      ["out", "output"],
      ["meanOut", "output"],
      ["rstdOut", "output"],
    ],
  },
  // Generated header (ops-nn group_norm_swish_def.cpp): inputs, attributes, outputs.
  aclnnGroupNormSwish: {
    library: "nn",
    header:
      "aclnnop/aclnn_group_norm_swish.h (generated; ops-nn norm/group_norm_swish/op_host/group_norm_swish_def.cpp)",
    optional: true,
    params: [
      ["x", "tensor"],
      ["gamma", "tensor"],
      ["beta", "tensor"],
      ["numGroups", "i64"],
      ["dataFormatOptional", "string"],
      ["eps", "f64"],
      ["activateSwish", "bool"],
      ["swishScale", "f64"],
      ["yOut", "output"],
      ["meanOut", "output"],
      ["rstdOut", "output"],
    ],
  },
  // aclnnLayerNorm's prototype (ops-nn norm/layer_norm_v4/op_host/op_api/aclnn_layer_norm.h);
  // documented for Atlas A2/A3 only, so absent from older or other releases.
  aclnnFastLayerNorm: {
    library: "nn",
    header: "ops-nn norm/layer_norm_v4/op_host/op_api/aclnn_layer_norm.h",
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
    ],
  },
  // Generated header (ops-nn group_norm_swish_grad_def.cpp): inputs, attributes, outputs.
  aclnnGroupNormSwishGrad: {
    library: "nn",
    header:
      "aclnnop/aclnn_group_norm_swish_grad.h (generated; ops-nn norm/group_norm_swish_grad/op_host/group_norm_swish_grad_def.cpp)",
    optional: true,
    params: [
      ["dy", "tensor"],
      ["mean", "tensor"],
      ["rstd", "tensor"],
      ["x", "tensor"],
      ["gamma", "tensor"],
      ["beta", "tensor"],
      ["numGroups", "i64"],
      ["dataFormatOptional", "string"],
      ["swishScale", "f64"],
      ["dgammaIsRequire", "bool"],
      ["dbetaIsRequire", "bool"],
      ["dxOut", "output"],
      ["dgammaOut", "output"],
      ["dbetaOut", "output"],
    ],
  },
} as const satisfies Readonly<Record<string, AclnnOperatorDeclaration>>;

/** The name of an aclnn operator this package calls (its phase-2 symbol). */
export type AclnnOperatorName = keyof typeof ACLNN_OPERATORS;
