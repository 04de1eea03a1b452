/**
 * The Ascend backend's LayerNorm / RMSNorm kernels: each one two-phase aclnn call in the
 * argument order of its C prototype (src/ffi/symbols/opapi.ts). Where CANN leaves an output the
 * package defines unwritten, the backend writes it at this boundary: on chips whose AddRmsNorm
 * kernel never stores rstd (Atlas inference series), rstd from aclnnRmsNorm over the stored sum;
 * AddLayerNorm's mean and rstd there, NaN.
 * Calls CANN answers without computing (LayerNorm's rows of no element, AddRmsNorm's empty x1 or
 * gamma) are completed in src/ops and never reach a backend.
 *
 * @module
 */

import { arg, runAclnn } from "../../ffi/executor.ts";
import type { AscendDevice } from "../../ffi/runtime.ts";
import { Tensor } from "../../tensor/tensor.ts";
import type * as types from "../types.ts";
import { deviceSocFamily } from "./device_soc.ts";
import { addRmsNormStoresRstd } from "./soc.ts";
import { addLayerNormStoresStatistics } from "./soc_fused.ts";

function deviceOf(t: Tensor): AscendDevice {
  return t.device as AscendDevice;
}

/** aclnnRmsNorm or aclnnGemmaRmsNorm: the same prototype (x, gamma, epsilon, yOut, rstdOut). */
function rmsForward(op: string, p: types.RmsNormPlan, t: types.RmsNormTensors): void {
  runAclnn(deviceOf(t.x), op, [
    arg.tensor(t.x),
    arg.tensor(t.gamma),
    arg.f64(p.epsilon),
    arg.output(t.y),
    arg.output(t.rstd),
  ]);
}

/**
 * rstd of the stored sum x, as aclnnRmsNorm computes it (its y goes to a scratch tensor): for the
 * chips whose AddRmsNorm kernel never stores rstd.
 */
function rstdOfSum(
  device: AscendDevice,
  p: types.AddRmsNormPlan,
  x: Tensor,
  gamma: Tensor,
  rstd: Tensor,
): void {
  const scratch = Tensor.zeros(x.shape, x.dtype, device);
  try {
    runAclnn(device, "aclnnRmsNorm", [
      arg.tensor(x),
      arg.tensor(gamma),
      arg.f64(p.epsilon),
      arg.output(scratch),
      arg.output(rstd),
    ]);
  } finally {
    scratch.dispose();
  }
}

/** The row-norm kernels of the Ascend backend. */
export const ascendRowNormKernels: Pick<
  types.Kernels,
  | "layerNorm"
  | "layerNormBackward"
  | "rmsNorm"
  | "rmsNormGrad"
  | "addRmsNorm"
  | "gemmaRmsNorm"
  | "inplaceAddRmsNorm"
  | "addLayerNorm"
  | "deepNorm"
