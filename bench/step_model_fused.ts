/**
 * The fused training step of `deno task bench:step --model fused`: issue 39's fused operators
 * as a transformer / diffusion block uses them, layer for layer what bench/torch_step_fused.py
 * runs as a PyTorch 1.13 user composes each one. Forward in order, backward in reverse, each
 * backward fed a fixed upstream gradient; every call allocates its outputs.
 *
 * Rows [2048,768] (bench/step_model.ts's ROWS_SHAPE), normalized over the last dim:
 * - `addLayerNorm` (x1, x2, gamma, beta; the additional output x = x1 + x2, the residual
 *   stream) and `addLayerNormGrad` with `dsum`, the gradient that reached x along the residual
 *   branch. PyTorch: `s = x1 + x2; y = F.layer_norm(s, ...)`, then
 *   `torch.autograd.grad([y, s], [x1, x2, gamma, beta], [dy, dsum])`.
 * - `deepNorm` (alpha = {@linkcode DEEP_NORM_ALPHA}) and `deepNormGrad`. PyTorch:
 *   `y = F.layer_norm(alpha * x + gx, ...)`, then `torch.autograd.grad(y, [x, gx, gamma, beta],
 *   dy)`.
 * - `addRmsNorm`, forward only. PyTorch: `s = x1 + x2;
 *   y = s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * gamma`.
 * - `gemmaRmsNorm`, forward only (gamma zeros: Gemma's scale 1 + gamma starts at 1). PyTorch:
 *   `x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1 + gamma)`.
 * - `adaLayerNormV2` and `adaLayerNormBackward` on x [8,256,768] (the same 2048 rows as 8
 *   samples of 256 tokens) with scale and shift [8,768], one per sample, no LayerNorm weight or
 *   bias (DiT's adaLN). The forward is V2, the aclnnAdaLayerNorm that returns the mean and rstd
 *   the backward takes (its output is aclnnAdaLayerNorm's); the backward is told
 *   `out: { gradWeight: null, gradBias: null }`, which allocates nothing and skips the two
 *   gradients of parameters this layer does not have. PyTorch:
 *   `F.layer_norm(x, (768,), eps=eps) * (1 + scale[:, None]) + shift[:, None]`, then
 *   `torch.autograd.grad(y, [x, scale, shift], dy)`.
 *
 * Channels [16,64,32,32] (bench/step_model.ts's GN_SHAPE), 32 groups:
 * - `groupNormSilu`, forward only. PyTorch: `F.silu(aten.native_group_norm(...)[0])`.
 * - `groupNormSwish` (swishScale = {@linkcode SWISH_SCALE}) and `groupNormSwishGrad`. PyTorch:
 *   `g = F.group_norm(x, 32, gamma, beta, eps); y = g * torch.sigmoid(swishScale * g)`, then
 *   `torch.autograd.grad(y, [x, gamma, beta], dy)`.
 *
 * Every tensor has the data's dtype (weights too, as in bench/step_model.ts); epsilons are
 * {@linkcode FUSED_EPS}, passed to both sides. The forward-only layers compute no gradient on
 * either side (PyTorch's inputs there do not require grad).
 *
 * @module
 */

import {
  adaLayerNormBackward,
  adaLayerNormV2,
  addLayerNorm,
  addLayerNormGrad,
  addRmsNorm,
  deepNorm,
  deepNormGrad,
  type DType,
  gemmaRmsNorm,
  groupNormSilu,
  groupNormSwish,
  groupNormSwishGrad,
  Tensor,
} from "../mod.ts";
import { GN_GROUPS, GN_SHAPE, ROWS_SHAPE, type StepResults } from "./step_model.ts";

