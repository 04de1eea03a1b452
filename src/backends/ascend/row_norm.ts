/**
 * The Ascend backend's LayerNorm / RMSNorm kernels: each one two-phase aclnn call with its
 * arguments by name (src/ffi/aclnn_call.ts, src/ffi/symbols/aclnn_operators.ts). Where CANN
 * leaves an output the package defines unwritten, the backend writes it at this boundary: on
 * chips whose AddRmsNorm kernel never stores rstd (Atlas inference series), rstd from
 * aclnnRmsNorm over the stored sum; AddLayerNorm's mean and rstd there, NaN.
 * Calls CANN answers without computing (LayerNorm's rows of no element, AddRmsNorm's empty x1 or
 * gamma) are completed in src/ops and never reach a backend.
 *
 * @module
 */

import { callAclnn } from "../../ffi/aclnn_call.ts";
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
function rmsForward(
  op: "aclnnRmsNorm" | "aclnnGemmaRmsNorm",
  p: types.RmsNormPlan,
  t: types.RmsNormTensors,
): void {
  callAclnn(deviceOf(t.x), op, {
    x: t.x,
    gamma: t.gamma,
    epsilon: p.epsilon,
    yOut: t.y,
    rstdOut: t.rstd,
  });
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
    callAclnn(device, "aclnnRmsNorm", {
      x: x,
      gamma: gamma,
      epsilon: p.epsilon,
      yOut: scratch,
      rstdOut: rstd,
    });
  } finally {
    scratch.dispose();
  }
}

/** The arguments aclnnAdaLayerNorm and aclnnAdaLayerNormV2 share (the prototypes' first seven). */
function adaArguments(p: types.AdaLayerNormPlan, t: types.AdaLayerNormTensors) {
  return {
    x: t.x,
    scale: t.scale,
    shift: t.shift,
    weightOptional: t.weight,
    biasOptional: t.bias,
    epsilon: p.epsilon,
    out: t.output,
  };
}

