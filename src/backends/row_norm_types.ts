/**
 * The kernel contract of the LayerNorm / RMSNorm operators (part of {@linkcode ./types.ts}):
 * their data is rows of the normalized, trailing dims. Each operator's plan and tensors, and its
 * kernel's signature in {@linkcode RowNormKernels}.
 *
 * @module
 */

import type { DType } from "../tensor/dtype.ts";
import type { Tensor } from "../tensor/tensor.ts";
import type { OutputMask } from "./output_mask.ts";

/**
 * How a shape splits at its normalized (trailing) dims, LayerNorm's and RMSNorm's view of the
 * data: `rows` independent rows of `cols` elements each, in logical row-major order.
 */
export interface RowGeometry {
  /** The first normalized dim: rank - number of normalized dims. */
  readonly axis: number;
  /** Product of the dims before `axis` (1 when there are none). */
  readonly rows: number;
  /** Product of the dims from `axis` on: the elements of one row. */
  readonly cols: number;
}

/**
 * Splits `shape` at `axis` into rows x cols.
 *
 * @example
 * ```ts
 * import { rowGeometry } from "@aclnn/norm/backends";
 * console.log(rowGeometry([8, 16, 32], 2)); // { axis: 2, rows: 128, cols: 32 }
 * ```
 */
export function rowGeometry(shape: readonly number[], axis: number): RowGeometry {
  let rows = 1;
  let cols = 1;
  for (let i = 0; i < shape.length; i++) {
    if (i < axis) rows *= shape[i];
    else cols *= shape[i];
  }
  return { axis, rows, cols };
}

/** aclnnLayerNorm. */
export interface LayerNormPlan {
  /** Rows and columns of input (columns = the normalized dims). */
  readonly geometry: RowGeometry;
  /** The normalized (trailing) dims of input, as passed to CANN. */
  readonly normalizedShape: readonly number[];
  /** Added to the biased variance. */
  readonly eps: number;
}

/** Tensors of aclnnLayerNorm. */
export interface LayerNormTensors {
  /** x. */
  readonly input: Tensor;
  /** Scale, shape normalizedShape (ones when absent). */
  readonly weight?: Tensor;
  /** Offset, shape normalizedShape (zeros when absent). */
  readonly bias?: Tensor;
  /** Output y, input's shape. */
  readonly output: Tensor;
  /** Output: per-row mean, one value per row. */
  readonly mean: Tensor;
  /** Output: per-row 1/sqrt(biased var + eps), one value per row. */
  readonly rstd: Tensor;
}

/** aclnnLayerNormBackward. */
export interface LayerNormBackwardPlan {
  /** Rows and columns of input. */
  readonly geometry: RowGeometry;
  /** The normalized (trailing) dims of input, as passed to CANN. */
  readonly normalizedShape: readonly number[];
  /** gradInput, gradWeight, gradBias. */
  readonly mask: OutputMask;
}

/** Tensors of aclnnLayerNormBackward. */
export interface LayerNormBackwardTensors {
  /** dL/dy. */
  readonly gradOut: Tensor;
  /** x. */
  readonly input: Tensor;
  /** Per-row mean of the forward, one value per row. */
  readonly mean: Tensor;
  /** Per-row rstd of the forward, one value per row. */
  readonly rstd: Tensor;
  /** Scale (ones when absent). */
  readonly weight?: Tensor;
  /** Offset: validated by CANN, never read. */
  readonly bias?: Tensor;
  /** Output dL/dx. */
  readonly gradInput?: Tensor;
  /** Output dL/dweight, cols elements. */
  readonly gradWeight?: Tensor;
  /** Output dL/dbias, cols elements. */
  readonly gradBias?: Tensor;
}

/** aclnnRmsNorm. */
export interface RmsNormPlan {
  /** Rows and columns of x (columns = gamma's dims). */
  readonly geometry: RowGeometry;
  /** Added to mean(x^2) (>= 0). */
  readonly epsilon: number;
}

