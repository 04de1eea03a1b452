/**
 * The one table of Ascend SoC families and their traits, used by this backend's argument rules
 * and its saveInvstd conversion. The software CANN in tests/sim keeps its own facts, read from
 * the same CANN sources (never from this module), so that a test through it checks this table.
 * A SoC name that is not here is placed by its platform file (see `device_soc.ts`).
 *
 * Sources (hicann repositories, snapshots of 2026-07/08):
 * - SoC names, short versions and NpuArch: hicann/runtime
 *   `src/platform/platform_config/{cann,cann-dev}/<SoC>.ini` ([version] SoC_version,
 *   Short_SoC_version, NpuArch); what `aclrtGetSocName()` returns is SoC_version.
 * - Short version -> op::SocVersion: hicann/opbase `src/nnopbase/composite_op/utils/platform.cpp`
 *   InitSocVersion(); enum values in `include/nnopbase/opdev/platform.h`.
 * - Per-operator dtype lists: hicann/ops-nn `norm/<op>/op_host/op_api/aclnn_<op>.cpp`
 *   (GetSupportDtypeList / GetDtypeSupportList and friends) and hicann/ops-math
 *   `math/reduce_std_with_mean/op_api/aclnn_batch_norm_stats.cpp`; see {@linkcode bf16Allowed}.
 * - saveInvstd convention: ops-nn `norm/batch_norm_v3/docs/aclnnBatchNorm.md` ("saveInvstd
 *   表示input的方差" on Atlas training/inference/A2/A3; "标准差的倒数" on 950), and the
 *   backward kernels' `batch_variance` input (`aclnn_batch_norm_backward.cpp`,
 *   BNTrainingUpdateGrad/BNTrainingReduceGrad).
 *
 * @module
 */

import {
  DAV_2201,
  DAV_3510,
  isRegbase,
  type SocFamily,
  socFamily,
  SocVersion,
} from "./soc_families.ts";
import * as bnFamily from "./soc_batch_norm_family.ts";
import * as gnAct from "./soc_group_norm_act.ts";

/** The LayerNorm / RMSNorm operators (normalized trailing dims). */
export const ROW_NORM_OPERATORS = [
  "aclnnLayerNorm",
  "aclnnLayerNormBackward",
  "aclnnRmsNorm",
  "aclnnRmsNormGrad",
  "aclnnAddRmsNorm",
  "aclnnGemmaRmsNorm",
  "aclnnInplaceAddRmsNorm",
  "aclnnAddLayerNorm",
  "aclnnDeepNorm",
  "aclnnAddRmsNormCast",
  "aclnnAdaLayerNorm",
  "aclnnAdaLayerNormV2",
  "aclnnAddLayerNormGrad",
  "aclnnDeepNormGrad",
  "aclnnFastLayerNorm",
  "aclnnAdaLayerNormBackward",
] as const;

/** The operators whose rules depend on the SoC. */
export const SOC_OPERATORS = [
  "aclnnBatchNorm",
  "aclnnBatchNormBackward",
  "aclnnBatchNormReduceBackward",
  "aclnnBatchNormStats",
  "aclnnBatchNormGatherStatsWithCounts",
  "aclnnBatchNormElemt",
  "aclnnBatchNormElemtBackward",
  "aclnnGroupNorm",
  "aclnnGroupNormBackward",
  "aclnnInstanceNorm",
  ...ROW_NORM_OPERATORS,
  ...bnFamily.BATCH_NORM_FAMILY_OPERATORS,
  ...gnAct.GROUP_NORM_ACT_OPERATORS,
] as const;

/** One of {@linkcode SOC_OPERATORS}. */
export type SocOperator = typeof SOC_OPERATORS[number];

export {
  DAV_3510,
  familyFromPlatform,
  isRegbase,
  SOC_FAMILIES,
  type SocFamily,
  socFamily,
} from "./soc_families.ts";