/** The row-norm kernels of the Ascend backend. */
export const ascendRowNormKernels: types.RowNormKernels = {
  layerNorm(p, t) {
    // Rows of no element do not reach the backends: src/ops/layer_norm.ts fills mean with 0 and
    // rstd with NaN, as CANN's ProcessEmptyTensorWithValue does.
    callAclnn(deviceOf(t.input), "aclnnLayerNorm", {
      input: t.input,
      normalizedShape: p.normalizedShape,
      weightOptional: t.weight,
      biasOptional: t.bias,
      eps: p.eps,
      out: t.output,
      meanOutOptional: t.mean,
      rstdOutOptional: t.rstd,
    });
  },

  layerNormBackward(p, t) {
    // CANN zero-fills the masked gradWeight/gradBias itself when there are no rows.
    callAclnn(deviceOf(t.input), "aclnnLayerNormBackward", {
      gradOut: t.gradOut,
      input: t.input,
      normalizedShape: p.normalizedShape,
      mean: t.mean,
      rstd: t.rstd,
      weightOptional: t.weight,
      biasOptional: t.bias,
      outputMask: p.mask,
      gradInputOut: p.mask[0] ? t.gradInput : undefined,
      gradWeightOut: p.mask[1] ? t.gradWeight : undefined,
      gradBiasOut: p.mask[2] ? t.gradBias : undefined,
    });
  },

  rmsNorm(p, t) {
    rmsForward("aclnnRmsNorm", p, t);
  },

  gemmaRmsNorm(p, t) {
    rmsForward("aclnnGemmaRmsNorm", p, t);
  },

  rmsNormGrad(_p, t) {
    callAclnn(deviceOf(t.x), "aclnnRmsNormGrad", {
      dy: t.dy,
      x: t.x,
      rstd: t.rstd,
      gamma: t.gamma,
      dxOut: t.dx,
      dgammaOut: t.dgamma,
    });
  },

  addRmsNorm(p, t) {
    const device = deviceOf(t.x1);
    callAclnn(device, "aclnnAddRmsNorm", {
      x1: t.x1,
      x2: t.x2,
      gamma: t.gamma,
      epsilon: p.epsilon,
      yOut: t.y,
      rstdOut: t.rstd,
      xOut: t.x,
    });
    if (addRmsNormStoresRstd(deviceSocFamily(device, "aclnnAddRmsNorm"))) return;
    rstdOfSum(device, p, t.x, t.gamma, t.rstd);
  },

  inplaceAddRmsNorm(p, t) {
    const device = deviceOf(t.x1Ref);
    // x1Ref and x2Ref are passed as the inputs they also are (as running statistics are).
    callAclnn(device, "aclnnInplaceAddRmsNorm", {
      x1Ref: t.x1Ref,
      x2Ref: t.x2Ref,
      gamma: t.gamma,
      epsilon: p.epsilon,
      rstdOut: t.rstd,
    });
    // The same kernels as aclnnAddRmsNorm (op_kernel/inplace_add_rms_norm.cpp): no rstd stored on
    // the Atlas inference series; x2Ref now holds the sum.
    if (addRmsNormStoresRstd(deviceSocFamily(device, "aclnnInplaceAddRmsNorm"))) return;
    rstdOfSum(device, p, t.x2Ref, t.gamma, t.rstd);
  },

  addLayerNorm(p, t) {
    const device = deviceOf(t.x1);
    // xOut is a required pointer of the generated prototype; without additionalOutput the
    // kernel does not write it, so a scratch tensor of y's shape takes its place.
    const scratch = t.x ? undefined : Tensor.empty(t.y.shape, t.y.dtype, device);
    try {
      callAclnn(device, "aclnnAddLayerNorm", {
        x1: t.x1,
        x2: t.x2,
        gamma: t.gamma,
        beta: t.beta,
        biasOptional: t.bias,
        epsilon: p.epsilon,
        additionalOutput: p.additionalOutput,
        yOut: t.y,
        meanOut: t.mean,
        rstdOut: t.rstd,
        xOut: t.x ?? scratch,
      });
    } finally {
      scratch?.dispose();
    }
    if (addLayerNormStoresStatistics(deviceSocFamily(device, "aclnnAddLayerNorm"))) return;
    // The Atlas inference series' kernel writes no mean or rstd: they hold no result.
    for (const s of [t.mean, t.rstd]) s.copy_(new Float64Array(s.numel).fill(NaN));
  },

  deepNorm(p, t) {
    callAclnn(deviceOf(t.x), "aclnnDeepNorm", {
      x: t.x,
      gx: t.gx,
      beta: t.beta,
      gamma: t.gamma,
      alpha: p.alpha,
      epsilon: p.epsilon,
      meanOut: t.mean,
      rstdOut: t.rstd,
      yOut: t.y,
    });
  },

  addLayerNormGrad(_p, t) {
    callAclnn(deviceOf(t.dy), "aclnnAddLayerNormGrad", {
      dy: t.dy,
      x1: t.x1,
      x2: t.x2,
      rstd: t.rstd,
      mean: t.mean,
      gamma: t.gamma,
      dsumOptional: t.dsum,
      dxOut: t.dx,
      dgammaOut: t.dgamma,
      dbetaOut: t.dbeta,
    });
  },

  deepNormGrad(p, t) {
    callAclnn(deviceOf(t.dy), "aclnnDeepNormGrad", {
      dy: t.dy,
      x: t.x,
      gx: t.gx,
      gamma: t.gamma,
      mean: t.mean,
      rstd: t.rstd,
      alpha: p.alpha,
      dxOut: t.dx,
      dgxOut: t.dgx,
      dbetaOut: t.dbeta,
      dgammaOut: t.dgamma,
    });
  },

  addRmsNormCast(p, t) {
    callAclnn(deviceOf(t.x1), "aclnnAddRmsNormCast", {
      x1: t.x1,
      x2: t.x2,
      gamma: t.gamma,
      epsilon: p.epsilon,
      y1Out: t.y1,
      y2Out: t.y2,
      rstdOut: t.rstd,
      xOut: t.x,
    });
  },

  adaLayerNorm(p, t) {
    callAclnn(deviceOf(t.x), "aclnnAdaLayerNorm", adaArguments(p, t));
  },

  adaLayerNormV2(p, t) {
    const args = { ...adaArguments(p, t), meanOutOptional: t.mean, rstdOutOptional: t.rstd };
    callAclnn(deviceOf(t.x), "aclnnAdaLayerNormV2", args);
  },

  fastLayerNorm(p, t) {
    // Rows of no element and inputs of no row do not reach the backends (src/ops/fast_layer_norm.ts
    // completes them as aclnn_fast_layer_norm.cpp:355-373 does).
    callAclnn(deviceOf(t.input), "aclnnFastLayerNorm", {
      input: t.input,
      normalizedShape: p.normalizedShape,
      weightOptional: t.weight,
      biasOptional: t.bias,
      eps: p.eps,
      out: t.output,
      meanOutOptional: t.mean,
      rstdOutOptional: t.rstd,
    });
  },

  adaLayerNormBackward(p, t) {
    // The op_api casts gradInput, gradScale and gradShift to their outputs' dtypes whether or
    // not those are null (GenOutWithMask with mask true: aclnn_ada_layer_norm_backward.cpp
    // :348-359, :450-452), so an output the caller skips gets a scratch tensor.
    const device = deviceOf(t.input);
    const scratch: Tensor[] = [];
    const or = (given: Tensor | undefined, like: Tensor): Tensor => {
      if (given) return given;
      const s = Tensor.empty(like.shape, like.dtype, device);
      scratch.push(s);
      return s;
    };
    try {
      callAclnn(device, "aclnnAdaLayerNormBackward", {
        gradOut: t.gradOut,
        input: t.input,
        normalizedShape: p.normalizedShape,
        rstd: t.rstd,
        mean: t.mean,
        scale: t.scale,
        shift: t.shift,
        weightOptional: t.weight,
        biasOptional: t.bias,
        gradInputOut: or(t.gradInput, t.input),
        gradScaleOut: or(t.gradScale, t.scale),
        gradShiftOut: or(t.gradShift, t.shift),
        gradWeightOut: t.gradWeight,
        gradBiasOut: t.gradBias,
      });
    } finally {
      for (const s of scratch) s.dispose();
    }
  },
};