/** Tensors of aclnnRmsNorm. */
export interface RmsNormTensors {
  /** x. */
  readonly x: Tensor;
  /** Scale, x's trailing dims. */
  readonly gamma: Tensor;
  /** Output y = x * rstd * gamma. */
  readonly y: Tensor;
  /** Output: per-row 1/sqrt(mean(x^2) + epsilon), one value per row. */
  readonly rstd: Tensor;
}

/** aclnnRmsNormGrad. */
export interface RmsNormGradPlan {
  /** Rows and columns of x (columns = gamma's dims). */
  readonly geometry: RowGeometry;
}

/** Tensors of aclnnRmsNormGrad. */
export interface RmsNormGradTensors {
  /** dL/dy. */
  readonly dy: Tensor;
  /** x of the forward. */
  readonly x: Tensor;
  /** Per-row rstd of the forward, one value per row. */
  readonly rstd: Tensor;
  /** Scale of the forward. */
  readonly gamma: Tensor;
  /** Output dL/dx. */
  readonly dx: Tensor;
  /** Output dL/dgamma, gamma's shape. */
  readonly dgamma: Tensor;
}

/** aclnnAddRmsNorm. */
export interface AddRmsNormPlan {
  /** Rows and columns of x1 (columns = gamma's dims). */
  readonly geometry: RowGeometry;
  /** Added to mean(x^2) (>= 0). */
  readonly epsilon: number;
}

/** Tensors of aclnnAddRmsNorm. */
export interface AddRmsNormTensors {
  /** First summand. */
  readonly x1: Tensor;
  /** Second summand (the residual). */
  readonly x2: Tensor;
  /** Scale, x1's trailing dims. */
  readonly gamma: Tensor;
  /** Output y = x * rstd * gamma. */
  readonly y: Tensor;
  /** Output: per-row 1/sqrt(mean(x^2) + epsilon), one value per row. */
  readonly rstd: Tensor;
  /** Output x = x1 + x2, rounded to x1's dtype (what rstd and y are computed from). */
  readonly x: Tensor;
}

/**
 * aclnnGemmaRmsNorm: RMSNorm's plan (its rows and epsilon); the kernel scales by 1 + gamma,
 * formed in float32.
 */
export type GemmaRmsNormPlan = RmsNormPlan;

/**
 * Tensors of aclnnGemmaRmsNorm: RMSNorm's (x, gamma, y, rstd), with y = x * rstd * (1 + gamma).
 */
export type GemmaRmsNormTensors = RmsNormTensors;

/** aclnnInplaceAddRmsNorm: AddRmsNorm's plan (rows of x1Ref, epsilon). */
export type InplaceAddRmsNormPlan = AddRmsNormPlan;

/** Tensors of aclnnInplaceAddRmsNorm: its inputs are also its outputs. */
export interface InplaceAddRmsNormTensors {
  /** Input x1; receives y = x * rstd * gamma. */
  readonly x1Ref: Tensor;
  /** Input x2 (the residual); receives x = x1 + x2 rounded to the dtype. */
  readonly x2Ref: Tensor;
  /** Scale, x1Ref's trailing dims. */
  readonly gamma: Tensor;
  /** Output: per-row 1/sqrt(mean(x^2) + epsilon), one value per row. */
  readonly rstd: Tensor;
}

/** aclnnAddLayerNorm. */
export interface AddLayerNormPlan {
  /** Rows and columns of x1 (columns = gamma's dims). */
  readonly geometry: RowGeometry;
  /** Added to the variance, as the float32 CANN's attribute holds. */
  readonly epsilon: number;
  /** Whether x = x1 + x2 (+ bias) is returned (CANN's additionalOutput). */
  readonly additionalOutput: boolean;
  /** y's and x's dtype: float32 when x1 or x2 is float32, else x1's (the OpDef's rows). */
  readonly dtype: DType;
  /** Whether bias holds x1's elements (one per element) rather than gamma's (one per column). */
  readonly biasRows: boolean;
}