/**
 * Whether aclnnBatchNorm writes the batch variance Var(x), not 1/sqrt(Var(x) + eps), into its
 * `saveInvstd` output, and aclnnBatchNormBackward reads that slot as Var(x) in training mode:
 * every family but DAV_3510 (BNTrainingUpdate / BatchNormV3 full-reduce write `batch_variance`;
 * BNTrainingUpdateGrad / BNTrainingReduceGrad read it). `soc` is a family or a SoC name of the
 * table; there is no guess for a name of no known family (a RangeError): the backend places
 * such a SoC by its platform file or refuses (`device_soc.ts`).
 *
 * @example
 * ```ts
 * import { batchNormSavesVariance, socFamily } from "@aclnn/norm/ascend";
 * console.log(batchNormSavesVariance(socFamily("Ascend910B4")!)); // true
 * console.log(batchNormSavesVariance("Ascend950PR_9599")); // false
 * ```
 */
export function batchNormSavesVariance(soc: SocFamily | string): boolean {
  const family = typeof soc === "string" ? socFamily(soc) : soc;
  if (!family) {
    throw new RangeError(
      `batchNormSavesVariance: SoC ${soc} is in no known family; place it with its platform ` +
        "file (resolveSocFamily) rather than guess what its saveInvstd holds",
    );
  }
  return !isRegbase(family);
}

/**
 * Whether `op` accepts bfloat16 on `family` (hicann/ops-nn and ops-math, current sources):
 * - NpuArch 2201 or 3510: aclnnBatchNorm (aclnn_batch_norm.cpp GetSupportDtypeList),
 *   aclnnBatchNormBackward (aclnn_batch_norm_backward.cpp GetDtypeSupportList),
 *   aclnnBatchNormReduceBackward (aclnn_batch_norm_backward_reduce.cpp GetDtypeSupportList),
 *   aclnnGroupNorm and aclnnGroupNormBackward (GetDtypeSupportList / GetDtypeSupportListV2);
 * - DAV_3510 only: aclnnBatchNormStats (ops-math aclnn_batch_norm_stats.cpp);
 * - SocVersion in [ASCEND910B, ASCEND910E] (910B, 910_93, 950, 910E):
 *   aclnnBatchNormGatherStatsWithCounts (CheckSocVersionGe910B) and aclnnBatchNormElemt;
 * - SocVersion 910B or 910_93, or DAV_3510: aclnnBatchNormElemtBackward (CheckParams).
 *
 * @example
 * ```ts
 * import { bf16Allowed, socFamily } from "@aclnn/norm/ascend";
 * const a2 = socFamily("Ascend910B4")!;
 * console.log(bf16Allowed("aclnnBatchNorm", a2), bf16Allowed("aclnnBatchNormStats", a2)); // true false
 * ```
 */
export function bf16Allowed(op: SocOperator, family: SocFamily): boolean {
  const arch = family.npuArch;
  const sv = family.socVersion;
  switch (op) {
    case "aclnnBatchNorm":
    case "aclnnBatchNormBackward":
    case "aclnnBatchNormReduceBackward":
    case "aclnnGroupNorm":
    case "aclnnGroupNormBackward":
      return arch === DAV_2201 || arch === DAV_3510;
    case "aclnnBatchNormStats":
      return arch === DAV_3510;
    case "aclnnBatchNormGatherStatsWithCounts":
    case "aclnnBatchNormElemt":
      return sv >= SocVersion.ASCEND910B && sv <= SocVersion.ASCEND910E;
    case "aclnnBatchNormElemtBackward":
      return sv === SocVersion.ASCEND910B || sv === SocVersion.ASCEND910_93 || arch === DAV_3510;
    case "aclnnInstanceNorm": // ASCEND310P_DTYPE_SUPPORT_LIST: FLOAT, FLOAT16 (and 310P only)
      return false;
    case "aclnnLayerNorm":
    case "aclnnLayerNormBackward":
    case "aclnnRmsNorm":
    case "aclnnRmsNormGrad":
    case "aclnnAddRmsNorm":
    case "aclnnGemmaRmsNorm":
    case "aclnnInplaceAddRmsNorm":
    case "aclnnAddRmsNormCast":
    case "aclnnAdaLayerNorm":
    case "aclnnAdaLayerNormV2":
    case "aclnnAdaLayerNormBackward":
    case "aclnnAddLayerNorm":
    case "aclnnDeepNorm":
    case "aclnnAddLayerNormGrad":
    case "aclnnDeepNormGrad":
    case "aclnnFastLayerNorm":
      return normBf16Allowed(op, family);
    case "aclnnGroupNormSilu":
    case "aclnnGroupNormSiluV2":
    case "aclnnGroupNormSwish":
    case "aclnnGroupNormSwishGrad":
      return gnAct.groupNormActBf16(op, family);
    default: // aclnnBatchNormReduce, aclnnSyncBatchNormGatherStats
      return bnFamily.batchNormFamilyBf16(op, family);
  }
}

