/**
 * Streaming kernels of the BatchNorm backward family: aclnnBatchNormReduceBackward,
 * aclnnBatchNormBackward and aclnnBatchNormElemtBackward. One read pass computes the
 * per-channel sums; the gradInput pass reads dy and x again and writes each element once.
 * Empty inputs give zero per-channel sums and write no element.
 *
 * @module
 */

import type {
  BatchNormBackwardPlan,
  BatchNormBackwardTensors,
  BatchNormElemtBackwardPlan,
  BatchNormElemtBackwardTensors,
  BatchNormReduceBackwardPlan,
  BatchNormReduceBackwardTensors,
} from "../../types.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";
import {
  channelValues,
  channelValuesOr,
  invstdOf,
  mapValues,
  writeChannelValues,
} from "../tensors/channel_values.ts";
import { type Call, execute, float64, visible } from "./call.ts";
import { batchNormGradCentered, GRADIENT_CONSTANTS } from "../kernels/formulas.ts";
import type { Stage, WriteStage } from "../kernels/stage_types.ts";
import { type ChannelPair, mergeChannelSums } from "./merge.ts";
import { batchNormCall, sumsStage, writeStage } from "./setup.ts";
import { blockGeometry, channelBlocks, channelViews } from "./cache_blocks.ts";
import { rowsInMemoryOrder } from "../kernels/layout_types.ts";
import { RELAYOUT, runStaged } from "./staging.ts";
import { Tensor } from "../../../tensor/tensor.ts";

/** aclnnBatchNormReduceBackward: sumDy, sumDyXmu, gradWeight = sumDyXmu * invstd, gradBias. */
export function batchNormReduceBackward(
  plan: BatchNormReduceBackwardPlan,
  t: BatchNormReduceBackwardTensors,
): void {
  const g = plan.geometry;
  if (g.channels === 0) return;
  if (!t.sumDy && !t.sumDyXmu && !t.gradWeight && !t.gradBias) return;
  if (g.perChannel === 0) {
    // Every output 0, whatever invstd holds (OutputParamFillZeroForEmptyTensor in ops-nn
    // norm/sync_batch_norm_backward_reduce/op_api/aclnn_batch_norm_backward_reduce.cpp).
    for (const out of [t.sumDy, t.sumDyXmu, t.gradWeight, t.gradBias]) {
      if (out) writeChannelValues(out, temporaryFloat64(g.channels));
    }
    return;
  }
  const call = batchNormCall(g, [t.gradOut, t.input], undefined);
  if (!call) {
    return runStaged(
      t,
      { inputs: ["gradOut", "input"], outputs: [] },
      (s) => batchNormReduceBackward(plan, s),
      RELAYOUT,
    );
  }
  const sums = sumsStage(call, t.gradOut, t.input, channelValues(t.mean));
  execute(call, [sums]);
  const { first: sumDy, second: sumDyXmu } = mergeChannelSums(call.layout, sums.partials);
  if (t.sumDy) writeChannelValues(t.sumDy, sumDy);
  if (t.sumDyXmu) writeChannelValues(t.sumDyXmu, sumDyXmu);
  if (t.gradWeight) {
    const inv = channelValues(t.invstd);
    writeChannelValues(t.gradWeight, mapValues(sumDyXmu, (v, c) => v * inv[c]));
  }
  if (t.gradBias) writeChannelValues(t.gradBias, sumDy);
}

/**
 * The gradInput stage: gi = w * invstd * (dy - sumDy / M - (x - mean) * invstd^2 *
 * sumDyXmu / M), as the gradient's per-channel constants packed by
 * {@linkcode fillGradConstants}.
 */
function gradStage(
  call: Call,
  dy: Tensor,
  x: Tensor,
  gradInput: Tensor,
  dataSums: boolean,
): WriteStage {
  const constants = float64(call, GRADIENT_CONSTANTS * call.layout.C);
  return writeStage(call, "gradient", dy, x, gradInput, constants, dataSums);
}

/** The training-mode gradient's per-channel constants (see formulas.ts), with M = total. */
function fillGradConstants(
  stage: WriteStage,
  mean: Float64Array,
  invstd: Float64Array,
  weight: Float64Array,
  sums: ChannelPair,
  total: number,
): void {
  const C = mean.length;
  for (let c = 0; c < C; c++) {
    const is = invstd[c];
    const scale = weight[c] * is;
    const meanDy = sums.first[c] / total;
    const k = is * is * sums.second[c] / total;
    batchNormGradCentered(mean[c], scale, meanDy, k, stage.constants, c, C);
  }
}

/** aclnnBatchNormBackward's data tensors (channels along dim 1). */
const DATA_TENSORS = ["gradOut", "input", "gradInput"] as const;

/** aclnnBatchNormBackward's per-channel tensors. */
const CHANNEL_TENSORS = [
  "weight",
  "runningMean",
  "runningVar",
  "saveMean",
  "saveInvstd",
  "gradWeight",
  "gradBias",
] as const;

/**
 * aclnnBatchNormBackward. Training: statistics saveMean/saveInvstd (0/1 when absent);
 * evaluation: runningMean and 1/sqrt(runningVar + eps). The sums pass runs only when an
 * output needs it; in evaluation mode gradInput = dy * w * invstd needs none. Empty inputs
 * give zero gradWeight and gradBias. A large training-mode gradInput call runs in channel
 * blocks (cache_blocks.ts: the same bits, the write pass reading from the cache).
 */
