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
  BatchNormReducePlan,
  BatchNormReduceTensors,
  BatchNormStatsPlan,
  BatchNormStatsTensors,
  BatchNormTensors,
  GroupNormBackwardPlan,
  GroupNormBackwardTensors,
  GroupNormPlan,
  GroupNormTensors,
  SyncBatchNormGatherStatsPlan,
  SyncBatchNormGatherStatsTensors,
} from "../types.ts";
import { ascendRules } from "./rules.ts";
import { ascendRowNormKernels } from "./row_norm.ts";
import { invstdToSaved, savedToInvstd } from "./save_statistics.ts";

function deviceOf(t: Tensor): AscendDevice {
  return t.device as AscendDevice;
}

/**
 * Per-channel reductions over an empty batch are 0 on every backend. CANN leaves them
 * unwritten on most SoCs (aclnnBatchNormBackward, aclnnBatchNormReduceBackward and
 * aclnnGroupNormBackward return before launching anything; only DAV_3510 zero-fills some),
 * so the backend writes the zeros itself instead of calling the operator.
 */
function zeroFill(...outputs: (Tensor | undefined)[]): void {
  for (const t of outputs) if (t && t.numel > 0) t.copy_(new Float64Array(t.numel));
}

/**
 * A zero-filled scratch tensor for a running statistic CANN needs in pairs: with runningMean
 * but no runningVar aclnnBatchNormGatherStatsWithCounts dereferences null (a crash), and with
 * runningVar but no runningMean it silently skips the runningVar update
 * (ops-nn aclnn_batch_norm_gather_stats_with_counts.cpp, CopyRunningTensorToDst).
 */
function pairedRunningStat(
  given: Tensor | undefined,
  other: Tensor | undefined,
  device: AscendDevice,
): Tensor | undefined {
  if (given || !other) return given;
  return Tensor.zeros(other.shape, other.dtype, device);
}

/** The Ascend backend. */
export const ascendBackend: Backend = {
  name: "ascend",
  owns: (device: Device) => device instanceof AscendDevice,
  rules: ascendRules,

  batchNormReduceBackward(p: BatchNormReduceBackwardPlan, t: BatchNormReduceBackwardTensors) {
    if (p.geometry.perChannel === 0) {
      zeroFill(t.sumDy, t.sumDyXmu, t.gradWeight, t.gradBias);
      return;
    }
    runAclnn(deviceOf(t.input), "aclnnBatchNormReduceBackward", [
      arg.tensor(t.gradOut),
      arg.tensor(t.input),
      arg.tensor(t.mean),
      arg.tensor(t.invstd),
      arg.tensor(t.weight),
      arg.bool(p.inputG),
      arg.bool(p.weightG),
      arg.bool(p.biasG),
      arg.output(t.sumDy),
      arg.output(t.sumDyXmu),
      arg.output(t.gradWeight),
      arg.output(t.gradBias),
    ]);
  },

  batchNormBackward(p: BatchNormBackwardPlan, t: BatchNormBackwardTensors) {
    const device = deviceOf(t.input);
    if (p.geometry.perChannel === 0) {
      zeroFill(t.gradWeight, t.gradBias);
      return;
    }
    const saved = p.training
      ? invstdToSaved(device, t.saveInvstd, p.geometry.channels, p.eps)
      : undefined;
    // CANN documents no in-place gradInput; InfiniOp's gradInput over gradOutput goes through
    // a scratch output.
    const inPlace = t.gradInput !== undefined && t.gradInput.storage === t.gradOut.storage;
    let gradInput = inPlace ? undefined : t.gradInput;
    try {
      // Inside the try: when the scratch cannot be allocated, `saved` is still freed.
      if (inPlace) gradInput = Tensor.zeros(t.gradInput!.shape, t.gradInput!.dtype, device);
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
        arg.output(gradInput),
        arg.output(t.gradWeight),
        arg.output(t.gradBias),
      ]);
      if (inPlace) t.gradInput!.copy_(gradInput!);
    } finally {
      saved?.release();
      if (inPlace) gradInput?.dispose();
    }
  },

  groupNormBackward(p: GroupNormBackwardPlan, t: GroupNormBackwardTensors) {
    if (p.N * p.C * p.HxW === 0) {
      zeroFill(t.gradGamma, t.gradBeta);
      return;
    }
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
      arg.output(t.gradInput),
      arg.output(t.gradGamma),
      arg.output(t.gradBeta),
    ]);
  },

  batchNormStats(p: BatchNormStatsPlan, t: BatchNormStatsTensors) {
    runAclnn(deviceOf(t.input), "aclnnBatchNormStats", [
      arg.tensor(t.input),
      arg.f64(p.eps),
      arg.output(t.mean),
      arg.output(t.invstd),
    ]);
  },

  batchNormGatherStatsWithCounts(p: BatchNormGatherStatsPlan, t: BatchNormGatherStatsTensors) {
    const device = deviceOf(t.input);
    const runningMean = pairedRunningStat(t.runningMean, t.runningVar, device);
    const runningVar = pairedRunningStat(t.runningVar, t.runningMean, device);
    try {
      runAclnn(device, "aclnnBatchNormGatherStatsWithCounts", [
        arg.tensor(t.input),
        arg.tensor(t.mean),
        arg.tensor(t.invstd),
        arg.tensor(runningMean),
        arg.tensor(runningVar),
        arg.f64(p.momentum),
        arg.f64(p.eps),
        arg.tensor(t.counts),
        arg.output(t.meanAll),
        arg.output(t.invstdAll),
      ]);
    } finally {
      if (runningMean !== t.runningMean) runningMean?.dispose();
      if (runningVar !== t.runningVar) runningVar?.dispose();
    }
  },

  batchNormElemt(p: BatchNormElemtPlan, t: BatchNormElemtTensors) {
    runAclnn(deviceOf(t.input), "aclnnBatchNormElemt", [
      arg.tensor(t.input),
      arg.tensor(t.weight),
      arg.tensor(t.bias),
      arg.tensor(t.mean),
      arg.tensor(t.invstd),
      arg.f64(p.eps),
      arg.output(t.output),
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
      arg.output(t.gradInput),
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
      arg.output(t.output),
      arg.output(t.saveMean),
      arg.output(t.saveInvstd),
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
      arg.output(t.output),
      arg.output(t.mean),
      arg.output(t.rstd),
    ]);
  },

  batchNormReduce(_p: BatchNormReducePlan, t: BatchNormReduceTensors) {
    // CANN's own empty path fills sum and squareSum with 0 (aclnn_batch_norm_reduce.cpp).
    runAclnn(deviceOf(t.x), "aclnnBatchNormReduce", [
      arg.tensor(t.x),
      arg.output(t.sum),
      arg.output(t.squareSum),
    ]);
  },

  syncBatchNormGatherStats(p: SyncBatchNormGatherStatsPlan, t: SyncBatchNormGatherStatsTensors) {
    // mean and variance are inputs CANN updates in place; momentum and eps are C floats.
    runAclnn(deviceOf(t.totalSum), "aclnnSyncBatchNormGatherStats", [
      arg.tensor(t.totalSum),
      arg.tensor(t.totalSquareSum),
      arg.tensor(t.sampleCount),
      arg.tensor(t.mean),
      arg.tensor(t.variance),
      arg.f32(p.momentum),
      arg.f32(p.eps),
      arg.output(t.batchMean),
      arg.output(t.batchInvstd),
    ]);
  },

  // LayerNorm / RMSNorm (row_norm.ts).
  ...ascendRowNormKernels,
};
