/**
 * Float64 references of the fused LayerNorm backward operators (aclnnAddLayerNormGrad,
 * aclnnDeepNormGrad): the sum alpha * a + b exactly, then LayerNorm's backward at it with the
 * given per-row mean and rstd (row_norms.ts layerNormBackward). The self-check
 * (self_check.test.ts) compares them with central differences of the forward oracle
 * (fused_layer_norms.ts).
 *
 * @module
 */

import { layerNormBackward } from "./row_norms.ts";

/** aclnnAddLayerNormGrad's results. */
export interface AddLayerNormGrads {
  /** dL/dx1 = dL/dx2, rows x cols. */
  dx: number[];
  /** cols. */
  dgamma: number[];
  /** cols. */
  dbeta: number[];
}

/** aclnnDeepNormGrad's results. */
export interface DeepNormGrads extends AddLayerNormGrads {
  /** dL/dgx, rows x cols (dx = alpha * dgx). */
  dgx: number[];
}

/**
 * x = x1 + x2; dx = LayerNorm's input gradient at x with gamma (+ dsum), dgamma = sum over
 * rows of dy * (x - mean) * rstd, dbeta = sum of dy.
 */
export function addLayerNormGrad(
  dy: readonly number[],
  x1: readonly number[],
  x2: readonly number[],
  rstd: readonly number[],
  mean: readonly number[],
  gamma: readonly number[],
  rows: number,
  cols: number,
  dsum?: readonly number[],
): AddLayerNormGrads {
  const x = x1.map((v, i) => v + x2[i]);
  const g = layerNormBackward(dy, x, mean, rstd, rows, cols, gamma);
  const dx = g.gradInput.map((v, i) => v + (dsum ? dsum[i] : 0));
  return { dx, dgamma: g.gradWeight, dbeta: g.gradBias };
}

/** s = alpha * x + gx; dgx = LayerNorm's input gradient at s, dx = alpha * dgx. */
export function deepNormGrad(
  dy: readonly number[],
  x: readonly number[],
  gx: readonly number[],
  gamma: readonly number[],
  mean: readonly number[],
  rstd: readonly number[],
  alpha: number,
  rows: number,
  cols: number,
): DeepNormGrads {
  const s = x.map((v, i) => alpha * v + gx[i]);
  const g = layerNormBackward(dy, s, mean, rstd, rows, cols, gamma);
  return {
    dx: g.gradInput.map((v) => alpha * v),
    dgx: g.gradInput,
    dgamma: g.gradWeight,
    dbeta: g.gradBias,
  };
}
