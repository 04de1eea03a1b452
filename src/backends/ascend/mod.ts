/**
 * The Ascend backend: every kernel is one two-phase aclnn call through `src/ffi` on the
 * device the tensors live on, its arguments by their names in the C header
 * (src/ffi/aclnn_call.ts). Where a chip's native convention differs from this package's
 * (saveInvstd holding the variance on most SoCs), {@linkcode ./save_statistics.ts} converts at
 * this boundary, in both directions.
 *
 * @module
 */

import { type AclnnArguments, callAclnn } from "../../ffi/aclnn_call.ts";
import { AscendDevice } from "../../ffi/runtime.ts";
import type { Device } from "../../tensor/device.ts";
import { Tensor } from "../../tensor/tensor.ts";
import type { Backend, BatchNormBackwardPlan, BatchNormBackwardTensors } from "../types.ts";
import { ascendRules } from "./rules.ts";
import { ascendRowNormKernels } from "./row_norm.ts";
import { ascendGroupNormActKernels } from "./group_norm_act.ts";
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

/**
 * aclnnBatchNormBackward's arguments; aclnnFastBatchNormBackward takes the same ones and its
 * `version` (the two C prototypes differ by that int).
 */
function backwardArguments(
  p: BatchNormBackwardPlan,
  t: BatchNormBackwardTensors,
  saveInvstd: Tensor | undefined,
  gradInput: Tensor | undefined,
): AclnnArguments<"aclnnBatchNormBackward"> {
  return {
    gradOut: t.gradOut,
    input: t.input,
    weight: t.weight,
    runningMean: t.runningMean,
    runningVar: t.runningVar,
    saveMean: t.saveMean,
    saveInvstd,
    training: p.training,
    eps: p.eps,
    outputMask: p.mask,
    gradInput,
    gradWeight: t.gradWeight,
    gradBias: t.gradBias,
  };
}

