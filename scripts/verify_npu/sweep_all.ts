/**
 * Every operator of verify:npu's sweep, gathered once from the `sweep_*.ts` files (each a list
 * of `SweepOp`s, one per library function): what `scripts/verify_npu.ts` runs and
 * tests/tools/verify_npu.test.ts checks, including that every SoC operator is among their
 * kernels. A new sweep file joins here.
 *
 * @module
 */

import type { SweepOp } from "./sweep.ts";
import { SWEEP_CHANNEL_OPS } from "./sweep_channel_ops.ts";
import { SWEEP_FUSED_OPS } from "./sweep_fused_ops.ts";
import { SWEEP_GROUP_NORM_ACT_OPS } from "./sweep_group_norm_act_ops.ts";
import { SWEEP_OPS } from "./sweep_ops.ts";
import { SWEEP_REDUCE_OPS } from "./sweep_reduce_ops.ts";
import { SWEEP_ROW_GRAD_OPS } from "./sweep_row_grad_ops.ts";
import { SWEEP_ROW_OPS } from "./sweep_row_ops.ts";

/** The sweep's operators, in the order the report lists them. */
export const SWEEP: readonly SweepOp[] = [
  ...SWEEP_OPS,
  ...SWEEP_CHANNEL_OPS,
  ...SWEEP_REDUCE_OPS,
  ...SWEEP_ROW_OPS,
  ...SWEEP_ROW_GRAD_OPS,
  ...SWEEP_FUSED_OPS,
  ...SWEEP_GROUP_NORM_ACT_OPS,
];
