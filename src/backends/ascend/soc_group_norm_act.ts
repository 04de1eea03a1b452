/**
 * The chip rules of the activated GroupNorm operators (group `groupNormAct` of
 * `soc_operators.ts`, which declares their products and bfloat16) beyond those: what only some
 * chips make, refused before anything is allocated with 161002 and a message naming the argument
 * and the SoC. Only aclnnGroupNormSilu and aclnnGroupNormSiluV2 have such rules. The
 * device-independent validation (`src/ops/group_norm_silu.ts`) accepts what some chip accepts.
 *
 * Sources: hicann/ops-nn e5c3fa9327ea95ba26d06227e746923580d10921 (docs/norm_family_kernels.md
 * sections 9 and 10). GroupNormSilu's CheckDtypeValid (`norm/group_norm_silu/op_host/op_api/
 * aclnn_group_norm_silu.cpp:73-121`): off regbase meanOut and rstdOut must have self's dtype; on
 * regbase a gamma or beta of another dtype than self's must be FLOAT and then meanOut and rstdOut
 * FLOAT. CheckAttr (`:123-147`): off regbase N > 0 and C > 0.
 *
 * @module
 */

import { AclnnError } from "../../errors.ts";
import type { Tensor } from "../../tensor/tensor.ts";
import { isRegbase, type SocFamily } from "./soc_families.ts";

function refuse(op: string, argument: string, rule: string): never {
  throw new AclnnError(161002, `${op}: ${argument} ${rule}`, { argument });
}

/**
 * GroupNormSilu's chip rules (module doc): the statistics' dtype with a FLOAT gamma/beta and
 * 16-bit self, and N, C > 0 off regbase; none for the other operators of the group. `tensors` by
 * argument name (self, gamma, beta, mean, rstd), `scalars` N and C.
 */
export function checkGroupNormActRules(
  op: string,
  family: SocFamily,
  where: string,
  tensors: Readonly<Record<string, Tensor | undefined>>,
  scalars: Readonly<Record<string, number>>,
): void {
  const self = tensors.self;
  if ((op !== "aclnnGroupNormSilu" && op !== "aclnnGroupNormSiluV2") || !self) return;
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