> = {
  layerNorm(p: types.LayerNormPlan, t: types.LayerNormTensors) {
    // Rows of no element do not reach the backends: src/ops/layer_norm.ts fills mean with 0 and
    // rstd with NaN, as CANN's ProcessEmptyTensorWithValue does.
    runAclnn(deviceOf(t.input), "aclnnLayerNorm", [
      arg.tensor(t.input),
      arg.intArray(p.normalizedShape),
      arg.tensor(t.weight),
      arg.tensor(t.bias),
      arg.f64(p.eps),
      arg.output(t.output),
      arg.output(t.mean),
      arg.output(t.rstd),
    ]);
  },

  layerNormBackward(p: types.LayerNormBackwardPlan, t: types.LayerNormBackwardTensors) {
    // CANN zero-fills the masked gradWeight/gradBias itself when there are no rows.
    runAclnn(deviceOf(t.input), "aclnnLayerNormBackward", [
      arg.tensor(t.gradOut),
      arg.tensor(t.input),
      arg.intArray(p.normalizedShape),
      arg.tensor(t.mean),
      arg.tensor(t.rstd),
      arg.tensor(t.weight),
      arg.tensor(t.bias),
      arg.boolArray(p.mask),
      arg.output(p.mask[0] ? t.gradInput : undefined),
      arg.output(p.mask[1] ? t.gradWeight : undefined),
      arg.output(p.mask[2] ? t.gradBias : undefined),
    ]);
  },

  rmsNorm(p: types.RmsNormPlan, t: types.RmsNormTensors) {
    rmsForward("aclnnRmsNorm", p, t);
  },

  gemmaRmsNorm(p: types.GemmaRmsNormPlan, t: types.GemmaRmsNormTensors) {
    rmsForward("aclnnGemmaRmsNorm", p, t);
  },

  rmsNormGrad(_p: types.RmsNormGradPlan, t: types.RmsNormGradTensors) {
    runAclnn(deviceOf(t.x), "aclnnRmsNormGrad", [
      arg.tensor(t.dy),
      arg.tensor(t.x),
      arg.tensor(t.rstd),
      arg.tensor(t.gamma),
      arg.output(t.dx),
      arg.output(t.dgamma),
    ]);
  },

  addRmsNorm(p: types.AddRmsNormPlan, t: types.AddRmsNormTensors) {
    const device = deviceOf(t.x1);
    runAclnn(device, "aclnnAddRmsNorm", [
      arg.tensor(t.x1),
      arg.tensor(t.x2),
      arg.tensor(t.gamma),
      arg.f64(p.epsilon),
      arg.output(t.y),
      arg.output(t.rstd),
      arg.output(t.x),
    ]);
    if (addRmsNormStoresRstd(deviceSocFamily(device, "aclnnAddRmsNorm"))) return;
    rstdOfSum(device, p, t.x, t.gamma, t.rstd);
  },

  inplaceAddRmsNorm(p: types.InplaceAddRmsNormPlan, t: types.InplaceAddRmsNormTensors) {
    const device = deviceOf(t.x1Ref);
    // x1Ref and x2Ref are passed as the inputs they also are (as running statistics are).
    runAclnn(device, "aclnnInplaceAddRmsNorm", [
      arg.tensor(t.x1Ref),
      arg.tensor(t.x2Ref),
      arg.tensor(t.gamma),
      arg.f64(p.epsilon),
      arg.output(t.rstd),
    ]);
    // The same kernels as aclnnAddRmsNorm (op_kernel/inplace_add_rms_norm.cpp): no rstd stored on
    // the Atlas inference series; x2Ref now holds the sum.
    if (addRmsNormStoresRstd(deviceSocFamily(device, "aclnnInplaceAddRmsNorm"))) return;
    rstdOfSum(device, p, t.x2Ref, t.gamma, t.rstd);
  },

  addLayerNorm(p: types.AddLayerNormPlan, t: types.AddLayerNormTensors) {
    const device = deviceOf(t.x1);
    // xOut is a required pointer of the generated prototype; without additionalOutput the
    // kernel does not write it, so a scratch tensor of y's shape takes its place.
    const scratch = t.x ? undefined : Tensor.empty(t.y.shape, t.y.dtype, device);
    try {
      runAclnn(device, "aclnnAddLayerNorm", [
        arg.tensor(t.x1),
        arg.tensor(t.x2),
        arg.tensor(t.gamma),
        arg.tensor(t.beta),
        arg.tensor(t.bias),
        arg.f64(p.epsilon),
        arg.bool(p.additionalOutput),
        arg.output(t.y),
        arg.output(t.mean),
        arg.output(t.rstd),
        arg.output(t.x ?? scratch),
      ]);
    } finally {
      scratch?.dispose();
    }
    if (addLayerNormStoresStatistics(deviceSocFamily(device, "aclnnAddLayerNorm"))) return;
    // The Atlas inference series' kernel writes no mean or rstd: they hold no result.
    for (const s of [t.mean, t.rstd]) s.copy_(new Float64Array(s.numel).fill(NaN));
  },

  deepNorm(p: types.DeepNormPlan, t: types.DeepNormTensors) {
    runAclnn(deviceOf(t.x), "aclnnDeepNorm", [
      arg.tensor(t.x),
      arg.tensor(t.gx),
      arg.tensor(t.beta),
      arg.tensor(t.gamma),
      arg.f64(p.alpha),
      arg.f64(p.epsilon),
      arg.output(t.mean),
      arg.output(t.rstd),
      arg.output(t.y),
    ]);
  },
};