/**
 * Whether `op` runs on `family` at all. The documentation's "产品支持情况" tables list the
 * Atlas 200I/500 A2 inference products (Ascend310B) as unsupported for all nine operators and
 * the Atlas inference series (Ascend310P) as supported only by aclnnBatchNorm and
 * aclnnGroupNorm (ops-nn norm/<op>/docs/aclnn<Op>.md); aclnnBatchNorm's code rejects
 * NpuArch 3002 with "support for npuArch ... is not implemented".
 * (That is the nine BatchNorm/GroupNorm operators; the LayerNorm/RMSNorm operators follow their
 * own documents: see ROW_NORM_PRODUCTS below.)
 *
 * @example
 * ```ts
 * import { operatorSupported, socFamily } from "@aclnn/norm/ascend";
 * const inference = socFamily("Ascend310P3")!;
 * console.log(operatorSupported("aclnnGroupNorm", inference)); // true
 * console.log(operatorSupported("aclnnBatchNormStats", inference)); // false
 * ```
 */
export function operatorSupported(op: SocOperator, family: SocFamily): boolean {
  if (isRowNormOperator(op)) return rowNormSupported(op, family);
  if (bnFamily.isBatchNormFamilyOperator(op)) return bnFamily.batchNormFamilySupported(op, family);
  // aclnnInstanceNorm: SocVersion ASCEND310P only, refused after the parameter checks
  // (ops-nn norm/instance_norm_v3/op_host/op_api/aclnn_instance_norm.cpp CheckPlatform).
  if (op === "aclnnInstanceNorm") return family.socVersion === SocVersion.ASCEND310P;
  if (gnAct.isGroupNormActOperator(op)) return gnAct.groupNormActSupported(op, family);
  if (family.name === "Ascend310B") return false;
  if (family.name === "Ascend310P") return op === "aclnnBatchNorm" || op === "aclnnGroupNorm";
  return true;
}

/**
 * Whether aclnnGroupNormBackward accepts statistics (mean, rstd, gamma, gradGamma, gradBeta)
 * of another dtype than gradOut: only DAV_3510 (CheckMixPrecisionDtype: float32 with float16 or
 * bfloat16 data); every other architecture requires all of them to equal gradOut's dtype
 * (hicann/ops-nn `norm/group_norm_grad/op_host/op_api/aclnn_group_norm_backward.cpp`
 * CheckDtypeValid 144-172, CheckMixPrecisionDtype 113-142, at e5c3fa932).
 *
 * aclnnGroupNorm has no such trait: it takes no mixed precision on any architecture
 * (`norm/group_norm/op_host/op_api/aclnn_group_norm.cpp` CheckDtypeValid 69-87 has no chip
 * branch), so the operator's own validation refuses it on every backend (`src/ops/group_norm.ts`).
 */
export function groupNormBackwardMixedPrecision(family: SocFamily): boolean {
  return isRegbase(family);
}

/**
 * aclnnGroupNormBackward's hardware limits, enforced by CheckAttr on NpuArch 2201 only:
 * C / group <= 8000 and C <= 240000.
 */
export function groupNormBackwardLimits(
  family: SocFamily,
): { maxChannelsPerGroup: number; maxChannels: number } | undefined {
  return family.npuArch === DAV_2201
    ? { maxChannelsPerGroup: 8000, maxChannels: 240000 }
    : undefined;
}

