/**
 * The oracle's GroupNorm in the kernel contract: aclnnGroupNorm and aclnnGroupNormBackward over
 * (N, C, HxW) data in logical order. Values from the oracle's functions; this file says which
 * tensors each operator writes (masks, absent outputs).
 *
 * @module
 */

import type {
  GroupNormBackwardPlan,
  GroupNormBackwardTensors,
  GroupNormPlan,
  GroupNormTensors,
} from "../../../src/backends/types.ts";
import { groupNorm64 } from "../group_norm.ts";
import { groupNormBackward64 } from "../group_norm_backward.ts";
import { read, readIf, write } from "./io.ts";

/** aclnnGroupNorm: output, and mean and rstd per (n, group) (mean 0, rstd NaN when empty). */
export function groupNorm(plan: GroupNormPlan, t: GroupNormTensors): void {
  const { N, C, HxW, group, eps } = plan;
  const r = groupNorm64(read(t.input), N, C, HxW, group, readIf(t.gamma), readIf(t.beta), eps);
  write(t.output, r.output);
  write(t.mean, r.mean);
  write(t.rstd, r.rstd);
}

/** aclnnGroupNormBackward: the masked-on gradients. */
export function groupNormBackward(plan: GroupNormBackwardPlan, t: GroupNormBackwardTensors): void {
  const { N, C, HxW, group, mask } = plan;
  const r = groupNormBackward64(
    read(t.gradOut),
    read(t.input),
    read(t.mean),
    read(t.rstd),
    readIf(t.gamma),
    N,
    C,
    HxW,
    group,
  );
  if (mask[0]) write(t.gradInput, r.gradInput);
  if (mask[1]) write(t.gradGamma, r.gradGamma);
  if (mask[2]) write(t.gradBeta, r.gradBeta);
}
