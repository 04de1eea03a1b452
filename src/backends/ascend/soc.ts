/**
 * Behaviour that CANN documents per SoC family. The SoC name comes from aclrtGetSocName
 * (e.g. `Ascend910B4` on Atlas A2, `Ascend910_9391` on Atlas A3, `Ascend950PR`).
 *
 * @module
 */

/**
 * Whether aclnnBatchNorm writes the batch variance Var(x), not 1/sqrt(Var(x) + eps), into its
 * `saveInvstd` output. Its doc (hicann/ops-nn norm/batch_norm_v3/docs/aclnnBatchNorm.md) says
 * so for Atlas A2 (Ascend910B*) and A3 (Ascend910_93*); Ascend 950 writes invstd.
 */
export function batchNormSavesVariance(socName: string | null): boolean {
  return socName !== null &&
    (socName.startsWith("Ascend910B") || socName.startsWith("Ascend910_93"));
}