/** Tensors of aclnnAddLayerNorm. */
export interface AddLayerNormTensors {
  /** First summand. */
  readonly x1: Tensor;
  /** Second summand (the residual), x1's shape. */
  readonly x2: Tensor;
  /** Scale, x1's trailing dims. */
  readonly gamma: Tensor;
  /** Offset, gamma's shape and dtype. */
  readonly beta: Tensor;
  /** Optional third summand: gamma's elements (broadcast over rows) or x1's. */
  readonly bias?: Tensor;
  /** Output y = (x - mean) * rstd * gamma + beta. */
  readonly y: Tensor;
  /** Output: per-row mean of x (float32). */
  readonly mean: Tensor;
  /** Output: per-row 1/sqrt(var(x) + epsilon) (float32). */
  readonly rstd: Tensor;
  /** Output x = x1 + x2 (+ bias), rounded once to y's dtype; present when additionalOutput. */
  readonly x?: Tensor;
}

/** aclnnDeepNorm. */
export interface DeepNormPlan {
  /** Rows and columns of x (columns = gamma's dims). */
  readonly geometry: RowGeometry;
  /** x's factor in alpha * x + gx, as the float32 CANN's attribute holds. */
  readonly alpha: number;
  /** Added to the variance, as a float32. */
  readonly epsilon: number;
}

/** Tensors of aclnnDeepNorm. */
export interface DeepNormTensors {
  /** The block's input, scaled by alpha. */
  readonly x: Tensor;
  /** The block's output (the residual), x's shape and dtype. */
  readonly gx: Tensor;
  /** Offset, x's trailing dims, x's dtype. */
  readonly beta: Tensor;
  /** Scale, beta's shape, x's dtype. */
  readonly gamma: Tensor;
  /** Output: per-row mean of alpha * x + gx (float32). */
  readonly mean: Tensor;
  /** Output: per-row 1/sqrt(var + epsilon) (float32). */
  readonly rstd: Tensor;
  /** Output y = (alpha * x + gx - mean) * rstd * gamma + beta, x's dtype. */
  readonly y: Tensor;
}

/** aclnnAddLayerNormGrad. */
export interface AddLayerNormGradPlan {
  /** Rows and columns of dy (columns = gamma's dims). */
  readonly geometry: RowGeometry;
}

/** Tensors of aclnnAddLayerNormGrad (dy, x1, x2, dsum, dx of one dtype). */
export interface AddLayerNormGradTensors {
  /** dL/dy. */
  readonly dy: Tensor;
  /** First summand of the forward, dy's shape. */
  readonly x1: Tensor;
  /** Second summand of the forward, dy's shape. */
  readonly x2: Tensor;
  /** Per-row rstd of the forward (float32). */
  readonly rstd: Tensor;
  /** Per-row mean of the forward (float32). */
  readonly mean: Tensor;
  /** Scale of the forward, dy's trailing dims, dy's dtype. */
  readonly gamma: Tensor;
  /** Optional gradient added to dx (the residual branch's), dy's shape. */
  readonly dsum?: Tensor;
  /** Output: LayerNorm's input gradient at x = x1 + x2, plus dsum. */
  readonly dx: Tensor;
  /** Output: the sum over rows of dy * (x - mean) * rstd (float32, gamma's shape). */
  readonly dgamma: Tensor;
  /** Output: the sum over rows of dy (float32, gamma's shape). */
  readonly dbeta: Tensor;
}

/** aclnnDeepNormGrad. */
export interface DeepNormGradPlan {
  /** Rows and columns of dy (columns = gamma's dims). */
  readonly geometry: RowGeometry;
  /** x's factor in alpha * x + gx, as the float32 CANN's attribute holds. */
  readonly alpha: number;
}