/** `Ascend910B4 (Atlas A2 training series)`, for messages. */
export function describeSoc(socName: string, family: SocFamily): string {
  return `${socName} (${family.product})`;
}

/** One of {@linkcode ROW_NORM_OPERATORS}. */
export type RowNormOperator = typeof ROW_NORM_OPERATORS[number];

/** Whether `op` is one of {@linkcode ROW_NORM_OPERATORS}. */
export function isRowNormOperator(op: string): op is RowNormOperator {
  return (ROW_NORM_OPERATORS as readonly string[]).includes(op);
}

/**
 * The products each LayerNorm / RMSNorm operator's documentation lists as supported (hicann/ops-nn
 * e5c3fa9, "产品支持情况" of `norm/<op>/docs/aclnn<Op>.md`), by op::SocVersion:
 * - aclnnLayerNorm (`layer_norm_v4/docs/aclnnLayerNorm&aclnnLayerNormWithImplMode.md`): 950, A3,
 *   A2, Atlas training (910), Atlas 200I/500 A2 (310B); not the Atlas inference series (310P);
 * - aclnnLayerNormBackward (`layer_norm_grad_v3/docs/aclnnLayerNormBackward.md`): 950, A3, A2,
 *   910, 310P; not 310B;
 * - aclnnRmsNorm, aclnnRmsNormGrad, aclnnAddRmsNorm (`rms_norm/docs/aclnnRmsNorm.md`,
 *   `rms_norm_grad/docs/aclnnRmsNormGrad.md`, `add_rms_norm/docs/aclnnAddRmsNorm.md`): 950, A3,
 *   A2, 310P; not 910 (whose OpDef registers a binary the docs disown), not 310B;
 * - aclnnGemmaRmsNorm (`gemma_rms_norm/docs/aclnnGemmaRmsNorm.md`): 950, A3, A2; not 310P, 910,
 *   310B (its OpDef registers ascend910b, ascend910_93 and ascend950 only: `gemma_rms_norm/
 *   op_host/gemma_rms_norm_def.cpp:46-80`);
 * - aclnnInplaceAddRmsNorm (`inplace_add_rms_norm/docs/aclnnInplaceAddRmsNorm.md`): 950, A3, A2,
 *   310P; not 910, 310B;
 * - aclnnAddLayerNorm, aclnnDeepNorm (`add_layer_norm/docs/aclnnAddLayerNorm.md`,
 *   `deep_norm/docs/aclnnDeepNorm.md`): 950, A3, A2, 310P; not 910, 310B;
 * - aclnnAddLayerNormGrad, aclnnDeepNormGrad (`add_layer_norm_grad/docs/aclnnAddLayerNormGrad.md`,
 *   `deep_norm_grad/docs/aclnnDeepNormGrad.md`): 950, A3, A2, 310P; not 910, 310B;
 * - aclnnAddRmsNormCast (`add_rms_norm_cast/docs/aclnnAddRmsNormCast.md`; its OpDef registers
 *   ascend910b, ascend910_93, ascend950 and Kirin only: `add_rms_norm_cast_def.cpp:73-79`) and
 *   aclnnAdaLayerNormV2 (`ada_layer_norm_v2/docs/aclnnAdaLayerNormV2.md`, `ada_layer_norm_v2_def.cpp
 *   :38-58`): 950, A3, A2;
 * - aclnnAdaLayerNorm (`ada_layer_norm/docs/aclnnAdaLayerNorm.md`; `ada_layer_norm_def.cpp:53-54`
 *   registers ascend910b and ascend910_93): A3, A2; not 950;
 * - aclnnFastLayerNorm (`layer_norm_v4/docs/aclnnFastLayerNorm.md`): A3, A2 only; not 950, 310B,
 *   310P, 910 (its op_api has no gate: `layer_norm_v4/op_host/op_api/aclnn_fast_layer_norm.cpp`
 *   always runs l0op::LayerNormV4; the document is followed, as for every operator here).
 * - aclnnAdaLayerNormBackward (`ada_layer_norm_grad/docs/aclnnAdaLayerNormBackward.md`): A3, A2.
 *   Its op_api launches the kernel only when the SocVersion is ASCEND910B or ASCEND910_93 and
 *   returns SUCCESS with nothing written on any other
 *   (`op_host/op_api/aclnn_ada_layer_norm_backward.cpp:436-455`): refused there, naming the SoC.
 * No document names Ascend 350 (and no op definition registers `ascend350`): none runs there.
 */
