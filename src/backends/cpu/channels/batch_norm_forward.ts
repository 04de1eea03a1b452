/**
 * Streaming kernels of the BatchNorm forward family: aclnnBatchNormStats,
 * aclnnBatchNormElemt and aclnnBatchNorm (aclnnBatchNormGatherStatsWithCounts has no data
 * pass: batch_norm_gather_stats.ts). The statistics take one read pass over memory: each
 * cached segment is read twice (sum, then squared deviations from its own mean) and the
 * segments are merged with Chan's update, as accurate as two passes. An empty batch writes
 * what CANN writes for one: mean 0 and invstd NaN (ProcessEmptyTensorWithValue in
 * aclnnBatchNormGetWorkspaceSize, ops-nn norm/batch_norm_v3/op_host/op_api/aclnn_batch_norm.cpp,
 * and in aclnnBatchNormStatsGetWorkspaceSize, aclnn_batch_norm_stats.cpp).
 *
 * @module
 */

import type {
  BatchNormElemtPlan,
  BatchNormElemtTensors,
  BatchNormPlan,
  BatchNormStatsPlan,
  BatchNormStatsTensors,
  BatchNormTensors,
} from "../../types.ts";
import type { Tensor } from "../../../tensor/tensor.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";
import {
  channelValues,
  channelValuesOr,
  invstdOf,
  mapValues,
  writeChannelValues,
} from "../tensors/channel_values.ts";
import { type Call, execute, float64 } from "./call.ts";
import { NORMALIZE_CONSTANTS, normalizeCentered } from "../kernels/formulas.ts";
import type { WriteStage } from "../kernels/stage_types.ts";
import { mergeChannelMoments } from "./merge.ts";
import { batchNormCall, statsStage, writeStage } from "./setup.ts";
import { blockGeometry, channelBlocks, channelViews } from "./cache_blocks.ts";
import { rowsInMemoryOrder } from "../kernels/layout_types.ts";
import { RELAYOUT, runStaged } from "./staging.ts";

/** Per-channel mean, biased variance and invstd from a stats stage's merged moments. */
interface ChannelStats {
  readonly mean: Float64Array;
  readonly variance: Float64Array;
  readonly invstd: Float64Array;
}

function channelStats(call: Call, partials: Float64Array, count: number, eps: number) {
  const { first, second } = mergeChannelMoments(call.layout, partials);
  const mean = mapValues(first, (s) => s / count);
  const variance = mapValues(second, (q) => q / count);
  const stats: ChannelStats = { mean, variance, invstd: invstdOf(variance, eps) };
  return stats;
}

/** aclnnBatchNormStats: per-channel mean and 1/sqrt(biased var + eps). */
export function batchNormStats(plan: BatchNormStatsPlan, t: BatchNormStatsTensors): void {
  const g = plan.geometry;
  if (g.channels === 0) return;
  if (g.perChannel === 0) {
    writeChannelValues(t.mean, temporaryFloat64(g.channels));
    writeChannelValues(t.invstd, temporaryFloat64(g.channels).fill(NaN));
    return;
  }
  const call = batchNormCall(g, [t.input], undefined);
  if (!call) {
    return runStaged(
      t,
      { inputs: ["input"], outputs: [] },
      (s) => batchNormStats(plan, s),
      RELAYOUT,
    );
  }
  const stage = statsStage(call, t.input);
  execute(call, [stage]);
  const stats = channelStats(call, stage.partials, g.perChannel, plan.eps);
  writeChannelValues(t.mean, stats.mean);
  writeChannelValues(t.invstd, stats.invstd);
}

/**
 * The normalizing write y = (x - mean) * invstd * w + b; constants packed later, from this
 * call's statistics of x when `dataSums` (training) or from given ones.
 */
function normalizeStage(call: Call, x: Tensor, output: Tensor, dataSums: boolean): WriteStage {
  return writeStage(
    call,
    "normalize",
    undefined,
    x,
    output,
    float64(call, NORMALIZE_CONSTANTS * call.layout.C),
    dataSums,
  );
}

/** Packs the normalizing constants (formulas.ts): mean, scale = invstd * weight, bias. */
function fillNormalize(
  stage: WriteStage,
  mean: Float64Array,
  invstd: Float64Array,
  weight: Float64Array,
  bias: Float64Array,
): void {
  const C = mean.length;
  for (let c = 0; c < C; c++) {
    normalizeCentered(mean[c], invstd[c] * weight[c], bias[c], stage.constants, c, C);
  }
}

