/**
 * The chip facts of the Ascend backend, as its argument rules and its saveInvstd conversion read
 * them: the families (`soc_families.ts`), each operator's products and bfloat16 (the lookups
 * below, derived once from the one table of `soc_operators.ts`), and the traits beyond those.
 * The software CANN in tests/sim keeps its own facts, read from the same CANN sources (never
 * from this module), so that a test through it checks these. A SoC name that is not in the
 * families is placed by its platform file (see `device_soc.ts`).
 *
 * Sources (hicann repositories, snapshots of 2026-07/08):
 * - SoC names, short versions and NpuArch: hicann/runtime
 *   `src/platform/platform_config/{cann,cann-dev}/<SoC>.ini` ([version] SoC_version,
 *   Short_SoC_version, NpuArch); what `aclrtGetSocName()` returns is SoC_version.
 * - Short version -> op::SocVersion: hicann/opbase `src/nnopbase/composite_op/utils/platform.cpp`
 *   InitSocVersion(); enum values in `include/nnopbase/opdev/platform.h`.
 * - Per-operator dtype lists: hicann/ops-nn `norm/<op>/op_host/op_api/aclnn_<op>.cpp`
 *   (GetSupportDtypeList / GetDtypeSupportList and friends) and hicann/ops-math
 *   `math/reduce_std_with_mean/op_api/aclnn_batch_norm_stats.cpp`, cited per operator in
 *   `soc_operators.ts`.
 * - saveInvstd convention: ops-nn `norm/batch_norm_v3/docs/aclnnBatchNorm.md` ("saveInvstd
 *   表示input的方差" on Atlas training/inference/A2/A3; "标准差的倒数" on 950), and the
 *   backward kernels' `batch_variance` input (`aclnn_batch_norm_backward.cpp`,
 *   BNTrainingUpdateGrad/BNTrainingReduceGrad).
 *
 * @module
 */

import { DAV_2201, isRegbase, type SocFamily, socFamily, SocVersion } from "./soc_families.ts";
import {
  type Bf16Rule,
  SOC_SUPPORT,
  type SocOperatorGroup,
  type SocSupportDeclaration,
} from "./soc_operators.ts";

/** The operators whose rules depend on the SoC: those of `soc_operators.ts`, in its order. */
export type SocOperator = keyof typeof SOC_SUPPORT;

/**
 * The operators whose rules depend on the SoC (`soc_operators.ts`, in its order). Object.keys
 * gives exactly the keys of that `as const` table.
 */
export const SOC_OPERATORS: readonly SocOperator[] = Object.keys(SOC_SUPPORT) as SocOperator[];

/** One of {@linkcode ROW_NORM_OPERATORS}. */
export type RowNormOperator = {
  [K in SocOperator]: (typeof SOC_SUPPORT)[K]["group"] extends "rowNorm" ? K : never;
}[SocOperator];

/** Whether `op` is one of {@linkcode ROW_NORM_OPERATORS}. */
function isRowNorm(op: SocOperator): op is RowNormOperator {
  return SOC_SUPPORT[op].group === "rowNorm";
}

/** The LayerNorm / RMSNorm operators (normalized trailing dims): group `rowNorm`. */
export const ROW_NORM_OPERATORS: readonly RowNormOperator[] = SOC_OPERATORS.filter(isRowNorm);

/** One operator's support as the rules read it: its declaration, compiled once. */
export interface SocSupport {
  /** Its kernel family. */
  readonly group: SocOperatorGroup;
  /** The names of the families whose products run it. */
  readonly products: ReadonlySet<string>;
  /** Whether it takes bfloat16 on a family (of its products). */
  readonly bf16: (family: SocFamily) => boolean;
}

/** The predicate of a {@linkcode Bf16Rule}. */
function bf16Predicate(rule: Bf16Rule): (family: SocFamily) => boolean {
  if (rule === "everywhere") return () => true;
  if (rule === "nowhere") return () => false;
  if ("exceptFamilies" in rule) {
    const except: readonly string[] = rule.exceptFamilies;
    return (family) => !except.includes(family.name);
  }
  const arch: readonly number[] = rule.npuArch ?? [];
  const families: readonly string[] = rule.families ?? [];
  return (family) => arch.includes(family.npuArch) || families.includes(family.name);
}

function compile(d: SocSupportDeclaration): SocSupport {
  return { group: d.group, products: new Set(d.products), bf16: bf16Predicate(d.bf16) };
}

/** Every SoC operator's compiled support, by name (derived once, here). */
const SUPPORT: ReadonlyMap<string, SocSupport> = new Map(
  SOC_OPERATORS.map((op) => [op, compile(SOC_SUPPORT[op])]),
);

/**
 * The support of operator `op` (its products, bfloat16, group), or undefined when no chip rule
 * applies to it (not a SoC operator). One map lookup: the rules call it once per operator call.
 */
export function socSupport(op: string): SocSupport | undefined {
  return SUPPORT.get(op);
}

export {
  DAV_3510,
  familyFromPlatform,
  isRegbase,
  SOC_FAMILIES,
  type SocFamily,
  socFamily,
  type SocFamilyName,
} from "./soc_families.ts";
export {
  type Bf16Rule,
  type BoundOnlyOperator,
  SOC_SUPPORT,
  type SocOperatorGroup,
  type SocSupportDeclaration,
} from "./soc_operators.ts";

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
 * Whether `op` accepts bfloat16 on `family`: its `bf16` rule in `soc_operators.ts`, which cites
 * the CANN sources of each.
 *
 * @example
 * ```ts
 * import { bf16Allowed, socFamily } from "@aclnn/norm/ascend";
 * const a2 = socFamily("Ascend910B4")!;
 * console.log(bf16Allowed("aclnnBatchNorm", a2), bf16Allowed("aclnnBatchNormStats", a2)); // true false
 * ```
 */
export function bf16Allowed(op: SocOperator, family: SocFamily): boolean {
  return SUPPORT.get(op)?.bf16(family) ?? false;
}

/**
 * Whether `op` runs on `family` at all: whether its documentation lists the family's products
 * (its `products` in `soc_operators.ts`, with the sources). The nine seed BatchNorm/GroupNorm
 * operators refuse the Atlas 200I/500 A2 inference products (Ascend310B), and the Atlas inference
 * series (Ascend310P) runs only aclnnBatchNorm and aclnnGroupNorm of them; the later operators
 * follow their own documents.
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
  return SUPPORT.get(op)?.products.has(family.name) ?? false;
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

/** Whether `op` is one of {@linkcode ROW_NORM_OPERATORS}. */
export function isRowNormOperator(op: string): op is RowNormOperator {
  return SUPPORT.get(op)?.group === "rowNorm";
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
