/**
 * The oracle's activated GroupNorms in the kernel contract (aclnnGroupNormSilu, V2,
 * aclnnGroupNormSwish, aclnnGroupNormSwishGrad): values from tests/oracle/group_norm_silu.ts, eps and swishScale as the
 * C floats CANN's kernels take.
 *
 * @module
 */

import type {
  GroupNormSiluPlan,
  GroupNormSiluTensors,
  GroupNormSwishGradPlan,
  GroupNormSwishGradTensors,
  GroupNormSwishPlan,
  GroupNormSwishTensors,
} from "../../../src/backends/types.ts";
import { groupNormSwish64 } from "../group_norm_silu.ts";
import { groupNormSwishGrad64 } from "../group_norm_swish_grad.ts";
import { read, readIf, write } from "./io.ts";

/** aclnnGroupNormSilu and aclnnGroupNormSiluV2. */
export function groupNormSilu(plan: GroupNormSiluPlan, t: GroupNormSiluTensors): void {
  const { N, C, HxW, group, eps } = plan;
  const r = groupNormSwish64(
    read(t.self),
    N,
    C,
    HxW,
    group,
    readIf(t.gamma),
    readIf(t.beta),
    eps,
    plan.activateSilu ? 1 : undefined,
  );
  write(t.output, r.output);
  write(t.mean, r.mean);
  write(t.rstd, r.rstd);
}

/** aclnnGroupNormSwish. */
export function groupNormSwish(plan: GroupNormSwishPlan, t: GroupNormSwishTensors): void {
  const { N, C, HxW, numGroups, eps } = plan;
  const r = groupNormSwish64(
    read(t.x),
    N,
    C,
    HxW,
    numGroups,
    read(t.gamma),
    read(t.beta),
    eps,
    plan.activateSwish ? Math.fround(plan.swishScale) : undefined,
  );
  write(t.y, r.output);
  write(t.mean, r.mean);
  write(t.rstd, r.rstd);
}

/** aclnnGroupNormSwishGrad (dgamma/dbeta written only when required). */
export function groupNormSwishGrad(
  plan: GroupNormSwishGradPlan,
  t: GroupNormSwishGradTensors,
): void {
  const { N, C, HxW, numGroups } = plan;
  const r = groupNormSwishGrad64(
    read(t.dy),
    read(t.mean),
    read(t.rstd),
    read(t.x),
    read(t.gamma),
    read(t.beta),
    N,
    C,
    HxW,
    numGroups,
    Math.fround(plan.swishScale),
  );
  write(t.dx, r.dx);
  if (plan.dgammaIsRequire) write(t.dgamma, r.dgamma);
  if (plan.dbetaIsRequire) write(t.dbeta, r.dbeta);
}
