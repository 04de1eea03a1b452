/**
 * Float64 reference of aclnnAdaLayerNorm(V2): LayerNorm of each row of H (row_norms.ts
 * layerNorm, weight and bias optional), times 1 + scale and plus shift of the row's batch index
 * (row / S).
 *
 * @module
 */

import { layerNorm, type LayerNormResult } from "./row_norms.ts";

/**
 * x of rows = B * S rows of H; scale and shift of B rows of H (either of CANN's forms holds
 * these elements in this order).
 */
export function adaLayerNorm(
  x: readonly number[],
  seq: number,
  H: number,
  eps: number,
  scale: readonly number[],
  shift: readonly number[],
  weight?: readonly number[],
  bias?: readonly number[],
): LayerNormResult {
  const rows = x.length / H;
  const r = layerNorm(x, rows, H, eps, weight, bias);
  const y = r.y.map((v, j) => {
    const b = Math.floor(Math.floor(j / H) / seq) * H + (j % H);
    return v * (1 + scale[b]) + shift[b];
  });
  return { ...r, y };
}

/**
 * Float64 reference of aclnnAddRmsNormCast: x = x1 + x2 exactly, rstd and y = x * rstd * gamma
 * (y1; y2 is y rounded), x1 of rows of cols.
 */
export function addRmsNormCast(
  x1: readonly number[],
  x2: readonly number[],
  cols: number,
  eps: number,
  gamma: readonly number[],
): { y: number[]; rstd: number[]; x: number[] } {
  const x = x1.map((v, i) => v + x2[i]);
  const y: number[] = [];
  const rstd: number[] = [];
  for (let r = 0; r < x.length / cols; r++) {
    let q = 0;
    for (let i = 0; i < cols; i++) q += x[r * cols + i] ** 2;
    rstd.push(1 / Math.sqrt(q / cols + eps));
    for (let i = 0; i < cols; i++) y.push(x[r * cols + i] * rstd[r] * gamma[i]);
  }
  return { y, rstd, x };
}