/** Tensors of aclnnDeepNormGrad (dy, x, gx, dx, dgx of one dtype). */
export interface DeepNormGradTensors {
  /** dL/dy. */
  readonly dy: Tensor;
  /** The forward's x (scaled by alpha), dy's shape. */
  readonly x: Tensor;
  /** The forward's gx, dy's shape. */
  readonly gx: Tensor;
  /** Scale of the forward, dy's trailing dims, dy's dtype. */
  readonly gamma: Tensor;
  /** Per-row mean of the forward (float32). */
  readonly mean: Tensor;
  /** Per-row rstd of the forward (float32). */
  readonly rstd: Tensor;
  /** Output: alpha * dgx (from the float32 dgx). */
  readonly dx: Tensor;
  /** Output: LayerNorm's input gradient at alpha * x + gx. */
  readonly dgx: Tensor;
  /** Output: the sum over rows of dy (float32, gamma's shape). */
  readonly dbeta: Tensor;
  /** Output: the sum over rows of dy * (s - mean) * rstd (float32, gamma's shape). */
  readonly dgamma: Tensor;
}

/** aclnnAddRmsNormCast: AddRmsNorm's plan (rows of x1, epsilon as a float32). */
export type AddRmsNormCastPlan = AddRmsNormPlan;

/** Tensors of aclnnAddRmsNormCast (16-bit data). */
export interface AddRmsNormCastTensors {
  /** First summand (float16 or bfloat16). */
  readonly x1: Tensor;
  /** Second summand (the residual), x1's shape and dtype. */
  readonly x2: Tensor;
  /** Scale, x1's trailing dims and dtype. */
  readonly gamma: Tensor;
  /** Output y1 = x * rstd * gamma, float32. */
  readonly y1: Tensor;
  /** Output y2: y1 in x1's dtype. */
  readonly y2: Tensor;
  /** Output: per-row 1/sqrt(mean(x^2) + epsilon), float32, one value per row. */
  readonly rstd: Tensor;
  /** Output x = x1 + x2 rounded to x1's dtype. */
  readonly x: Tensor;
}

/** aclnnAdaLayerNorm / aclnnAdaLayerNormV2: x is [B..., S, H], normalized over H. */
export interface AdaLayerNormPlan {
  /** Rows (B... * S) and columns (H) of x. */
  readonly geometry: RowGeometry;
  /** Added to the variance, as the float32 CANN's l0 operator receives. */
  readonly epsilon: number;
  /** S: the rows of x per row of scale and shift. */
  readonly seq: number;
}

/** Tensors of aclnnAdaLayerNorm / aclnnAdaLayerNormV2. */
export interface AdaLayerNormTensors {
  /** Input [B..., S, H]. */
  readonly x: Tensor;
  /** Per-batch scale, [B..., H] or [B..., 1, H] (the same elements), x's dtype. */
  readonly scale: Tensor;
  /** Per-batch shift, scale's forms, x's dtype. */
  readonly shift: Tensor;
  /** Optional weight [H] (ones when absent). */
  readonly weight?: Tensor;
  /** Optional bias [H] (zeros when absent). */
  readonly bias?: Tensor;
  /** Output (LayerNorm(x) * w + b) * (1 + scale) + shift, x's shape and dtype. */
  readonly output: Tensor;
  /** Output (V2, optional): per-row mean, [B..., S, 1], x's dtype. */
  readonly mean?: Tensor;
  /** Output (V2, optional): per-row 1/sqrt(var + epsilon), mean's shape and dtype. */
  readonly rstd?: Tensor;
}

/** aclnnAdaLayerNormBackward: input is [B..., S, H], normalized over H. */
export interface AdaLayerNormBackwardPlan {
  /** Rows (B... * S) and columns (H) of input. */
  readonly geometry: RowGeometry;
  /** S: the rows of input per row of scale and shift. */
  readonly seq: number;
  /** normalizedShape as given ([H]). */
  readonly normalizedShape: readonly number[];
}

/**
 * Tensors of aclnnAdaLayerNormBackward. Outputs are optional: an absent one is not computed
 * (CANN takes a null output pointer for it; there is no outputMask).
 */