/** aclnnBatchNormElemt: y = (x - mean) * invstd * weight + bias. Empty inputs write nothing. */
export function batchNormElemt(plan: BatchNormElemtPlan, t: BatchNormElemtTensors): void {
  const g = plan.geometry;
  const C = g.channels;
  if (g.perChannel === 0 || C === 0) return;
  const call = batchNormCall(g, [t.input], t.output);
  if (!call) {
    return runStaged(
      t,
      { inputs: ["input"], outputs: ["output"] },
      (s) => batchNormElemt(plan, s),
      RELAYOUT,
    );
  }
  const stage = normalizeStage(call, t.input, t.output, false);
  fillNormalize(
    stage,
    channelValues(t.mean),
    channelValues(t.invstd),
    channelValuesOr(t.weight, C, 1),
    channelValuesOr(t.bias, C, 0),
  );
  execute(call, [stage]);
}

/** aclnnBatchNorm's data tensors (channels along dim 1). */
const DATA_TENSORS = ["input", "output"] as const;

/** aclnnBatchNorm's per-channel tensors. */
const CHANNEL_TENSORS = [
  "weight",
  "bias",
  "runningMean",
  "runningVar",
  "saveMean",
  "saveInvstd",
] as const;

/**
 * aclnnBatchNorm. Training: batch statistics (stats pass), then the output pass; running
 * statistics updated in place (unbiased variance), saveMean/saveInvstd written after the
 * data passes. Evaluation: running statistics (0/1 when absent), saves untouched. An empty
 * batch writes saveMean = 0 and saveInvstd = NaN in either mode and leaves the running
 * statistics alone, as CANN does (aclnn_batch_norm.cpp fills saveMean and saveInvstd before
 * anything else when the input is empty). A large training-mode call runs in channel blocks
 * (cache_blocks.ts: the same bits, the normalize pass reading from the cache).
 */
export function batchNorm(plan: BatchNormPlan, t: BatchNormTensors): void {
  const g = plan.geometry;
  const C = g.channels;
  const { momentum, eps } = plan;
  if (g.perChannel === 0) {
    if (t.saveMean.numel > 0) writeChannelValues(t.saveMean, temporaryFloat64(t.saveMean.numel));
    if (t.saveInvstd.numel > 0) {
      writeChannelValues(t.saveInvstd, temporaryFloat64(t.saveInvstd.numel).fill(NaN));
    }
    return;
  }
  if (C === 0) return;
  const call = batchNormCall(g, [t.input], t.output);
  if (!call) {
    return runStaged(
      t,
      { inputs: ["input"], outputs: ["output"] },
      (s) => batchNorm(plan, s),
      RELAYOUT,
    );
  }
  if (plan.training && call.layout.kind === "rows" && !rowsInMemoryOrder(call.layout)) {
    const blocks = channelBlocks(g, [t.input], CHANNEL_TENSORS.map((k) => t[k]));
    if (blocks) {
      for (const [c0, c1] of blocks) {
        const geometry = blockGeometry(g, c1 - c0);
        batchNorm({ ...plan, geometry }, channelViews(t, DATA_TENSORS, CHANNEL_TENSORS, c0, c1));
      }
      return;
    }
  }
  const weight = channelValuesOr(t.weight, C, 1);
  const bias = channelValuesOr(t.bias, C, 0);
  const write = normalizeStage(call, t.input, t.output, plan.training);
  if (!plan.training) {
    const mean = channelValuesOr(t.runningMean, C, 0);
    fillNormalize(write, mean, invstdOf(channelValuesOr(t.runningVar, C, 1), eps), weight, bias);
    execute(call, [write]);
    return;
  }
  const stats = statsStage(call, t.input);
  let result: ChannelStats | undefined;
  execute(call, [stats, write], [() => {
    result = channelStats(call, stats.partials, g.perChannel, eps);
    fillNormalize(write, result.mean, result.invstd, weight, bias);
  }]);
  const { mean, variance, invstd } = result!;
  const M = g.perChannel;
  if (t.runningMean) {
    const rm = channelValues(t.runningMean);
    writeChannelValues(
      t.runningMean,
      mapValues(rm, (v, c) => (1 - momentum) * v + momentum * mean[c]),
    );
  }
  if (t.runningVar) {
    const rv = channelValues(t.runningVar);
    const unbiased = mapValues(variance, (v) => v * M / (M - 1));
    writeChannelValues(
      t.runningVar,
      mapValues(rv, (v, c) => (1 - momentum) * v + momentum * unbiased[c]),
    );
  }
  writeChannelValues(t.saveMean, mean);
  writeChannelValues(t.saveInvstd, invstd);
}