const ROW_NORM_PRODUCTS: Readonly<Record<RowNormOperator, readonly number[]>> = {
  aclnnLayerNorm: [
    SocVersion.ASCEND950,
    SocVersion.ASCEND910_93,
    SocVersion.ASCEND910B,
    SocVersion.ASCEND910,
    SocVersion.ASCEND310B,
  ],
  aclnnLayerNormBackward: [
    SocVersion.ASCEND950,
    SocVersion.ASCEND910_93,
    SocVersion.ASCEND910B,
    SocVersion.ASCEND910,
    SocVersion.ASCEND310P,
  ],
  aclnnRmsNorm: [
    SocVersion.ASCEND950,
    SocVersion.ASCEND910_93,
    SocVersion.ASCEND910B,
    SocVersion.ASCEND310P,
  ],
  aclnnRmsNormGrad: [
    SocVersion.ASCEND950,
    SocVersion.ASCEND910_93,
    SocVersion.ASCEND910B,
    SocVersion.ASCEND310P,
  ],
  aclnnAddRmsNorm: [
    SocVersion.ASCEND950,
    SocVersion.ASCEND910_93,
    SocVersion.ASCEND910B,
    SocVersion.ASCEND310P,
  ],
  aclnnGemmaRmsNorm: [SocVersion.ASCEND950, SocVersion.ASCEND910_93, SocVersion.ASCEND910B],
  aclnnInplaceAddRmsNorm: [
    SocVersion.ASCEND950,
    SocVersion.ASCEND910_93,
    SocVersion.ASCEND910B,
    SocVersion.ASCEND310P,
  ],
  aclnnAddLayerNorm: [
    SocVersion.ASCEND950,
    SocVersion.ASCEND910_93,
    SocVersion.ASCEND910B,
    SocVersion.ASCEND310P,
  ],
  aclnnDeepNorm: [
    SocVersion.ASCEND950,
    SocVersion.ASCEND910_93,
    SocVersion.ASCEND910B,
    SocVersion.ASCEND310P,
  ],
  aclnnAddLayerNormGrad: [
    SocVersion.ASCEND950,
    SocVersion.ASCEND910_93,
    SocVersion.ASCEND910B,
    SocVersion.ASCEND310P,
  ],
  aclnnDeepNormGrad: [
    SocVersion.ASCEND950,
    SocVersion.ASCEND910_93,
    SocVersion.ASCEND910B,
    SocVersion.ASCEND310P,
  ],
  aclnnAddRmsNormCast: [SocVersion.ASCEND950, SocVersion.ASCEND910_93, SocVersion.ASCEND910B],
  aclnnAdaLayerNorm: [SocVersion.ASCEND910_93, SocVersion.ASCEND910B],
  aclnnAdaLayerNormV2: [SocVersion.ASCEND950, SocVersion.ASCEND910_93, SocVersion.ASCEND910B],
  aclnnFastLayerNorm: [SocVersion.ASCEND910_93, SocVersion.ASCEND910B],
  aclnnAdaLayerNormBackward: [SocVersion.ASCEND910_93, SocVersion.ASCEND910B],
};

function rowNormSupported(op: RowNormOperator, family: SocFamily): boolean {
  return ROW_NORM_PRODUCTS[op].includes(family.socVersion);
}

