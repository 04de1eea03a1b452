/**
 * The oracle's BatchNorm operators of issue 39 in the kernel contract: aclnnBatchNormReduce
 * (an empty call fills both outputs with 0, as aclnn_batch_norm_reduce.cpp does before any check)
 * and aclnnSyncBatchNormGatherStats (no channel: nothing written).
 *
 * @module
 */

import type {
  BatchNormReducePlan,
  BatchNormReduceTensors,
  SyncBatchNormGatherStatsPlan,
  SyncBatchNormGatherStatsTensors,
} from "../../../src/backends/types.ts";
import { batchNormReduce64 } from "../batch_norm_reduce.ts";
import { syncBatchNormGatherStats64 } from "../sync_batch_norm_gather_stats.ts";
import { read, write } from "./io.ts";

/** aclnnBatchNormReduce: per-channel Σx and Σx². */
export function batchNormReduce(plan: BatchNormReducePlan, t: BatchNormReduceTensors): void {
  if (plan.empty) {
    write(t.sum, new Float64Array(t.sum.numel));
    write(t.squareSum, new Float64Array(t.squareSum.numel));
    return;
  }
  const r = batchNormReduce64(read(t.x), t.x.shape);
  write(t.sum, r.sum);
  write(t.squareSum, r.squareSum);
}

/** aclnnSyncBatchNormGatherStats: batch statistics, running statistics updated in place. */
export function syncBatchNormGatherStats(
  plan: SyncBatchNormGatherStatsPlan,
  t: SyncBatchNormGatherStatsTensors,
): void {
  if (plan.channels === 0) return;
  const r = syncBatchNormGatherStats64({
    totalSum: read(t.totalSum),
    totalSquareSum: read(t.totalSquareSum),
    sampleCount: read(t.sampleCount),
    mean: read(t.mean),
    variance: read(t.variance),
    channels: plan.channels,
    momentum: plan.momentum,
    eps: plan.eps,
  });
  write(t.batchMean, r.batchMean);
  write(t.batchInvstd, r.batchInvstd);
  write(t.mean, r.mean);
  write(t.variance, r.variance);
}
