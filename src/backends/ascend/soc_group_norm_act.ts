/**
 * The per-chip facts of the activated GroupNorm operators of issue 39 (aclnnGroupNormSilu,
 * aclnnGroupNormSiluV2, aclnnGroupNormSwish, aclnnGroupNormSwishGrad), kept beside the one chip
 * table (`soc.ts`, which folds them into `SOC_OPERATORS`, `operatorSupported` and
 * `bf16Allowed`), and the rules beyond products and bfloat16 that only some chips make, refused before anything is allocated with
 * 161002 and a message naming the argument and the SoC. The device-independent validation
 * (`src/ops/group_norm_silu.ts`, `group_norm_swish.ts`) accepts what some chip accepts.
 *
 * Sources: hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921 (docs/norm_family_kernels.md
 * sections 9 and 10).
 * - Products: `norm/group_norm_silu/docs/aclnnGroupNormSilu.md`, `aclnnGroupNormSiluV2.md`
 *   (Ascend 950, Atlas A3, Atlas A2, Atlas inference series); `norm/group_norm_swish/docs/
 *   aclnnGroupNormSwish.md` (Ascend 950, Atlas A3, Atlas A2; its OpDef registers no ascend310p);
 *   `norm/group_norm_swish_grad/docs/aclnnGroupNormSwishGrad.md` (the same three;
 *   `op_host/group_norm_swish_grad_def.cpp:85-93` registers ascend910b, ascend910_93, ascend950).
 * - bfloat16: GroupNormSilu's list is {FLOAT16, BF16, FLOAT} on DAV_2201 or regbase, {FLOAT16,
 *   FLOAT} elsewhere (`op_host/op_api/aclnn_group_norm_silu.cpp:64-71`); GroupNormSwish's OpDef
 *   has BF16 rows in every configuration (`op_host/group_norm_swish_def.cpp:69-104`), as has
 *   GroupNormSwishGrad's (`group_norm_swish_grad_def.cpp`, all tensors one of F32/F16/BF16).
 * - GroupNormSilu's CheckDtypeValid (`aclnn_group_norm_silu.cpp:73-121`): off regbase meanOut and
 *   rstdOut must have self's dtype; on regbase a gamma or beta of another dtype than self's must
 *   be FLOAT and then meanOut and rstdOut FLOAT. CheckAttr (`:123-147`): off regbase N > 0 and
 *   C > 0.
 *
 * @module
 */

import { AclnnError } from "../../errors.ts";
import type { Tensor } from "../../tensor/tensor.ts";
import { DAV_2201, isRegbase, type SocFamily, SocVersion } from "./soc_families.ts";

/** The operators of this file. */
export const GROUP_NORM_ACT_OPERATORS = [
  "aclnnGroupNormSilu",
  "aclnnGroupNormSiluV2",
  "aclnnGroupNormSwish",
  "aclnnGroupNormSwishGrad",
] as const;

/** One of {@linkcode GROUP_NORM_ACT_OPERATORS}. */
export type GroupNormActOperator = typeof GROUP_NORM_ACT_OPERATORS[number];

/** Whether `op` is one of {@linkcode GROUP_NORM_ACT_OPERATORS}. */
export function isGroupNormActOperator(op: string): op is GroupNormActOperator {
  return (GROUP_NORM_ACT_OPERATORS as readonly string[]).includes(op);
}

/** Whether the documentation lists `family`'s product for `op` (module doc). */
export function groupNormActSupported(op: GroupNormActOperator, family: SocFamily): boolean {
  const sv = family.socVersion;
  const a2Up = sv === SocVersion.ASCEND910B || sv === SocVersion.ASCEND910_93 ||
    sv === SocVersion.ASCEND950;
  const swish = op === "aclnnGroupNormSwish" || op === "aclnnGroupNormSwishGrad";
  return a2Up || (!swish && sv === SocVersion.ASCEND310P);
}

/** Whether `op` accepts bfloat16 tensors on `family` (module doc). */
export function groupNormActBf16(op: GroupNormActOperator, family: SocFamily): boolean {
  if (op === "aclnnGroupNormSwish" || op === "aclnnGroupNormSwishGrad") return true;
  return family.npuArch === DAV_2201 || isRegbase(family);
}

function refuse(op: string, argument: string, rule: string): never {
  throw new AclnnError(161002, `${op}: ${argument} ${rule}`, { argument });
}

/**
 * GroupNormSilu's chip rules (module doc): the statistics' dtype with a FLOAT gamma/beta and
 * 16-bit self, and N, C > 0 off regbase. `tensors` by argument name (self, gamma, beta, mean,
 * rstd), `scalars` N and C.
 */
export function checkGroupNormActRules(
  op: GroupNormActOperator,
  family: SocFamily,
  where: string,
  tensors: Readonly<Record<string, Tensor | undefined>>,
  scalars: Readonly<Record<string, number>>,
): void {
  const self = tensors.self;
  if (op === "aclnnGroupNormSwish" || op === "aclnnGroupNormSwishGrad" || !self) return;
  const regbase = isRegbase(family);
  const mixed = [tensors.gamma, tensors.beta].some((t) => t && t.dtype !== self.dtype);
  const want = regbase && mixed ? "float32" : self.dtype;
  for (const name of ["mean", "rstd"]) {
    const t = tensors[name];
    if (!t || t.dtype === want) continue;
    refuse(
      op,
      name,
      `dtype ${t.dtype} must be ${want} on ${where} (` +
        (regbase
          ? "with a float32 gamma or beta and 16-bit self, mean and rstd are float32 there)"
          : "mean and rstd have self's dtype there, whatever gamma's)") +
        `. Fix: pass out.${name} as ${want}`,
    );
  }
  if (regbase) return;
  for (const name of ["N", "C"] as const) {
    if ((scalars[name] ?? 1) > 0) continue;
    refuse(
      op,
      name,
      `(${scalars[name]}) must be greater than 0 on ${where} (self dim ${name === "N" ? 0 : 1})`,
    );
  }
}
