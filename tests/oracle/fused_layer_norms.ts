/**
 * Float64 references of the fused LayerNorm operators (aclnnAddLayerNorm, aclnnDeepNorm): the sum
 * alpha * x1 + x2 (+ bias) exactly, then LayerNorm of it (row_norms.ts layerNorm).
 *
 * @module
 */

import { layerNorm, type LayerNormResult } from "./row_norms.ts";

/** A fused LayerNorm's results: LayerNorm's, and the sum it normalized. */
export interface FusedLayerNormResult extends LayerNormResult {
  /** alpha * x1 + x2 (+ bias), rows x cols. */
  x: number[];
}

/**
 * alpha * x1 + x2 (+ bias: cols values added to every row, or rows * cols), then LayerNorm with
 * gamma and beta over rows of cols.
 */
export function fusedLayerNorm(
  x1: readonly number[],
  x2: readonly number[],
  rows: number,
  cols: number,
  eps: number,
  gamma: readonly number[],
  beta: readonly number[],
  options: { alpha?: number; bias?: readonly number[] } = {},
): FusedLayerNormResult {
  const { alpha = 1, bias } = options;
  const x = x1.map((v, i) => {
    const b = bias === undefined ? 0 : bias.length === cols ? bias[i % cols] : bias[i];
    return alpha * v + x2[i] + b;
  });
  return { ...layerNorm(x, rows, cols, eps, gamma, beta), x };
}