/** The Ascend backend. */
export const ascendBackend: Backend = {
  name: "ascend",
  owns: (device: Device) => device instanceof AscendDevice,
  rules: ascendRules,

  batchNormReduceBackward(p, t) {
    if (p.geometry.perChannel === 0) {
      zeroFill(t.sumDy, t.sumDyXmu, t.gradWeight, t.gradBias);
      return;
    }
    callAclnn(deviceOf(t.input), "aclnnBatchNormReduceBackward", {
      gradOut: t.gradOut,
      input: t.input,
      mean: t.mean,
      invstd: t.invstd,
      weight: t.weight,
      inputG: p.inputG,
      weightG: p.weightG,
      biasG: p.biasG,
      sumDy: t.sumDy,
      sumDyXmu: t.sumDyXmu,
      gradWeight: t.gradWeight,
      gradBias: t.gradBias,
    });
  },

  batchNormBackward(p, t) {
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
      callAclnn(
        device,
        "aclnnBatchNormBackward",
        backwardArguments(p, t, saved?.tensor ?? t.saveInvstd, gradInput),
      );
      if (inPlace) t.gradInput!.copy_(gradInput!);
    } finally {
      saved?.release();
      if (inPlace) gradInput?.dispose();
    }
  },

  groupNormBackward(p, t) {
    if (p.N * p.C * p.HxW === 0) {
      zeroFill(t.gradGamma, t.gradBeta);
      return;
    }
    callAclnn(deviceOf(t.input), "aclnnGroupNormBackward", {
      gradOut: t.gradOut,
      input: t.input,
      mean: t.mean,
      rstd: t.rstd,
      gamma: t.gamma,
      N: p.N,
      C: p.C,
      HxW: p.HxW,
      group: p.group,
      outputMask: p.mask,
      gradInput: t.gradInput,
      gradGammaOut: t.gradGamma,
      gradBetaOut: t.gradBeta,
    });
  },

  batchNormStats(p, t) {
    callAclnn(deviceOf(t.input), "aclnnBatchNormStats", {
      input: t.input,
      eps: p.eps,
      mean: t.mean,
      invstd: t.invstd,
    });
  },

  batchNormGatherStatsWithCounts(p, t) {
    const device = deviceOf(t.input);
    const runningMean = pairedRunningStat(t.runningMean, t.runningVar, device);
    const runningVar = pairedRunningStat(t.runningVar, t.runningMean, device);
    try {
      callAclnn(device, "aclnnBatchNormGatherStatsWithCounts", {
        input: t.input,
        mean: t.mean,
        invstd: t.invstd,
        runningMean: runningMean,
        runningVar: runningVar,
        momentum: p.momentum,
        eps: p.eps,
        counts: t.counts,
        meanAll: t.meanAll,
        invstdAll: t.invstdAll,
      });
    } finally {
      if (runningMean !== t.runningMean) runningMean?.dispose();
      if (runningVar !== t.runningVar) runningVar?.dispose();
    }
  },

  batchNormElemt(p, t) {
    callAclnn(deviceOf(t.input), "aclnnBatchNormElemt", {
      input: t.input,
      weight: t.weight,
      bias: t.bias,
      mean: t.mean,
      invstd: t.invstd,
      eps: p.eps,
      output: t.output,
    });
  },

  batchNormElemtBackward(_p, t) {
    callAclnn(deviceOf(t.input), "aclnnBatchNormElemtBackward", {
      gradOut: t.gradOut,
      input: t.input,
      mean: t.mean,
      invstd: t.invstd,
      weight: t.weight,
      sumDy: t.sumDy,
      sumDyXmu: t.sumDyXmu,
      counter: t.counter,
      gradInput: t.gradInput,
    });
  },

  batchNorm(p, t) {
    const device = deviceOf(t.input);
    callAclnn(device, "aclnnBatchNorm", {
      input: t.input,
      weight: t.weight,
      bias: t.bias,
      runningMean: t.runningMean,
      runningVar: t.runningVar,
      training: p.training,
      momentum: p.momentum,
      eps: p.eps,
      output: t.output,
      saveMean: t.saveMean,
      saveInvstd: t.saveInvstd,
    });
    if (p.training) savedToInvstd(device, t.saveInvstd, p.eps);
  },

  groupNorm(p, t) {
    callAclnn(deviceOf(t.input), "aclnnGroupNorm", {
      self: t.input,
      gamma: t.gamma,
      beta: t.beta,
      N: p.N,
      C: p.C,
      HxW: p.HxW,
      group: p.group,
      eps: p.eps,
      out: t.output,
      meanOut: t.mean,
      rstdOut: t.rstd,
    });
  },

  batchNormReduce(_p, t) {
    // CANN's own empty path fills sum and squareSum with 0 (aclnn_batch_norm_reduce.cpp).
    callAclnn(deviceOf(t.x), "aclnnBatchNormReduce", {
      x: t.x,
      sum: t.sum,
      squareSum: t.squareSum,
    });
  },

  syncBatchNormGatherStats(p, t) {
    // mean and variance are inputs CANN updates in place; momentum and eps are C floats.
    callAclnn(deviceOf(t.totalSum), "aclnnSyncBatchNormGatherStats", {
      totalSum: t.totalSum,
      totalSquareSum: t.totalSquareSum,
      sampleCount: t.sampleCount,
      mean: t.mean,
      variance: t.variance,
      momentum: p.momentum,
      eps: p.eps,
      batchMean: t.batchMean,
      batchInvstd: t.batchInvstd,
    });
  },

  instanceNorm(p, t) {
    callAclnn(deviceOf(t.x), "aclnnInstanceNorm", {
      x: t.x,
      gamma: t.gamma,
      beta: t.beta,
      dataFormat: p.dataFormat,
      eps: p.eps,
      y: t.y,
      mean: t.mean,
      variance: t.variance,
    });
  },

  fastBatchNormBackward(p, t) {
    // CANN's empty path never reaches here (the operator fills gradWeight/gradBias itself); the
    // library's saveInvstd is converted to the variance A2 reads in that slot (save_statistics.ts).
    const device = deviceOf(t.input);
    const saved = p.training
      ? invstdToSaved(
        device,
        t.saveInvstd,
        p.geometry.channels,
        p.eps,
        "aclnnFastBatchNormBackward",
      )
      : undefined;
    try {
      callAclnn(device, "aclnnFastBatchNormBackward", {
        ...backwardArguments(p, t, saved?.tensor ?? t.saveInvstd, t.gradInput),
        version: p.version,
      });
    } finally {
      saved?.release();
    }
  },

  // LayerNorm / RMSNorm (row_norm.ts).
  ...ascendRowNormKernels,
  // The activated GroupNorm operators (group_norm_act.ts).
  ...ascendGroupNormActKernels,
};
