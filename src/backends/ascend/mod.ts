/**
 * The Ascend backend: every kernel is one two-phase aclnn call through `src/ffi` on the
 * device the tensors live on, in the argument order of the C prototype. Where a chip's
 * native convention differs from this package's (saveInvstd holding the variance on most
 * SoCs), {@linkcode ./save_statistics.ts} converts at this boundary, in both directions.
 *
 * @module
 */

import { arg, runAclnn } from "../../ffi/executor.ts";
import { AscendDevice } from "../../ffi/runtime.ts";
import type { Device } from "../../tensor/device.ts";
import { Tensor } from "../../tensor/tensor.ts";
import type {
  Backend,
  BatchNormBackwardPlan,
  BatchNormBackwardTensors,
  BatchNormElemtBackwardPlan,
  BatchNormElemtBackwardTensors,
  BatchNormElemtPlan,
  BatchNormElemtTensors,
  BatchNormGatherStatsPlan,
  BatchNormGatherStatsTensors,
  BatchNormPlan,
  BatchNormReduceBackwardPlan,
  BatchNormReduceBackwardTensors,
  BatchNormStatsPlan,
  BatchNormStatsTensors,
  BatchNormTensors,
  GroupNormBackwardPlan,
  GroupNormBackwardTensors,
  GroupNormPlan,
  GroupNormTensors,
} from "../types.ts";
import { invstdToSaved, savedToInvstd } from "./save_statistics.ts";

function deviceOf(t: Tensor): AscendDevice {
  return t.device as AscendDevice;
}

/** The Ascend backend. */
export const ascendBackend: Backend = {
  name: "ascend",
  owns: (device: Device) => device instanceof AscendDevice,

  batchNormReduceBackward(p: BatchNormReduceBackwardPlan, t: BatchNormReduceBackwardTensors) {
    runAclnn(deviceOf(t.input), "aclnnBatchNormReduceBackward", [
      arg.tensor(t.gradOut),
      arg.tensor(t.input),
      arg.tensor(t.mean),
      arg.tensor(t.invstd),
      arg.tensor(t.weight),
      arg.bool(p.inputG),
      arg.bool(p.weightG),
      arg.bool(p.biasG),
      arg.tensor(t.sumDy),
      arg.tensor(t.sumDyXmu),
      arg.tensor(t.gradWeight),
      arg.tensor(t.gradBias),
    ]);
  },

  batchNormBackward(p: BatchNormBackwardPlan, t: BatchNormBackwardTensors) {
    const device = deviceOf(t.input);
    const saved = p.training ? invstdToSaved(device, t.saveInvstd, p.eps) : undefined;
    // CANN documents no in-place gradInput; InfiniOp's gradInput over gradOutput goes through
    // a scratch output.
    const inPlace = t.gradInput !== undefined && t.gradInput.storage === t.gradOut.storage;
    const gradInput = inPlace
      ? Tensor.zeros(t.gradInput!.shape, t.gradInput!.dtype, device)
      : t.gradInput;
    try {
      runAclnn(device, "aclnnBatchNormBackward", [
        arg.tensor(t.gradOut),
        arg.tensor(t.input),
        arg.tensor(t.weight),
        arg.tensor(t.runningMean),
        arg.tensor(t.runningVar),
        arg.tensor(t.saveMean),
        arg.tensor(saved?.tensor ?? t.saveInvstd),
        arg.bool(p.training),
        arg.f64(p.eps),
        arg.boolArray(p.mask),
        arg.tensor(gradInput),
        arg.tensor(t.gradWeight),
        arg.tensor(t.gradBias),
      ]);
      if (inPlace) t.gradInput!.copy_(gradInput!);
    } finally {
      saved?.release();
      if (inPlace) gradInput!.dispose();
    }
  },

  groupNormBackward(p: GroupNormBackwardPlan, t: GroupNormBackwardTensors) {
    runAclnn(deviceOf(t.input), "aclnnGroupNormBackward", [
      arg.tensor(t.gradOut),
      arg.tensor(t.input),
      arg.tensor(t.mean),
      arg.tensor(t.rstd),
      arg.tensor(t.gamma),
      arg.i64(p.N),
      arg.i64(p.C),
      arg.i64(p.HxW),
      arg.i64(p.group),
      arg.boolArray(p.mask),
      arg.tensor(t.gradInput),
      arg.tensor(t.gradGamma),
      arg.tensor(t.gradBeta),
    ]);
  },

  batchNormStats(p: BatchNormStatsPlan, t: BatchNormStatsTensors) {
    runAclnn(deviceOf(t.input), "aclnnBatchNormStats", [
      arg.tensor(t.input),
      arg.f64(p.eps),
      arg.tensor(t.mean),
      arg.tensor(t.invstd),
    ]);
  },

  batchNormGatherStatsWithCounts(p: BatchNormGatherStatsPlan, t: BatchNormGatherStatsTensors) {
    runAclnn(deviceOf(t.input), "aclnnBatchNormGatherStatsWithCounts", [
      arg.tensor(t.input),
      arg.tensor(t.mean),
      arg.tensor(t.invstd),
      arg.tensor(t.runningMean),
      arg.tensor(t.runningVar),
      arg.f64(p.momentum),
      arg.f64(p.eps),
      arg.tensor(t.counts),
      arg.tensor(t.meanAll),
      arg.tensor(t.invstdAll),
    ]);
  },

  batchNormElemt(p: BatchNormElemtPlan, t: BatchNormElemtTensors) {
    runAclnn(deviceOf(t.input), "aclnnBatchNormElemt", [
      arg.tensor(t.input),
      arg.tensor(t.weight),
      arg.tensor(t.bias),
      arg.tensor(t.mean),
      arg.tensor(t.invstd),
      arg.f64(p.eps),
      arg.tensor(t.output),
    ]);
  },

  batchNormElemtBackward(_p: BatchNormElemtBackwardPlan, t: BatchNormElemtBackwardTensors) {
    runAclnn(deviceOf(t.input), "aclnnBatchNormElemtBackward", [
      arg.tensor(t.gradOut),
      arg.tensor(t.input),
      arg.tensor(t.mean),
      arg.tensor(t.invstd),
      arg.tensor(t.weight),
      arg.tensor(t.sumDy),
      arg.tensor(t.sumDyXmu),
      arg.tensor(t.counter),
      arg.tensor(t.gradInput),
    ]);
  },

  batchNorm(p: BatchNormPlan, t: BatchNormTensors) {
    const device = deviceOf(t.input);
    runAclnn(device, "aclnnBatchNorm", [
      arg.tensor(t.input),
      arg.tensor(t.weight),
      arg.tensor(t.bias),
      arg.tensor(t.runningMean),
      arg.tensor(t.runningVar),
      arg.bool(p.training),
      arg.f64(p.momentum),
      arg.f64(p.eps),
      arg.tensor(t.output),
      arg.tensor(t.saveMean),
      arg.tensor(t.saveInvstd),
    ]);
    if (p.training) savedToInvstd(device, t.saveInvstd, p.eps);
  },

  groupNorm(p: GroupNormPlan, t: GroupNormTensors) {
    runAclnn(deviceOf(t.input), "aclnnGroupNorm", [
      arg.tensor(t.input),
      arg.tensor(t.gamma),
      arg.tensor(t.beta),
      arg.i64(p.N),
      arg.i64(p.C),
      arg.i64(p.HxW),
      arg.i64(p.group),
      arg.f64(p.eps),
      arg.tensor(t.output),
      arg.tensor(t.mean),
      arg.tensor(t.rstd),
    ]);
  },
};
