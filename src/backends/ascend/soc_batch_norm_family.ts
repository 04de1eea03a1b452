/**
 * The per-chip facts of the BatchNorm operators of issue 39 (aclnnBatchNormReduce,
 * aclnnSyncBatchNormGatherStats, aclnnFastBatchNormBackward), kept beside the one chip table
 * (`soc.ts`, which folds them into `SOC_OPERATORS`, `operatorSupported` and `bf16Allowed`).
 *
 * Sources: hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921.
 * - Products: the "产品支持情况" tables of `norm/bn_training_reduce/docs/aclnnBatchNormReduce.md`
 *   and `norm/sync_batch_norm_gather_stats/docs/aclnnSyncBatchNormGatherStats.md` (Ascend 950,
 *   Atlas A3, Atlas A2; not the Atlas 200I/500 A2, inference or training series).
 *   aclnnFastBatchNormBackward: Atlas A2 only (`norm/batch_norm_grad_v3/docs/
 *   aclnnFastBatchNormBackward.md`: 950, A3, 310B, 310P and 910 marked unsupported). Followed,
 *   although its code has no product gate: `aclnn_fast_batch_norm_backward.cpp` runs
 *   BatchNormGradV3 on 910B and 910_93 (isBatchNormSupportAscendC) and the BNTrainingUpdateGrad /
 *   BNTrainingReduceGrad path elsewhere; the document is what Huawei supports, as for every
 *   other operator of this table, and a call off A2 is refused before it reaches CANN.
 * - bfloat16: aclnnBatchNormReduce's list is FLOAT, FLOAT16, BF16 on every chip
 *   (`bn_training_reduce/op_api/aclnn_batch_norm_reduce.cpp` DTYPE_SUPPORT_LIST_IN);
 *   aclnnSyncBatchNormGatherStats takes BF16 on the regbase architecture only
 *   (`sync_batch_norm_gather_stats/op_api/aclnn_sync_batch_norm_gather_stats.cpp` CheckDtypeValid,
 *   IsRegbase); aclnnFastBatchNormBackward's GetDtypeSupportList has BF16 on every SoC (its
 *   condition `>= ASCEND910B || <= ASCEND910E` always holds).
 *
 * @module
 */

import type { SocFamily } from "./soc.ts";

/** The operators of this file. */
export const BATCH_NORM_FAMILY_OPERATORS = [
  "aclnnBatchNormReduce",
  "aclnnSyncBatchNormGatherStats",
  "aclnnFastBatchNormBackward",
] as const;

/** One of {@linkcode BATCH_NORM_FAMILY_OPERATORS}. */
export type BatchNormFamilyOperator = typeof BATCH_NORM_FAMILY_OPERATORS[number];

/** op::SocVersion values (hicann/opbase include/nnopbase/opdev/platform.h). */
const ASCEND910B = 1;
const ASCEND910_93 = 2;
const ASCEND950 = 3;
/** NpuArch of the regbase architecture (ops-nn common/inc/op_api/aclnn_util.h IsRegbase). */
const DAV_3510 = 3510;

/** Whether `op` is one of {@linkcode BATCH_NORM_FAMILY_OPERATORS}. */
export function isBatchNormFamilyOperator(op: string): op is BatchNormFamilyOperator {
  return (BATCH_NORM_FAMILY_OPERATORS as readonly string[]).includes(op);
}

/** Whether the documentation lists `family`'s product as supported by the operator (module doc). */
export function batchNormFamilySupported(op: BatchNormFamilyOperator, family: SocFamily): boolean {
  const sv = family.socVersion;
  if (op === "aclnnFastBatchNormBackward") return sv === ASCEND910B;
  return sv === ASCEND910B || sv === ASCEND910_93 || sv === ASCEND950;
}

/** Whether `op` accepts bfloat16 tensors on `family` (module doc). */
export function batchNormFamilyBf16(op: BatchNormFamilyOperator, family: SocFamily): boolean {
  if (op === "aclnnSyncBatchNormGatherStats") return family.npuArch === DAV_3510;
  return true;
}