/**
 * bfloat16 of the LayerNorm / RMSNorm operators (hicann/ops-nn e5c3fa9):
 * - aclnnLayerNorm: NpuArch DAV_2201 or DAV_3510 (`layer_norm_v4/op_host/op_api/
 *   aclnn_layer_norm.cpp` GetDtypeSupportList);
 * - aclnnLayerNormBackward: the code's list has BF16 everywhere, but the docs refuse it on the
 *   Atlas training and inference series (`aclnnLayerNormBackward.md`, "不支持BFLOAT16" for 910 and
 *   310P): followed;
 * - aclnnRmsNorm / aclnnRmsNormGrad: the OpDef rows of ascend910b, ascend910_93 and ascend950
 *   have BF16, config_without_bf16 (ascend310p, ascend910) not (`rms_norm/op_host/
 *   rms_norm_def.cpp`, `rms_norm_grad/op_host/rms_norm_grad_def.cpp`);
 * - aclnnAddRmsNorm: every SocVersion but ASCEND310P (`add_rms_norm/op_host/op_api/
 *   aclnn_add_rms_norm.cpp` CheckDtypeValid, ASCEND310P_DTYPE_SUPPORT_LIST);
 * - aclnnGemmaRmsNorm: every configuration of its OpDef has BF16 rows (`gemma_rms_norm_def.cpp`
 *   :22-43 ascend910b / ascend910_93, :53-80 ascend950), and it runs nowhere else;
 * - aclnnInplaceAddRmsNorm: every configuration but config310P (ascend310p, FLOAT16/FLOAT only:
 *   `inplace_add_rms_norm/op_host/inplace_add_rms_norm_def.cpp:64-104`);
 * - aclnnAddLayerNorm, aclnnDeepNorm: the OpDef rows of ascend910b, ascend910_93 and ascend950
 *   have BF16, ascend310p's not (`add_layer_norm/op_host/add_layer_norm_def.cpp:32-216`,
 *   `deep_norm/op_host/deep_norm_def.cpp:47-`);
 * - aclnnAddLayerNormGrad, aclnnDeepNormGrad: likewise, BF16 rows for ascend910b, ascend910_93
 *   and ascend950, FLOAT/FLOAT16 only for ascend310p (`add_layer_norm_grad/op_host/
 *   add_layer_norm_grad_def.cpp:23-139`, `deep_norm_grad/op_host/deep_norm_grad_def.cpp:63-128`);
 * - aclnnAddRmsNormCast, aclnnAdaLayerNorm, aclnnAdaLayerNormV2: every configuration of their
 *   OpDefs has BF16 rows (`add_rms_norm_cast_def.cpp:22-64`, `ada_layer_norm_def.cpp`,
 *   `ada_layer_norm_v2_def.cpp:18-21`), and they run nowhere else;
 * - aclnnFastLayerNorm: FLOAT16, FLOAT, BF16 on every SoC (`aclnn_fast_layer_norm.cpp:50-53`
 *   GetDtypeSupportList has no chip branch), and it runs on A2/A3 only.
 *   `ada_layer_norm_v2_def.cpp:18-21`), and they run nowhere else; aclnnAdaLayerNormBackward's
 *   op_api takes BF16 (`aclnn_ada_layer_norm_backward.cpp:48-49`) on A2/A3, where alone it runs
 *   (`op_host/config/ascend910b`, `ascend910_93` binaries).
 */
function normBf16Allowed(op: RowNormOperator, family: SocFamily): boolean {
  const sv = family.socVersion;
  switch (op) {
    case "aclnnLayerNorm":
      return family.npuArch === DAV_2201 || family.npuArch === DAV_3510;
    case "aclnnLayerNormBackward":
      return sv !== SocVersion.ASCEND910 && sv !== SocVersion.ASCEND310P;
    case "aclnnRmsNorm":
    case "aclnnRmsNormGrad":
      return sv === SocVersion.ASCEND910B || sv === SocVersion.ASCEND910_93 ||
        sv === SocVersion.ASCEND950;
    case "aclnnAddRmsNorm":
    case "aclnnInplaceAddRmsNorm":
    case "aclnnAddLayerNorm":
    case "aclnnDeepNorm":
    case "aclnnAddLayerNormGrad":
    case "aclnnDeepNormGrad":
      return sv !== SocVersion.ASCEND310P;
    case "aclnnGemmaRmsNorm":
    case "aclnnAddRmsNormCast":
    case "aclnnAdaLayerNorm":
    case "aclnnAdaLayerNormV2":
    case "aclnnFastLayerNorm":
    case "aclnnAdaLayerNormBackward":
      return true;
  }
}

