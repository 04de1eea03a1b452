/**
 * The oracle's BatchNorm forward family in the kernel contract: aclnnBatchNormStats,
 * aclnnBatchNormGatherStatsWithCounts, aclnnBatchNormElemt and aclnnBatchNorm. The values
 * come from the oracle's functions; this file only says which tensors each operator writes,
 * including over an empty batch, where CANN writes statistics mean 0 and invstd NaN and leaves
 * the running statistics alone (ops-nn aclnn_batch_norm.cpp and aclnn_batch_norm_stats.cpp,
 * ProcessEmptyTensorWithValue; aclnn_batch_norm_gather_stats_with_counts.cpp for no rank).
 *
 * @module
 */

import type {
  BatchNormElemtPlan,
  BatchNormElemtTensors,
  BatchNormGatherStatsPlan,
  BatchNormGatherStatsTensors,
  BatchNormPlan,
  BatchNormStatsPlan,
  BatchNormStatsTensors,
  BatchNormTensors,
} from "../../../src/backends/types.ts";
import { batchNorm64 } from "../batch_norm.ts";
import { batchNormElemt64 } from "../batch_norm_elemt.ts";
import { batchNormStats64 } from "../batch_norm_stats.ts";
import { batchNormGatherStatsWithCounts64 } from "../gather_stats.ts";
import { channelShape, read, readIf, write } from "./io.ts";

/** aclnnBatchNormStats: per-channel mean and 1/sqrt(biased var + eps). */
export function batchNormStats(plan: BatchNormStatsPlan, t: BatchNormStatsTensors): void {
  const r = batchNormStats64(read(t.input), channelShape(plan.geometry), plan.eps);
  write(t.mean, r.mean);
  write(t.invstd, r.invstd);
}

/** aclnnBatchNormGatherStatsWithCounts: the global statistics of W ranks' ones. */
export function batchNormGatherStatsWithCounts(
  plan: BatchNormGatherStatsPlan,
  t: BatchNormGatherStatsTensors,
): void {
  const none = plan.ranks === 0;
  const r = batchNormGatherStatsWithCounts64({
    mean: none ? [] : read(t.mean),
    invstd: none ? [] : read(t.invstd),
    counts: none ? [] : read(t.counts),
    C: plan.channels,
    runningMean: readIf(t.runningMean),
    runningVar: readIf(t.runningVar),
    momentum: plan.momentum,
    eps: plan.eps,
  });
  write(t.meanAll, r.mean);
  write(t.invstdAll, r.invstd);
  if (none) return;
  if (r.runningMean) write(t.runningMean, r.runningMean);
  if (r.runningVar) write(t.runningVar, r.runningVar);
}

/** aclnnBatchNormElemt: y = (x - mean) * invstd * weight + bias. */
export function batchNormElemt(plan: BatchNormElemtPlan, t: BatchNormElemtTensors): void {
  if (plan.geometry.perChannel === 0) return;
  write(
    t.output,
    batchNormElemt64({
      x: read(t.input),
      shape: channelShape(plan.geometry),
      mean: read(t.mean),
      invstd: read(t.invstd),
      weight: readIf(t.weight),
      bias: readIf(t.bias),
    }),
  );
}

/**
 * aclnnBatchNorm. Training writes the saves and updates the running statistics; evaluation
 * writes only the output. An empty batch writes saveMean 0 and saveInvstd NaN in either mode.
 */
export function batchNorm(plan: BatchNormPlan, t: BatchNormTensors): void {
  const g = plan.geometry;
  if (g.perChannel === 0) {
    if (t.saveMean.numel > 0) write(t.saveMean, new Float64Array(t.saveMean.numel));
    if (t.saveInvstd.numel > 0) write(t.saveInvstd, new Float64Array(t.saveInvstd.numel).fill(NaN));
    return;
  }
  const r = batchNorm64({
    x: read(t.input),
    shape: channelShape(g),
    weight: readIf(t.weight),
    bias: readIf(t.bias),
    runningMean: readIf(t.runningMean),
    runningVar: readIf(t.runningVar),
    training: plan.training,
    momentum: plan.momentum,
    eps: plan.eps,
  });
  write(t.output, r.output);
  if (!plan.training) return;
  write(t.saveMean, r.saveMean);
  write(t.saveInvstd, r.saveInvstd);
  if (r.runningMean) write(t.runningMean, r.runningMean);
  if (r.runningVar) write(t.runningVar, r.runningVar);
}