/** adaLayerNorm's input [B, S, H]: {@linkcode ROWS_SHAPE}'s rows as 8 samples of 256 tokens. */
export const ADA_SHAPE: readonly number[] = [8, 256, ROWS_SHAPE[1]];
/** adaLayerNorm's scale and shift [B, H]: one row per sample, broadcast over S. */
export const ADA_SCALE_SHAPE: readonly number[] = [ADA_SHAPE[0], ADA_SHAPE[2]];
/** deepNorm's alpha (x's factor): aclnnDeepNorm's default. */
export const DEEP_NORM_ALPHA = 0.3;
/** groupNormSwish's swishScale: not 1, so PyTorch's side cannot be `F.silu` (groupNormSilu is). */
export const SWISH_SCALE = 1.702;
/** Each layer's epsilon: the operator's CANN default, given to both sides. */
export const FUSED_EPS: Readonly<Record<string, number>> = {
  addLayerNorm: 1e-5,
  deepNorm: 1e-6,
  addRmsNorm: 1e-6,
  gemmaRmsNorm: 1e-6,
  adaLayerNorm: 1e-5,
  groupNormSilu: 1e-5,
  groupNormSwish: 1e-5,
};

/** The fused model's tensors in one dtype. */
export interface FusedStepModel {
  /** Data dtype (parameters and upstream gradients too). */
  readonly dtype: DType;
  /** addLayerNorm: summands, parameters, upstream gradients of y and of x (the residual). */
  readonly addLn: {
    readonly x1: Tensor;
    readonly x2: Tensor;
    readonly gamma: Tensor;
    readonly beta: Tensor;
    readonly dy: Tensor;
    readonly dsum: Tensor;
  };
  /** deepNorm: input (scaled by alpha), sublayer output, parameters, upstream gradient. */
  readonly deep: {
    readonly x: Tensor;
    readonly gx: Tensor;
    readonly gamma: Tensor;
    readonly beta: Tensor;
    readonly dy: Tensor;
  };
  /** addRmsNorm: summands and scale. */
  readonly addRms: { readonly x1: Tensor; readonly x2: Tensor; readonly gamma: Tensor };
  /** gemmaRmsNorm: input and gamma (zeros). */
  readonly gemma: { readonly x: Tensor; readonly gamma: Tensor };
  /** adaLayerNorm: input [B, S, H], per-sample scale and shift [B, H], upstream gradient. */
  readonly ada: {
    readonly x: Tensor;
    readonly scale: Tensor;
    readonly shift: Tensor;
    readonly dy: Tensor;
  };
  /** groupNormSilu: input and parameters. */
  readonly gnSilu: { readonly x: Tensor; readonly gamma: Tensor; readonly beta: Tensor };
  /** groupNormSwish: input, parameters, upstream gradient. */
  readonly gnSwish: {
    readonly x: Tensor;
    readonly gamma: Tensor;
    readonly beta: Tensor;
    readonly dy: Tensor;
  };
}

/** The fused model's tensors: standard-normal data from fixed seeds, gamma ones, beta zeros. */
export function fusedStepModel(dtype: DType): FusedStepModel {
  let seed = 1;
  const random = (shape: readonly number[]) => Tensor.random(shape, { seed: seed++, dtype });
  const cols = ROWS_SHAPE[1];
  const C = GN_SHAPE[1];
  return {
    dtype,
    addLn: {
      x1: random(ROWS_SHAPE),
      x2: random(ROWS_SHAPE),
      gamma: Tensor.ones([cols], dtype),
      beta: Tensor.zeros([cols], dtype),
      dy: random(ROWS_SHAPE),
      dsum: random(ROWS_SHAPE),
    },
    deep: {
      x: random(ROWS_SHAPE),
      gx: random(ROWS_SHAPE),
      gamma: Tensor.ones([cols], dtype),
      beta: Tensor.zeros([cols], dtype),
      dy: random(ROWS_SHAPE),
    },
    addRms: { x1: random(ROWS_SHAPE), x2: random(ROWS_SHAPE), gamma: Tensor.ones([cols], dtype) },
    gemma: { x: random(ROWS_SHAPE), gamma: Tensor.zeros([cols], dtype) },
    ada: {
      x: random(ADA_SHAPE),
      scale: random(ADA_SCALE_SHAPE),
      shift: random(ADA_SCALE_SHAPE),
      dy: random(ADA_SHAPE),
    },
    gnSilu: { x: random(GN_SHAPE), gamma: Tensor.ones([C], dtype), beta: Tensor.zeros([C], dtype) },
    gnSwish: {
      x: random(GN_SHAPE),
      gamma: Tensor.ones([C], dtype),
      beta: Tensor.zeros([C], dtype),
      dy: random(GN_SHAPE),
    },
  };
}

