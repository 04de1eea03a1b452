/**
 * The kernel contract of the LayerNorm / RMSNorm operators (part of {@linkcode ./types.ts}):
 * their data is rows of the normalized, trailing dims.
 *
 * @module
 */

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