export interface AdaLayerNormBackwardTensors {
  /** dL/doutput, input's shape and dtype. */
  readonly gradOut: Tensor;
  /** The forward's x [B..., S, H]. */
  readonly input: Tensor;
  /** Per-row rstd of the forward, input with last dim 1, input's dtype (read as float32). */
  readonly rstd: Tensor;
  /** Per-row mean of the forward, rstd's shape and dtype (read as float32). */
  readonly mean: Tensor;
  /** Per-batch scale, [B..., H] or [B..., 1, H], input's dtype. */
  readonly scale: Tensor;
  /** Per-batch shift, scale's forms, input's dtype. */
  readonly shift: Tensor;
  /** Optional weight [H] (ones when absent). */
  readonly weight?: Tensor;
  /** Optional bias [H] (zeros when absent). */
  readonly bias?: Tensor;
  /** Output: dL/dinput, input's shape and dtype. */
  readonly gradInput?: Tensor;
  /** Output: per batch, the sum over S of gradOut * (z * w + b); scale's shape and dtype. */
  readonly gradScale?: Tensor;
  /** Output: per batch, the sum over S of gradOut; shift's shape and dtype. */
  readonly gradShift?: Tensor;
  /** Output: the sum over rows of gradOut * (1 + scale) * z, H elements. */
  readonly gradWeight?: Tensor;
  /** Output: the sum over rows of gradOut * (1 + scale), H elements. */
  readonly gradBias?: Tensor;
}

/**
 * The row norms' kernels, one per operator: what every backend implements for them (part of
 * `Kernels`), each taking its plan and tensors above.
 */
export interface RowNormKernels {
  /** aclnnLayerNorm. */
  layerNorm(plan: LayerNormPlan, tensors: LayerNormTensors): void;
  /** aclnnLayerNormBackward. */
  layerNormBackward(plan: LayerNormBackwardPlan, tensors: LayerNormBackwardTensors): void;
  /** aclnnRmsNorm. */
  rmsNorm(plan: RmsNormPlan, tensors: RmsNormTensors): void;
  /** aclnnRmsNormGrad. */
  rmsNormGrad(plan: RmsNormGradPlan, tensors: RmsNormGradTensors): void;
  /** aclnnAddRmsNorm. */
  addRmsNorm(plan: AddRmsNormPlan, tensors: AddRmsNormTensors): void;
  /** aclnnGemmaRmsNorm. */
  gemmaRmsNorm(plan: GemmaRmsNormPlan, tensors: GemmaRmsNormTensors): void;
  /** aclnnInplaceAddRmsNorm: x1Ref and x2Ref are read, then written. */
  inplaceAddRmsNorm(plan: InplaceAddRmsNormPlan, tensors: InplaceAddRmsNormTensors): void;
  /** aclnnAddLayerNorm. */
  addLayerNorm(plan: AddLayerNormPlan, tensors: AddLayerNormTensors): void;
  /** aclnnDeepNorm. */
  deepNorm(plan: DeepNormPlan, tensors: DeepNormTensors): void;
  /** aclnnAddRmsNormCast. */
  addRmsNormCast(plan: AddRmsNormCastPlan, tensors: AddRmsNormCastTensors): void;
  /** aclnnAdaLayerNorm (no mean or rstd). */
  adaLayerNorm(plan: AdaLayerNormPlan, tensors: AdaLayerNormTensors): void;
  /** aclnnAdaLayerNormV2 (mean and rstd when present). */
  adaLayerNormV2(plan: AdaLayerNormPlan, tensors: AdaLayerNormTensors): void;
  /** aclnnAdaLayerNormBackward (absent outputs are not computed). */
  adaLayerNormBackward(plan: AdaLayerNormBackwardPlan, tensors: AdaLayerNormBackwardTensors): void;
  /** aclnnAddLayerNormGrad. */
  addLayerNormGrad(plan: AddLayerNormGradPlan, tensors: AddLayerNormGradTensors): void;
  /** aclnnDeepNormGrad. */
  deepNormGrad(plan: DeepNormGradPlan, tensors: DeepNormGradTensors): void;
  /** aclnnFastLayerNorm (never called for rows of no element or no rows). */
  fastLayerNorm(plan: LayerNormPlan, tensors: LayerNormTensors): void;
}
