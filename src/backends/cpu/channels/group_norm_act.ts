/**
 * aclnnGroupNormSilu, aclnnGroupNormSiluV2 and aclnnGroupNormSwish on the CPU: GroupNorm's two
 * stages (group_norm.ts) with the activation in the write (the "swish" write kind,
 * wasm/channel_swish.wat), so the fused operator reads its data twice as GroupNorm does, not
 * three times as GroupNorm followed by SiLU would. SiLU is swish with scale 1 (CANN's
 * GroupNormSilu kernel: exp(-g), group_norm_silu_b16.h:374-381); an inactive activation is
 * groupNorm's plain write. The float attributes (eps, swishScale) are C floats, as CANN's
 * kernels take them.
 *
 * @module
 */

import type {
  GroupNormSiluPlan,
  GroupNormSiluTensors,
  GroupNormSwishPlan,
  GroupNormSwishTensors,
} from "../../types.ts";
import { groupNormActivated } from "./group_norm.ts";

/** aclnnGroupNormSilu and aclnnGroupNormSiluV2 (activateSilu false: GroupNorm alone). */
export function groupNormSilu(plan: GroupNormSiluPlan, t: GroupNormSiluTensors): void {
  const { N, C, HxW, group, eps } = plan;
  groupNormActivated(
    { N, C, HxW, group, eps },
    { input: t.self, gamma: t.gamma, beta: t.beta, output: t.output, mean: t.mean, rstd: t.rstd },
    plan.activateSilu ? 1 : undefined,
  );
}

/** aclnnGroupNormSwish (activateSwish false: GroupNorm alone). */
export function groupNormSwish(plan: GroupNormSwishPlan, t: GroupNormSwishTensors): void {
  const { N, C, HxW, numGroups, eps } = plan;
  groupNormActivated(
    { N, C, HxW, group: numGroups, eps },
    { input: t.x, gamma: t.gamma, beta: t.beta, output: t.y, mean: t.mean, rstd: t.rstd },
    plan.activateSwish ? Math.fround(plan.swishScale) : undefined,
  );
}
