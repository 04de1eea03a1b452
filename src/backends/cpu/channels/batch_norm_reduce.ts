/**
 * aclnnBatchNormReduce on the CPU: per-channel Σx and Σx² in one read pass of the BatchNorm
 * family's sums stage, run with dy = x and a zero mean, so that its two sums are Σx and
 * Σx·(x - 0) = Σx². The stage's arithmetic is the one CANN's kernel has where the sources show
 * it (the Ascend 950 kernel, hicann/ops-nn e5c3fa9 `norm/bn_training_reduce/op_kernel/arch35/
 * bn_training_reduce.h`: each element widened to float32, squared in float32 (CastSquareVfImpl),
 * reduced in float32): elements widened exactly, squared in float32, summed in float32 runs and
 * the runs added in float64 (kernels/channel_stages.ts), each output rounded once to float32.
 * The Atlas A2/A3 kernel is not in ops-nn (docs/norm_family_kernels.md §16).
 *
 * @module
 */

import type { BatchNormReducePlan, BatchNormReduceTensors } from "../../types.ts";
import { channelGeometry } from "../../types.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";
import { writeChannelValues } from "../tensors/channel_values.ts";
import { execute } from "./call.ts";
import { mergeChannelSums } from "./merge.ts";
import { batchNormCall, sumsStage } from "./setup.ts";
import { RELAYOUT, runStaged } from "./staging.ts";

/**
 * aclnnBatchNormReduce: sum = Σx, squareSum = Σx² per channel. An empty call (plan.empty)
 * fills both outputs with 0 and reads nothing (aclnn_batch_norm_reduce.cpp:186-194).
 */
export function batchNormReduce(plan: BatchNormReducePlan, t: BatchNormReduceTensors): void {
  if (plan.empty) {
    for (const out of [t.sum, t.squareSum]) {
      if (out.numel > 0) writeChannelValues(out, temporaryFloat64(out.numel));
    }
    return;
  }
  const g = channelGeometry(t.x.shape);
  const call = batchNormCall(g, [t.x, t.x], undefined);
  if (!call) {
    return runStaged(t, { inputs: ["x"], outputs: [] }, (s) => batchNormReduce(plan, s), RELAYOUT);
  }
  const sums = sumsStage(call, t.x, t.x, temporaryFloat64(g.channels));
  execute(call, [sums]);
  const { first, second } = mergeChannelSums(call.layout, sums.partials);
  writeChannelValues(t.sum, first);
  writeChannelValues(t.squareSum, second);
}