/**
 * One fused training step. Returns the result objects the calls made; the caller drops them
 * (the dropped style) or disposes each (`using`), as with bench/step_model.ts's trainingStep.
 */
export function fusedTrainingStep(m: FusedStepModel): StepResults {
  const results: Disposable[] = [];
  const { addLn, deep, addRms, gemma, ada, gnSilu, gnSwish } = m;
  const addLnF = addLayerNorm({
    x1: addLn.x1,
    x2: addLn.x2,
    gamma: addLn.gamma,
    beta: addLn.beta,
    epsilon: FUSED_EPS.addLayerNorm,
    additionalOutput: true,
  });
  const deepF = deepNorm({
    x: deep.x,
    gx: deep.gx,
    beta: deep.beta,
    gamma: deep.gamma,
    alpha: DEEP_NORM_ALPHA,
    epsilon: FUSED_EPS.deepNorm,
  });
  const addRmsF = addRmsNorm({
    x1: addRms.x1,
    x2: addRms.x2,
    gamma: addRms.gamma,
    epsilon: FUSED_EPS.addRmsNorm,
  });
  const gemmaF = gemmaRmsNorm({ x: gemma.x, gamma: gemma.gamma, epsilon: FUSED_EPS.gemmaRmsNorm });
  const adaF = adaLayerNormV2({
    x: ada.x,
    scale: ada.scale,
    shift: ada.shift,
    epsilon: FUSED_EPS.adaLayerNorm,
  });
  const siluF = groupNormSilu({
    self: gnSilu.x,
    gamma: gnSilu.gamma,
    beta: gnSilu.beta,
    group: GN_GROUPS,
    eps: FUSED_EPS.groupNormSilu,
  });
  const swishF = groupNormSwish({
    x: gnSwish.x,
    gamma: gnSwish.gamma,
    beta: gnSwish.beta,
    numGroups: GN_GROUPS,
    eps: FUSED_EPS.groupNormSwish,
    swishScale: SWISH_SCALE,
  });
  results.push(addLnF, deepF, addRmsF, gemmaF, adaF, siluF, swishF);

  results.push(groupNormSwishGrad({
    dy: gnSwish.dy,
    mean: swishF.mean,
    rstd: swishF.rstd,
    x: gnSwish.x,
    gamma: gnSwish.gamma,
    beta: gnSwish.beta,
    numGroups: GN_GROUPS,
    swishScale: SWISH_SCALE,
  }));
  results.push(adaLayerNormBackward({
    gradOut: ada.dy,
    input: ada.x,
    normalizedShape: [ADA_SHAPE[2]],
    rstd: adaF.rstd,
    mean: adaF.mean,
    scale: ada.scale,
    shift: ada.shift,
    out: { gradWeight: null, gradBias: null },
  }));
  results.push(deepNormGrad({
    dy: deep.dy,
    x: deep.x,
    gx: deep.gx,
    gamma: deep.gamma,
    mean: deepF.mean,
    rstd: deepF.rstd,
    alpha: DEEP_NORM_ALPHA,
  }));
  results.push(addLayerNormGrad({
    dy: addLn.dy,
    x1: addLn.x1,
    x2: addLn.x2,
    rstd: addLnF.rstd,
    mean: addLnF.mean,
    gamma: addLn.gamma,
    dsum: addLn.dsum,
  }));
  return results;
}