export function batchNormBackward(plan: BatchNormBackwardPlan, t: BatchNormBackwardTensors): void {
  const g = plan.geometry;
  const C = g.channels;
  const [wantInput, wantWeight, wantBias] = plan.mask;
  const gradInput = wantInput ? t.gradInput : undefined;
  if (g.perChannel === 0) {
    if (wantWeight && t.gradWeight) writeChannelValues(t.gradWeight, temporaryFloat64(C));
    if (wantBias && t.gradBias) writeChannelValues(t.gradBias, temporaryFloat64(C));
    return;
  }
  if (C === 0) return;
  const call = batchNormCall(g, [t.gradOut, t.input], gradInput);
  if (!call) {
    return runStaged(
      t,
      { inputs: ["gradOut", "input"], outputs: wantInput ? ["gradInput"] : [] },
      (s) => batchNormBackward(plan, s),
      RELAYOUT,
    );
  }
  if (
    plan.training && gradInput && call.layout.kind === "rows" && !rowsInMemoryOrder(call.layout)
  ) {
    const blocks = channelBlocks(g, [t.gradOut, t.input], CHANNEL_TENSORS.map((k) => t[k]));
    if (blocks) {
      for (const [c0, c1] of blocks) {
        const geometry = blockGeometry(g, c1 - c0);
        const views = channelViews(t, DATA_TENSORS, CHANNEL_TENSORS, c0, c1);
        batchNormBackward({ ...plan, geometry }, views);
      }
      return;
    }
  }
  const mean = plan.training
    ? channelValuesOr(t.saveMean, C, 0)
    : channelValuesOr(t.runningMean, C, 0);
  const invstd = plan.training
    ? channelValuesOr(t.saveInvstd, C, 1)
    : invstdOf(channelValuesOr(t.runningVar, C, 1), plan.eps);
  const weight = channelValuesOr(t.weight, C, 1);
  const needSums = wantWeight || wantBias || (gradInput !== undefined && plan.training);
  const stages: Stage[] = [];
  const between: (() => void)[] = [];
  let sums: ChannelPair | undefined;
  if (needSums) {
    const stage = sumsStage(call, t.gradOut, t.input, mean);
    stages.push(stage);
    between.push(() => (sums = mergeChannelSums(call.layout, stage.partials)));
  }
  if (gradInput && plan.training) {
    const stage = gradStage(call, t.gradOut, t.input, gradInput, true);
    stages.push(stage);
    const merge = between.pop()!;
    between.push(() => {
      merge();
      fillGradConstants(stage, mean, invstd, weight, sums!, g.perChannel);
    });
  } else if (gradInput) {
    const scale = visible(call, mapValues(weight, (w, c) => w * invstd[c]));
    stages.push(writeStage(call, "scale", t.gradOut, undefined, gradInput, scale));
  }
  execute(call, stages, between);
  if (wantWeight && t.gradWeight) {
    writeChannelValues(
      t.gradWeight,
      mapValues(sums!.second, (v, c) => v * invstd[c]),
    );
  }
  if (wantBias && t.gradBias) writeChannelValues(t.gradBias, sums!.first);
}

/**
 * aclnnBatchNormElemtBackward with M = sum(counter). Empty inputs write nothing.
 *
 * As CANN (ops-nn norm/sync_batch_norm_backward_elemt/op_api/aclnn_batch_norm_elemt_backward.cpp,
 * MeanByCounter and RunElemtBackwardCore): meanDy = sumDy / M and meanDyXmu = sumDyXmu / M are
 * quotients in float32 (RealDiv of float32 casts), cast to the promoted type; when that type is
 * float16 ({@linkcode computesInFloat16}) the kernel's result is float16, and only that is cast to
 * gradInput's dtype (a float32 gradInput then holds float16 values).
 */
export function batchNormElemtBackward(
  plan: BatchNormElemtBackwardPlan,
  t: BatchNormElemtBackwardTensors,
): void {
  const g = plan.geometry;
  if (g.perChannel === 0 || g.channels === 0) return;
  const float16 = computesInFloat16(t);
  if (float16 && t.gradInput.dtype !== "float16") {
    using half = Tensor.empty(t.gradInput.shape, "float16");
    batchNormElemtBackward(plan, { ...t, gradInput: half });
    t.gradInput.copy_(half);
    return;
  }
  const call = batchNormCall(g, [t.gradOut, t.input], t.gradInput);
  if (!call) {
    return runStaged(
      t,
      { inputs: ["gradOut", "input"], outputs: ["gradInput"] },
      (s) => batchNormElemtBackward(plan, s),
      RELAYOUT,
    );
  }
  let total = 0;
  for (const v of channelValues(t.counter)) total += v;
  // Given sums (another rank's, SyncBatchNorm): not this call's over its data.
  const stage = gradStage(call, t.gradOut, t.input, t.gradInput, false);
  const toPromoted = float16 ? Math.f16round : (v: number) => v;
  const mean = (sums: Float64Array) => mapValues(sums, (v) => toPromoted(Math.fround(v / total)));
  const means = { first: mean(channelValues(t.sumDy)), second: mean(channelValues(t.sumDyXmu)) };
  const weight = channelValuesOr(t.weight, g.channels, 1);
  fillGradConstants(stage, channelValues(t.mean), channelValues(t.invstd), weight, means, 1);
  execute(call, [stage]);
}

/**
 * Whether CANN computes aclnnBatchNormElemtBackward in float16: GetPromoteType gives FLOAT16
 * only when gradOut, input, mean, invstd, weight, sumDy and sumDyXmu are all float16; an absent
 * weight is FillScalar's float32 fill of ones, so it needs a float16 weight.
 */
function computesInFloat16(t: BatchNormElemtBackwardTensors): boolean {
  const promoted = [t.gradOut, t.input, t.mean, t.invstd, t.weight, t.sumDy, t.sumDyXmu];
  return promoted.every((x) => x?.dtype === "float16");
}
