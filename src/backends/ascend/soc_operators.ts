/**
 * Where each aclnn operator this package calls runs, declared once: one entry per operator, keyed
 * by its name in the declarations (`src/ffi/symbols/aclnn_operators.ts`; the type checker refuses
 * a declared operator without an entry, and an entry of no declared operator), with the CANN
 * sources of its facts beside it. An entry gives:
 * - `group`: the operator's kernel family, whose `*Kernels` interface in `src/backends/` holds its
 *   kernel's signature; it picks the chip rules beyond products and bfloat16 that `rules.ts` runs
 *   (`rowNorm`: `row_norm_rules.ts`, `groupNormAct`: `soc_group_norm_act.ts`, aclnnGroupNorm(Backward)
 *   by name) and the lists `soc.ts` exports (`ROW_NORM_OPERATORS`);
 * - `products`: the families (`soc_families.ts`, by name) whose products the operator's
 *   documentation lists as supported ("产品支持情况" of hicann/ops-nn `norm/<op>/docs/aclnn<Op>.md`);
 *   a call on a device of any other family is refused with 161002 naming the SoC;
 * - `bf16`: where it takes bfloat16 tensors, within its products (see {@linkcode Bf16Rule}); a
 *   bfloat16 tensor anywhere else is refused with 161002 naming the argument and the SoC.
 *
 * `soc.ts` derives from this table, once when it loads, `SOC_OPERATORS`, `ROW_NORM_OPERATORS`,
 * `operatorSupported` and `bf16Allowed`; docs/npu.md's per-operator tables are checked against it
 * (tests/tools/npu_docs.test.ts). The software CANN keeps its own facts, read from the same sources
 * and never from this table, and `tests/software_cann/platform.test.ts` restates them from CANN's
 * sources, so that both check it.
 *
 * Sources: hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921 (`norm/<op>/docs`, `op_host`),
 * hicann/ops-math `math/reduce_std_with_mean/op_api/aclnn_batch_norm_stats.cpp`; NpuArch values
 * from hicann/runtime's platform files (DAV_2201: Atlas A2/A3; DAV_3510, "regbase": Ascend
 * 950/350). No document of an operator on this table names Ascend 350 but the nine seed
 * BatchNorm/GroupNorm operators', which refuse only the Atlas 200I/500 A2 inference products and
 * (but aclnnBatchNorm and aclnnGroupNorm) the Atlas inference series.
 *
 * @module
 */

import type { AclnnOperatorName } from "../../ffi/symbols/aclnn_operators.ts";
import type { SocFamilyName } from "./soc_families.ts";

/**
 * An operator's kernel family: `batchNorm` (`batch_norm_types.ts`), `batchNormFamily`
 * (`batch_norm_family_types.ts`), `groupNorm` (`group_norm_types.ts`), `groupNormAct`
 * (`group_norm_act_types.ts`), `rowNorm` (`row_norm_types.ts`).
 */
export type SocOperatorGroup =
  | "batchNorm"
  | "batchNormFamily"
  | "groupNorm"
  | "groupNormAct"
  | "rowNorm";

/**
 * Where an operator takes bfloat16, within its products: `everywhere`, `nowhere`, on the families
 * whose NpuArch (as the device's platform file gives it) is in `npuArch` or whose name is in
 * `families` (either list), or on every family but those of `exceptFamilies`.
 */
export type Bf16Rule =
  | "everywhere"
  | "nowhere"
  | { readonly npuArch?: readonly number[]; readonly families?: readonly SocFamilyName[] }
  | { readonly exceptFamilies: readonly SocFamilyName[] };

/** One operator's entry (module doc). */
export interface SocSupportDeclaration {
  /** Its kernel family. */
  readonly group: SocOperatorGroup;
  /** The families its documentation lists as supported. */
  readonly products: readonly SocFamilyName[];
  /** Where it takes bfloat16. */
  readonly bf16: Bf16Rule;
}

