/**
 * The oracle's BatchNorm backward family in the kernel contract: aclnnBatchNormReduceBackward,
 * aclnnBatchNormBackward and aclnnBatchNormElemtBackward. Values from the oracle's functions;
 * this file says which tensors each operator writes (masks, absent outputs).
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
} from "../../../src/backends/types.ts";
import { batchNormBackward64 } from "../batch_norm_backward.ts";
import { batchNormElemtBackward64 } from "../batch_norm_elemt_backward.ts";
import { batchNormReduceBackward64 } from "../batch_norm_reduce_backward.ts";
import { channelShape, read, readIf, write } from "./io.ts";

/** aclnnBatchNormReduceBackward: sumDy, sumDyXmu, gradWeight, gradBias where present. */
export function batchNormReduceBackward(
  plan: BatchNormReduceBackwardPlan,
  t: BatchNormReduceBackwardTensors,
): void {
  const r = batchNormReduceBackward64(
    read(t.gradOut),
    read(t.input),
    channelShape(plan.geometry),
    read(t.mean),
    read(t.invstd),
  );
  write(t.sumDy, r.sumDy);
  write(t.sumDyXmu, r.sumDyXmu);
  write(t.gradWeight, r.gradWeight);
  write(t.gradBias, r.gradBias);
}

/** aclnnBatchNormBackward: the masked-on gradients (statistics chosen by the mode). */
export function batchNormBackward(plan: BatchNormBackwardPlan, t: BatchNormBackwardTensors): void {
  const [wantInput, wantWeight, wantBias] = plan.mask;
  const r = batchNormBackward64({
    dy: read(t.gradOut),
    x: read(t.input),
    shape: channelShape(plan.geometry),
    weight: readIf(t.weight),
    runningMean: readIf(t.runningMean),
    runningVar: readIf(t.runningVar),
    saveMean: readIf(t.saveMean),
    saveInvstd: readIf(t.saveInvstd),
    training: plan.training,
    eps: plan.eps,
  });
  if (wantInput) write(t.gradInput, r.gradInput);
  if (wantWeight) write(t.gradWeight, r.gradWeight);
  if (wantBias) write(t.gradBias, r.gradBias);
}

/** aclnnBatchNormElemtBackward with M = sum(counter). */
export function batchNormElemtBackward(
  plan: BatchNormElemtBackwardPlan,
  t: BatchNormElemtBackwardTensors,
): void {
  if (plan.geometry.perChannel === 0) return;
  write(
    t.gradInput,
    batchNormElemtBackward64({
      dy: read(t.gradOut),
      x: read(t.input),
      shape: channelShape(plan.geometry),
      mean: read(t.mean),
      invstd: read(t.invstd),
      weight: readIf(t.weight),
      sumDy: read(t.sumDy),
      sumDyXmu: read(t.sumDyXmu),
      counter: read(t.counter),
    }),
  );
}