/**
 * Whether aclnnRmsNorm / aclnnRmsNormGrad accept a float32 gamma with float16 or bfloat16 data:
 * the OpDef rows `(x FLOAT16|BF16, gamma FLOAT)` exist in the ascend910b, ascend910_93 and
 * ascend950 configurations only; config_without_bf16 (ascend310p) pairs float16 data with a
 * float16 gamma (ops-nn `norm/rms_norm/op_host/rms_norm_def.cpp`,
 * `norm/rms_norm_grad/op_host/rms_norm_grad_def.cpp`).
 *
 * @example
 * ```ts
 * import { rmsNormMixedGamma, socFamily } from "@aclnn/norm/ascend";
 * console.log(rmsNormMixedGamma(socFamily("Ascend910B4")!), rmsNormMixedGamma(socFamily("Ascend310P3")!));
 * // true false
 * ```
 */
export function rmsNormMixedGamma(family: SocFamily): boolean {
  const sv = family.socVersion;
  return sv === SocVersion.ASCEND910B || sv === SocVersion.ASCEND910_93 ||
    sv === SocVersion.ASCEND950;
}

/**
 * Whether aclnnRmsNormGrad runs on inputs of no row (dgamma = 0): only on DAV_3510, whose empty
 * tiling writes a zero dgamma (ops-nn `norm/rms_norm_grad/op_host/rms_norm_grad_empty_tiling.cpp`,
 * `op_kernel/arch35/rms_norm_grad_empty_dgamma.h`); elsewhere the tiling refuses an empty dy
 * ("Parameter dy does not support empty tensor", 561002).
 *
 * @example
 * ```ts
 * import { rmsNormGradEmptyRows, socFamily } from "@aclnn/norm/ascend";
 * console.log(rmsNormGradEmptyRows(socFamily("Ascend910B4")!)); // false
 * ```
 */
export function rmsNormGradEmptyRows(family: SocFamily): boolean {
  return isRegbase(family);
}

/**
 * Whether aclnnAddRmsNorm (and aclnnInplaceAddRmsNorm, whose kernels are its own:
 * `inplace_add_rms_norm/op_kernel/inplace_add_rms_norm.cpp`) writes its rstdOut: not on the
 * Atlas inference series, whose kernel
 * never stores rstd (ops-nn `norm/add_rms_norm/op_kernel/add_rms_norm.h` CopyOutRstd stores it
 * only where `__CCE_AICORE__ == 220` or on NPU arch 3003/3113; `aclnnAddRmsNorm.md`:
 * "参数rstdOut在当前产品使用场景下无效"). The backend then computes rstd with aclnnRmsNorm.
 *
 * @example
 * ```ts
 * import { addRmsNormStoresRstd, socFamily } from "@aclnn/norm/ascend";
 * console.log(addRmsNormStoresRstd(socFamily("Ascend310P3")!)); // false
 * ```
 */
export function addRmsNormStoresRstd(family: SocFamily): boolean {
  return family.socVersion !== SocVersion.ASCEND310P;
}

/**
 * Whether aclnnGemmaRmsNorm accepts a float32 gamma with float16 or bfloat16 data: only
 * config_regbase (ascend950) has the rows `(x FLOAT16|BF16, gamma FLOAT)`; the ascend910b /
 * ascend910_93 configuration pairs x with a gamma of its own dtype (ops-nn
 * `norm/gemma_rms_norm/op_host/gemma_rms_norm_def.cpp:22-43, 53-80`).
 *
 * @example
 * ```ts
 * import { gemmaRmsNormMixedGamma, socFamily } from "@aclnn/norm/ascend";
 * console.log(gemmaRmsNormMixedGamma(socFamily("Ascend910B4")!)); // false
 * ```
 */
export function gemmaRmsNormMixedGamma(family: SocFamily): boolean {
  return isRegbase(family);
}