/**
 * The declared operators no kernel calls, so no chip rule applies to them: bound only because
 * every function of the ABI reference is (aclnnLayerNormWithImplMode; torch_npu never calls it).
 */
export type BoundOnlyOperator = "aclnnLayerNormWithImplMode";

/** Every called operator's chip support (module doc), in the order of `SOC_OPERATORS`. */
export const SOC_SUPPORT = {
  // The seed BatchNorm operators. Products: every documentation table refuses the Atlas 200I/500
  // A2 inference products (aclnnBatchNorm's code: "support for npuArch 3002 is not implemented")
  // and, but for aclnnBatchNorm (and aclnnGroupNorm), the Atlas inference series (ops-nn
  // norm/<op>/docs/aclnn<Op>.md).
  // bfloat16: aclnn_batch_norm.cpp GetSupportDtypeList, aclnn_batch_norm_backward.cpp and
  // aclnn_batch_norm_backward_reduce.cpp GetDtypeSupportList: NpuArch 2201 or 3510.
  aclnnBatchNorm: {
    group: "batchNorm",
    products: ["Ascend910", "Ascend910B", "Ascend910_93", "Ascend310P", "Ascend950", "Ascend350"],
    bf16: { npuArch: [2201, 3510] },
  },
  aclnnBatchNormBackward: {
    group: "batchNorm",
    products: ["Ascend910", "Ascend910B", "Ascend910_93", "Ascend950", "Ascend350"],
    bf16: { npuArch: [2201, 3510] },
  },
  aclnnBatchNormReduceBackward: {
    group: "batchNorm",
    products: ["Ascend910", "Ascend910B", "Ascend910_93", "Ascend950", "Ascend350"],
    bf16: { npuArch: [2201, 3510] },
  },
  // bfloat16 on DAV_3510 only (ops-math aclnn_batch_norm_stats.cpp IsRegBase).
  aclnnBatchNormStats: {
    group: "batchNorm",
    products: ["Ascend910", "Ascend910B", "Ascend910_93", "Ascend950", "Ascend350"],
    bf16: { npuArch: [3510] },
  },
  // bfloat16 where the SocVersion is in [ASCEND910B, ASCEND910E] (CheckSocVersionGe910B; Elemt's
  // CheckDtypeValid): 910B, 910_93 and 950 of the families known here.
  aclnnBatchNormGatherStatsWithCounts: {
    group: "batchNorm",
    products: ["Ascend910", "Ascend910B", "Ascend910_93", "Ascend950", "Ascend350"],
    bf16: { families: ["Ascend910B", "Ascend910_93", "Ascend950"] },
  },
  aclnnBatchNormElemt: {
    group: "batchNorm",
    products: ["Ascend910", "Ascend910B", "Ascend910_93", "Ascend950", "Ascend350"],
    bf16: { families: ["Ascend910B", "Ascend910_93", "Ascend950"] },
  },
  // bfloat16 on SocVersion ASCEND910B or ASCEND910_93, or DAV_3510 (CheckParams).
  aclnnBatchNormElemtBackward: {
    group: "batchNorm",
    products: ["Ascend910", "Ascend910B", "Ascend910_93", "Ascend950", "Ascend350"],
    bf16: { families: ["Ascend910B", "Ascend910_93"], npuArch: [3510] },
  },
  // The seed GroupNorm operators: products as the BatchNorm ones' (aclnnGroupNorm runs on the
  // Atlas inference series too); bfloat16 on NpuArch 2201 or 3510 (aclnn_group_norm.cpp
  // GetDtypeSupportList, aclnn_group_norm_backward.cpp GetDtypeSupportListV2).
  aclnnGroupNorm: {
    group: "groupNorm",
    products: ["Ascend910", "Ascend910B", "Ascend910_93", "Ascend310P", "Ascend950", "Ascend350"],
    bf16: { npuArch: [2201, 3510] },
  },
  aclnnGroupNormBackward: {
    group: "groupNorm",
    products: ["Ascend910", "Ascend910B", "Ascend910_93", "Ascend950", "Ascend350"],
    bf16: { npuArch: [2201, 3510] },
  },
  // SocVersion ASCEND310P only, refused after the parameter checks (instance_norm_v3/op_host/
  // op_api/aclnn_instance_norm.cpp CheckPlatform); ASCEND310P_DTYPE_SUPPORT_LIST: FLOAT, FLOAT16.
  aclnnInstanceNorm: { group: "groupNorm", products: ["Ascend310P"], bf16: "nowhere" },

  // The LayerNorm / RMSNorm operators (normalized trailing dims).
  // layer_norm_v4/docs/aclnnLayerNorm&aclnnLayerNormWithImplMode.md: 950, A3, A2, Atlas training,
  // Atlas 200I/500 A2; not the Atlas inference series. bfloat16: NpuArch 2201 or 3510
  // (layer_norm_v4/op_host/op_api/aclnn_layer_norm.cpp GetDtypeSupportList).
  aclnnLayerNorm: {
    group: "rowNorm",
    products: ["Ascend950", "Ascend910_93", "Ascend910B", "Ascend910", "Ascend310B"],
    bf16: { npuArch: [2201, 3510] },
  },
  // layer_norm_grad_v3/docs/aclnnLayerNormBackward.md: 950, A3, A2, 910, 310P; not 310B. The
  // code's dtype list has BF16 everywhere, but the document refuses it on the Atlas training and
  // inference series ("不支持BFLOAT16"): followed.
  aclnnLayerNormBackward: {
    group: "rowNorm",
    products: ["Ascend950", "Ascend910_93", "Ascend910B", "Ascend910", "Ascend310P"],
    bf16: { exceptFamilies: ["Ascend910", "Ascend310P"] },
  },
  // rms_norm/docs/aclnnRmsNorm.md, rms_norm_grad/docs/aclnnRmsNormGrad.md: 950, A3, A2, 310P; not
  // 910 (whose OpDef registers a binary the docs disown), not 310B. bfloat16: the OpDef rows of
  // ascend910b, ascend910_93 and ascend950 have BF16, config_without_bf16 (ascend310p, ascend910)
  // not (rms_norm/op_host/rms_norm_def.cpp, rms_norm_grad/op_host/rms_norm_grad_def.cpp).
  aclnnRmsNorm: {
    group: "rowNorm",
    products: ["Ascend950", "Ascend910_93", "Ascend910B", "Ascend310P"],
    bf16: { families: ["Ascend910B", "Ascend910_93", "Ascend950"] },
  },
  aclnnRmsNormGrad: {
    group: "rowNorm",
    products: ["Ascend950", "Ascend910_93", "Ascend910B", "Ascend310P"],
    bf16: { families: ["Ascend910B", "Ascend910_93", "Ascend950"] },
  },
  // add_rms_norm/docs/aclnnAddRmsNorm.md: 950, A3, A2, 310P. bfloat16: every SocVersion but
  // ASCEND310P (add_rms_norm/op_host/op_api/aclnn_add_rms_norm.cpp CheckDtypeValid,
  // ASCEND310P_DTYPE_SUPPORT_LIST).
  aclnnAddRmsNorm: {
    group: "rowNorm",
    products: ["Ascend950", "Ascend910_93", "Ascend910B", "Ascend310P"],
    bf16: { exceptFamilies: ["Ascend310P"] },
  },
  // gemma_rms_norm/docs/aclnnGemmaRmsNorm.md: 950, A3, A2 (its OpDef registers ascend910b,
  // ascend910_93 and ascend950 only: gemma_rms_norm/op_host/gemma_rms_norm_def.cpp:46-80), each
  // configuration with BF16 rows (:22-43, :53-80).
  aclnnGemmaRmsNorm: {
    group: "rowNorm",
    products: ["Ascend950", "Ascend910_93", "Ascend910B"],
    bf16: "everywhere",
  },
  // inplace_add_rms_norm/docs/aclnnInplaceAddRmsNorm.md: 950, A3, A2, 310P. bfloat16: every
  // configuration but config310P (FLOAT16/FLOAT only: op_host/inplace_add_rms_norm_def.cpp:64-104).
  aclnnInplaceAddRmsNorm: {
    group: "rowNorm",
    products: ["Ascend950", "Ascend910_93", "Ascend910B", "Ascend310P"],
    bf16: { exceptFamilies: ["Ascend310P"] },
  },
  // add_layer_norm/docs/aclnnAddLayerNorm.md, deep_norm/docs/aclnnDeepNorm.md: 950, A3, A2, 310P.
  // bfloat16: the OpDef rows of ascend910b, ascend910_93 and ascend950 have BF16, ascend310p's
  // not (add_layer_norm/op_host/add_layer_norm_def.cpp:32-216, deep_norm/op_host/deep_norm_def.cpp).
  aclnnAddLayerNorm: {
    group: "rowNorm",
    products: ["Ascend950", "Ascend910_93", "Ascend910B", "Ascend310P"],
    bf16: { exceptFamilies: ["Ascend310P"] },
  },
  aclnnDeepNorm: {
    group: "rowNorm",
    products: ["Ascend950", "Ascend910_93", "Ascend910B", "Ascend310P"],
    bf16: { exceptFamilies: ["Ascend310P"] },
  },
  // add_rms_norm_cast/docs/aclnnAddRmsNormCast.md: 950, A3, A2 (its OpDef registers ascend910b,
  // ascend910_93, ascend950 and Kirin only: add_rms_norm_cast_def.cpp:73-79), every configuration
  // with BF16 rows (:22-64).
  aclnnAddRmsNormCast: {
    group: "rowNorm",
    products: ["Ascend950", "Ascend910_93", "Ascend910B"],
    bf16: "everywhere",
  },
  // ada_layer_norm/docs/aclnnAdaLayerNorm.md: A3, A2, not 950 (ada_layer_norm_def.cpp:53-54
  // registers ascend910b and ascend910_93); BF16 rows in every configuration.
  aclnnAdaLayerNorm: {
    group: "rowNorm",
    products: ["Ascend910_93", "Ascend910B"],
    bf16: "everywhere",
  },
  // ada_layer_norm_v2/docs/aclnnAdaLayerNormV2.md: 950, A3, A2 (ada_layer_norm_v2_def.cpp:38-58),
  // BF16 rows in every configuration (:18-21).
  aclnnAdaLayerNormV2: {
    group: "rowNorm",
    products: ["Ascend950", "Ascend910_93", "Ascend910B"],
    bf16: "everywhere",
  },
  // add_layer_norm_grad/docs/aclnnAddLayerNormGrad.md, deep_norm_grad/docs/aclnnDeepNormGrad.md:
  // 950, A3, A2, 310P. bfloat16: BF16 rows for ascend910b, ascend910_93 and ascend950, FLOAT/
  // FLOAT16 only for ascend310p (add_layer_norm_grad_def.cpp:23-139, deep_norm_grad_def.cpp:63-128).
  aclnnAddLayerNormGrad: {
    group: "rowNorm",
    products: ["Ascend950", "Ascend910_93", "Ascend910B", "Ascend310P"],
    bf16: { exceptFamilies: ["Ascend310P"] },
  },
  aclnnDeepNormGrad: {
    group: "rowNorm",
    products: ["Ascend950", "Ascend910_93", "Ascend910B", "Ascend310P"],
    bf16: { exceptFamilies: ["Ascend310P"] },
  },
  // layer_norm_v4/docs/aclnnFastLayerNorm.md: A3, A2 only; not 950, 310B, 310P, 910 (its op_api
  // has no gate: aclnn_fast_layer_norm.cpp always runs l0op::LayerNormV4; the document is
  // followed, as for every operator here). FLOAT16, FLOAT, BF16 on every SoC (:50-53).
  aclnnFastLayerNorm: {
    group: "rowNorm",
    products: ["Ascend910_93", "Ascend910B"],
    bf16: "everywhere",
  },
  // ada_layer_norm_grad/docs/aclnnAdaLayerNormBackward.md: A3, A2. Its op_api launches the kernel
  // only on SocVersion ASCEND910B or ASCEND910_93 and returns SUCCESS with nothing written on any
  // other (op_host/op_api/aclnn_ada_layer_norm_backward.cpp:436-455): refused there, naming the
  // SoC. BF16 in its list (:48-49).
  aclnnAdaLayerNormBackward: {
    group: "rowNorm",
    products: ["Ascend910_93", "Ascend910B"],
    bf16: "everywhere",
  },

  // The BatchNorm operators of issue 39. Products: bn_training_reduce/docs/aclnnBatchNormReduce.md,
  // sync_batch_norm_gather_stats/docs/aclnnSyncBatchNormGatherStats.md: 950, A3, A2.
  // bfloat16: aclnn_batch_norm_reduce.cpp DTYPE_SUPPORT_LIST_IN has BF16 on every chip;
  // aclnn_sync_batch_norm_gather_stats.cpp CheckDtypeValid takes it on regbase only.
  aclnnBatchNormReduce: {
    group: "batchNormFamily",
    products: ["Ascend910B", "Ascend910_93", "Ascend950"],
    bf16: "everywhere",
  },
  aclnnSyncBatchNormGatherStats: {
    group: "batchNormFamily",
    products: ["Ascend910B", "Ascend910_93", "Ascend950"],
    bf16: { npuArch: [3510] },
  },
  // batch_norm_grad_v3/docs/aclnnFastBatchNormBackward.md: Atlas A2 only (950, A3, 310B, 310P and
  // 910 marked unsupported). Followed, although its code has no product gate
  // (aclnn_fast_batch_norm_backward.cpp runs BatchNormGradV3 on 910B and 910_93, the
  // BNTrainingUpdateGrad / BNTrainingReduceGrad path elsewhere). Its GetDtypeSupportList has BF16
  // on every SoC (its condition `>= ASCEND910B || <= ASCEND910E` always holds).
  aclnnFastBatchNormBackward: {
    group: "batchNormFamily",
    products: ["Ascend910B"],
    bf16: "everywhere",
  },

  // The activated GroupNorm operators of issue 39 (docs/norm_family_kernels.md sections 9, 10).
  // group_norm_silu/docs/aclnnGroupNormSilu.md, aclnnGroupNormSiluV2.md: 950, A3, A2, 310P.
  // bfloat16 on DAV_2201 or regbase (op_host/op_api/aclnn_group_norm_silu.cpp:64-71).
  aclnnGroupNormSilu: {
    group: "groupNormAct",
    products: ["Ascend910B", "Ascend910_93", "Ascend950", "Ascend310P"],
    bf16: { npuArch: [2201, 3510] },
  },
  aclnnGroupNormSiluV2: {
    group: "groupNormAct",
    products: ["Ascend910B", "Ascend910_93", "Ascend950", "Ascend310P"],
    bf16: { npuArch: [2201, 3510] },
  },
  // group_norm_swish/docs/aclnnGroupNormSwish.md: 950, A3, A2 (its OpDef registers no
  // ascend310p); BF16 rows in every configuration (op_host/group_norm_swish_def.cpp:69-104).
  aclnnGroupNormSwish: {
    group: "groupNormAct",
    products: ["Ascend910B", "Ascend910_93", "Ascend950"],
    bf16: "everywhere",
  },
  // group_norm_swish_grad/docs/aclnnGroupNormSwishGrad.md: 950, A3, A2
  // (op_host/group_norm_swish_grad_def.cpp:85-93); every tensor one of F32/F16/BF16.
  aclnnGroupNormSwishGrad: {
    group: "groupNormAct",
    products: ["Ascend910B", "Ascend910_93", "Ascend950"],
    bf16: "everywhere",
  },
} as const satisfies {
  readonly [K in Exclude<AclnnOperatorName, BoundOnlyOperator>]: SocSupportDeclaration;
};
