/**
 * Float64 reference kernels of the BatchNorm backward family: aclnnBatchNormReduceBackward,
 * aclnnBatchNormBackward and aclnnBatchNormElemtBackward. They read whole tensors into
 * Float64Arrays, compute, and round each result once into its output: slow, simple, and the
 * implementation the fast kernels are tested against.
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
  ChannelGeometry,
} from "../../../src/backends/types.ts";
import { channelSums, elemtBackwardValues, invstdOf, valuesOr } from "./values.ts";

/** aclnnBatchNormReduceBackward: sumDy, sumDyXmu, gradWeight = sumDyXmu * invstd, gradBias. */
export function batchNormReduceBackward(
  plan: BatchNormReduceBackwardPlan,
  t: BatchNormReduceBackwardTensors,
): void {
  const sums = channelSums(
    plan.geometry,
    t.gradOut.toFloat64Array(),
    t.input.toFloat64Array(),
    t.mean.toFloat64Array(),
  );
  t.sumDy?.copy_(sums.sumDy);
  t.sumDyXmu?.copy_(sums.sumDyXmu);
  if (t.gradWeight) {
    const inv = t.invstd.toFloat64Array();
    t.gradWeight.copy_(sums.sumDyXmu.map((v, c) => v * inv[c]));
  }
  t.gradBias?.copy_(sums.sumDy);
}

/** Evaluation mode: gradInput = dy * weight * invstd per channel (constant statistics). */
function evalGradInput(
  g: ChannelGeometry,
  dy: Float64Array,
  weight: Float64Array,
  invstd: Float64Array,
): Float64Array {
  const { outer, channels, inner } = g;
  const gradInput = new Float64Array(dy.length);
  for (let c = 0; c < channels; c++) {
    const scale = weight[c] * invstd[c];
    for (let n = 0; n < outer; n++) {
      const base = (n * channels + c) * inner;
      for (let j = base; j < base + inner; j++) gradInput[j] = dy[j] * scale;
    }
  }
  return gradInput;
}

/**
 * aclnnBatchNormBackward. Training: the statistics are saveMean/saveInvstd (0/1 when absent);
 * evaluation: runningMean and 1/sqrt(runningVar + eps) (0/1 when absent). Every input is read
 * before any output is written. Empty inputs give zero per-channel gradients.
 */
export function batchNormBackward(plan: BatchNormBackwardPlan, t: BatchNormBackwardTensors): void {
  const g = plan.geometry;
  const C = g.channels;
  const [wantInput, wantWeight, wantBias] = plan.mask;
  if (g.perChannel === 0) {
    if (wantWeight) t.gradWeight?.copy_(new Float64Array(C));
    if (wantBias) t.gradBias?.copy_(new Float64Array(C));
    return;
  }
  const mean = plan.training ? valuesOr(t.saveMean, C, 0) : valuesOr(t.runningMean, C, 0);
  const invstd = plan.training
    ? valuesOr(t.saveInvstd, C, 1)
    : invstdOf(valuesOr(t.runningVar, C, 1), plan.eps);
  const weight = valuesOr(t.weight, C, 1);
  const dy = t.gradOut.toFloat64Array();
  const x = t.input.toFloat64Array();
  const needSums = wantWeight || wantBias || (wantInput && plan.training);
  const sums = needSums ? channelSums(g, dy, x, mean) : undefined;
  let gradInput: Float64Array | undefined;
  if (wantInput) {
    gradInput = plan.training
      ? elemtBackwardValues(
        g,
        dy,
        x,
        mean,
        invstd,
        weight,
        sums!.sumDy,
        sums!.sumDyXmu,
        g.perChannel,
      )
      : evalGradInput(g, dy, weight, invstd);
  }
  if (gradInput) t.gradInput?.copy_(gradInput);
  if (wantWeight) t.gradWeight?.copy_(sums!.sumDyXmu.map((v, c) => v * invstd[c]));
  if (wantBias) t.gradBias?.copy_(sums!.sumDy);
}

/** aclnnBatchNormElemtBackward with M = sum(counter). Empty inputs write nothing. */
export function batchNormElemtBackward(
  plan: BatchNormElemtBackwardPlan,
  t: BatchNormElemtBackwardTensors,
): void {
  const g = plan.geometry;
  if (g.perChannel === 0) return;
  let total = 0;
  for (const v of t.counter.toFloat64Array()) total += v;
  t.gradInput.copy_(
    elemtBackwardValues(
      g,
      t.gradOut.toFloat64Array(),
      t.input.toFloat64Array(),
      t.mean.toFloat64Array(),
      t.invstd.toFloat64Array(),
      valuesOr(t.weight, g.channels, 1),
      t.sumDy.toFloat64Array(),
      t.sumDyXmu.toFloat64Array(),
      total,
    ),
  );
}
