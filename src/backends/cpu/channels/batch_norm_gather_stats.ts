/**
 * aclnnBatchNormGatherStatsWithCounts on the CPU: O(W * C) work over the per-rank statistics
 * and no pass over data, so one plain loop per channel.
 *
 * @module
 */

import type { BatchNormGatherStatsPlan, BatchNormGatherStatsTensors } from "../../types.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";
import { channelValues, writeChannelValues } from "../tensors/channel_values.ts";

/**
 * aclnnBatchNormGatherStatsWithCounts: with n_w = counts[w], var_w = 1/invstd_w^2 - eps and
 * n = sum(n_w): mean = sum(n_w mean_w) / n, var = sum(n_w (var_w + (mean_w - mean)^2)) / n,
 * invstd = 1/sqrt(var + eps); running statistics updated with the unbiased variance
 * (momentum weighting, as aclnnBatchNorm). No rank at all: meanAll = 0 and invstdAll = NaN,
 * running statistics untouched, as CANN writes for an empty `mean`: ProcessEmptyTensorWithValue
 * on meanAll and invstdAll in aclnnBatchNormGatherStatsWithCountsGetWorkspaceSize (ops-nn
 * norm/sync_batch_norm_gather_stats_with_counts/op_host/op_api/
 * aclnn_batch_norm_gather_stats_with_counts.cpp).
 */
export function batchNormGatherStatsWithCounts(
  plan: BatchNormGatherStatsPlan,
  t: BatchNormGatherStatsTensors,
): void {
  const { channels, momentum, eps } = plan;
  if (plan.ranks === 0) {
    writeChannelValues(t.meanAll, temporaryFloat64(channels));
    writeChannelValues(t.invstdAll, temporaryFloat64(channels).fill(NaN));
    return;
  }
  const mean = channelValues(t.mean);
  const invstd = channelValues(t.invstd);
  const counts = channelValues(t.counts);
  const runningMean = t.runningMean && channelValues(t.runningMean);
  const runningVar = t.runningVar && channelValues(t.runningVar);
  const W = counts.length;
  let n = 0;
  for (let w = 0; w < W; w++) n += counts[w];
  const meanAll = temporaryFloat64(channels);
  const invstdAll = temporaryFloat64(channels);
  for (let c = 0; c < channels; c++) {
    let s = 0;
    for (let w = 0; w < W; w++) s += counts[w] * mean[w * channels + c];
    const m = s / n;
    let q = 0;
    for (let w = 0; w < W; w++) {
      const d = mean[w * channels + c] - m;
      const is = invstd[w * channels + c];
      q += counts[w] * (1 / (is * is) - eps + d * d);
    }
    const v = q / n;
    meanAll[c] = m;
    invstdAll[c] = 1 / Math.sqrt(v + eps);
    if (runningMean) runningMean[c] = (1 - momentum) * runningMean[c] + momentum * m;
    if (runningVar) runningVar[c] = (1 - momentum) * runningVar[c] + momentum * v * n / (n - 1);
  }
  writeChannelValues(t.meanAll, meanAll);
  writeChannelValues(t.invstdAll, invstdAll);
  if (runningMean) writeChannelValues(t.runningMean!, runningMean);
  if (runningVar) writeChannelValues(t.runningVar!, runningVar);
}
