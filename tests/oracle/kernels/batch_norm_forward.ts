/**
 * Float64 reference kernels of the BatchNorm forward family: aclnnBatchNormStats,
 * aclnnBatchNormGatherStatsWithCounts, aclnnBatchNormElemt and aclnnBatchNorm.
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
import { channelStats, invstdOf, normalizeChannels, valuesOr } from "./values.ts";

/** aclnnBatchNormStats: per-channel mean and 1/sqrt(biased var + eps). */
export function batchNormStats(plan: BatchNormStatsPlan, t: BatchNormStatsTensors): void {
  const stats = channelStats(plan.geometry, t.input.toFloat64Array(), plan.eps);
  t.mean.copy_(stats.mean);
  t.invstd.copy_(stats.invstd);
}

/**
 * aclnnBatchNormGatherStatsWithCounts: with n_w = counts[w], var_w = 1/invstd_w^2 - eps and
 * n = sum(n_w): mean = sum(n_w mean_w) / n, var = sum(n_w (var_w + (mean_w - mean)^2)) / n,
 * invstd = 1/sqrt(var + eps); running statistics updated with the unbiased variance.
 */
export function batchNormGatherStatsWithCounts(
  plan: BatchNormGatherStatsPlan,
  t: BatchNormGatherStatsTensors,
): void {
  const { channels, momentum, eps } = plan;
  if (plan.ranks === 0) {
    // No rank at all: CANN writes meanAll = 0 and invstdAll = NaN and leaves the running
    // statistics alone (aclnn_batch_norm_gather_stats_with_counts.cpp, empty `mean`).
    t.meanAll.copy_(new Float64Array(channels));
    t.invstdAll.copy_(new Float64Array(channels).fill(NaN));
    return;
  }
  const mean = t.mean.toFloat64Array();
  const invstd = t.invstd.toFloat64Array();
  const counts = t.counts.toFloat64Array();
  const runningMean = t.runningMean?.toFloat64Array();
  const runningVar = t.runningVar?.toFloat64Array();
  const W = counts.length;
  let n = 0;
  for (let w = 0; w < W; w++) n += counts[w];
  const meanAll = new Float64Array(channels);
  const invstdAll = new Float64Array(channels);
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
  t.meanAll.copy_(meanAll);
  t.invstdAll.copy_(invstdAll);
  if (runningMean) t.runningMean?.copy_(runningMean);
  if (runningVar) t.runningVar?.copy_(runningVar);
}

/** aclnnBatchNormElemt: y = (x - mean) * invstd * weight + bias. Empty inputs write nothing. */
export function batchNormElemt(plan: BatchNormElemtPlan, t: BatchNormElemtTensors): void {
  const g = plan.geometry;
  if (g.perChannel === 0) return;
  t.output.copy_(
    normalizeChannels(
      g,
      t.input.toFloat64Array(),
      t.mean.toFloat64Array(),
      t.invstd.toFloat64Array(),
      valuesOr(t.weight, g.channels, 1),
      valuesOr(t.bias, g.channels, 0),
    ),
  );
}

/**
 * aclnnBatchNorm. Training: batch statistics, running statistics updated in place (unbiased
 * variance), saveMean/saveInvstd written. Evaluation: running statistics (0/1 when absent),
 * saves untouched. An empty batch writes saveMean = 0 and saveInvstd = NaN in either mode
 * and leaves the running statistics alone, as CANN does (aclnn_batch_norm.cpp fills them
 * before anything else when the input is empty).
 */
export function batchNorm(plan: BatchNormPlan, t: BatchNormTensors): void {
  const g = plan.geometry;
  const C = g.channels;
  const { momentum, eps } = plan;
  if (g.perChannel === 0) {
    if (t.saveMean.numel > 0) t.saveMean.copy_(new Float64Array(t.saveMean.numel));
    if (t.saveInvstd.numel > 0) t.saveInvstd.copy_(new Float64Array(t.saveInvstd.numel).fill(NaN));
    return;
  }
  const x = t.input.toFloat64Array();
  let mean: Float64Array;
  let invstd: Float64Array;
  if (plan.training) {
    const stats = channelStats(g, x, eps);
    const M = g.perChannel;
    ({ mean, invstd } = stats);
    if (t.runningMean) {
      const rm = t.runningMean.toFloat64Array();
      t.runningMean.copy_(rm.map((v, c) => (1 - momentum) * v + momentum * mean[c]));
    }
    if (t.runningVar) {
      const rv = t.runningVar.toFloat64Array();
      const unbiased = stats.variance.map((v) => v * M / (M - 1));
      t.runningVar.copy_(rv.map((v, c) => (1 - momentum) * v + momentum * unbiased[c]));
    }
    t.saveMean.copy_(mean);
    t.saveInvstd.copy_(invstd);
  } else {
    mean = valuesOr(t.runningMean, C, 0);
    invstd = invstdOf(valuesOr(t.runningVar, C, 1), eps);
  }
  t.output.copy_(
    normalizeChannels(g, x, mean, invstd, valuesOr(t.weight, C, 1), valuesOr(t.bias, C, 0)),
  );
}
