/**
 * The oracle's LayerNorm / RMSNorm operators: the formulas of CANN's documentation (ops-nn
 * norm/layer_norm_v4, layer_norm_grad_v3, rms_norm, rms_norm_grad, add_rms_norm, gemma_rms_norm
 * docs), over
 * `rows` x `cols` row-major data (cols = the product of the normalized dims). The operator
 * tests, the software-CANN tests and (through kernels/row_norms.ts) the CPU kernel tests use
 * them. Optional roundings replay the intermediate dtypes the simulator
 * documents (tests/sim/README_norm.md); sums run in index order, as the simulator's do.
 *
 * @module
 */

import { type DType, roundToDType } from "../../src/tensor/dtype.ts";
import { numericalGradient } from "./finite_differences.ts";

export { dot } from "./finite_differences.ts";

/** Rounds every value to `dtype` (the values a tensor of that dtype holds). */
export function rounded(values: readonly number[], dtype: DType): number[] {
  return values.map((v) => roundToDType(v, dtype));
}

/** LayerNorm forward results. */
export interface LayerNormResult {
  /** (x - mean) * rstd * weight + bias, rows x cols. */
  y: number[];
  /** Per row. */
  mean: number[];
  /** 1 / sqrt(biased variance + eps), per row. */
  rstd: number[];
}

/** LayerNorm over each row: biased variance, rstd = 1/sqrt(var + eps). */
export function layerNorm(
  x: readonly number[],
  rows: number,
  cols: number,
  eps: number,
  weight?: readonly number[],
  bias?: readonly number[],
): LayerNormResult {
  const y: number[] = [];
  const mean: number[] = [];
  const rstd: number[] = [];
  for (let r = 0; r < rows; r++) {
    let s = 0;
    for (let i = 0; i < cols; i++) s += x[r * cols + i];
    const m = s / cols;
    let q = 0;
    for (let i = 0; i < cols; i++) q += (x[r * cols + i] - m) * (x[r * cols + i] - m);
    const rs = 1 / Math.sqrt(q / cols + eps);
    for (let i = 0; i < cols; i++) {
      y.push((x[r * cols + i] - m) * rs * (weight ? weight[i] : 1) + (bias ? bias[i] : 0));
    }
    mean.push(m);
    rstd.push(rs);
  }
  return { y, mean, rstd };
}

/** LayerNorm backward results. */
export interface LayerNormGrads {
  /** rows x cols. */
  gradInput: number[];
  /** cols. */
  gradWeight: number[];
  /** cols. */
  gradBias: number[];
}

/**
 * The documented backward with the given per-row mean and rstd: xhat = (x - mean) * rstd,
 * g = dy * weight; gradInput = rstd * (g - mean(g) - xhat * mean(g * xhat)); gradWeight =
 * sum over rows of dy * xhat; gradBias = sum of dy.
 */
export function layerNormBackward(
  dy: readonly number[],
  x: readonly number[],
  mean: readonly number[],
  rstd: readonly number[],
  rows: number,
  cols: number,
  weight?: readonly number[],
): LayerNormGrads {
  const gradInput: number[] = [];
  const gradWeight = new Array<number>(cols).fill(0);
  const gradBias = new Array<number>(cols).fill(0);
  for (let r = 0; r < rows; r++) {
    let s1 = 0;
    let s2 = 0;
    for (let i = 0; i < cols; i++) {
      const k = r * cols + i;
      const xhat = (x[k] - mean[r]) * rstd[r];
      const g = dy[k] * (weight ? weight[i] : 1);
      s1 += g;
      s2 += g * xhat;
      gradWeight[i] += dy[k] * xhat;
      gradBias[i] += dy[k];
    }
    for (let i = 0; i < cols; i++) {
      const k = r * cols + i;
      const xhat = (x[k] - mean[r]) * rstd[r];
      const g = dy[k] * (weight ? weight[i] : 1);
      gradInput.push(rstd[r] * (g - s1 / cols - xhat * s2 / cols));
    }
  }
  return { gradInput, gradWeight, gradBias };
}

/** RMSNorm forward results. */
export interface RmsNormResult {
  /** x * rstd * gamma, rows x cols. */
  y: number[];
  /** 1 / sqrt(mean(x^2) + eps), per row. */
  rstd: number[];
}

/**
 * RMSNorm over each row. `rounding`: the dtype x * rstd is rounded to before the gamma product
 * (AddRmsNorm's 16-bit kernels); none for aclnnRmsNorm, which multiplies in float and rounds once.
 */
export function rmsNorm(
  x: readonly number[],
  rows: number,
  cols: number,
  eps: number,
  gamma: readonly number[],
  rounding?: DType,
): RmsNormResult {
  const y: number[] = [];
  const rstd: number[] = [];
  for (let r = 0; r < rows; r++) {
    let q = 0;
    for (let i = 0; i < cols; i++) q += x[r * cols + i] * x[r * cols + i];
    const rs = 1 / Math.sqrt(q / cols + eps);
    for (let i = 0; i < cols; i++) {
      const t = x[r * cols + i] * rs;
      y.push((rounding ? roundToDType(t, rounding) : t) * gamma[i]);
    }
    rstd.push(rs);
  }
  return { y, rstd };
}

/**
 * aclnnGemmaRmsNorm over each row (its docs' formula, ops-nn norm/gemma_rms_norm/docs/
 * aclnnGemmaRmsNorm.md): rstd = 1 / sqrt(mean(x^2) + eps), y = x * rstd * (1 + gamma), all in
 * float64.
 */
export function gemmaRmsNorm(
  x: readonly number[],
  rows: number,
  cols: number,
  eps: number,
  gamma: readonly number[],
): RmsNormResult {
  return rmsNorm(x, rows, cols, eps, gamma.map((g) => 1 + g));
}

/** RMSNorm backward results. */
export interface RmsNormGrads {
  /** rows x cols. */
  dx: number[];
  /** cols. */
  dgamma: number[];
}

/**
 * The documented backward with the given per-row rstd: dx = rstd * (dy * g - x * rstd *
 * mean(dy * g * x * rstd)); dgamma = sum over rows of dy * x * rstd.
 */
export function rmsNormBackward(
  dy: readonly number[],
  x: readonly number[],
  rstd: readonly number[],
  gamma: readonly number[],
  rows: number,
  cols: number,
): RmsNormGrads {
  const dx: number[] = [];
  const dgamma = new Array<number>(cols).fill(0);
  for (let r = 0; r < rows; r++) {
    let s = 0;
    for (let i = 0; i < cols; i++) {
      const k = r * cols + i;
      s += dy[k] * gamma[i] * x[k] * rstd[r];
      dgamma[i] += dy[k] * x[k] * rstd[r];
    }
    const m = s / cols;
    for (let i = 0; i < cols; i++) {
      const k = r * cols + i;
      dx.push(rstd[r] * (dy[k] * gamma[i] - x[k] * rstd[r] * m));
    }
  }
  return { dx, dgamma };
}

/**
 * Central differences of a scalar function at `at` (h = 1e-5), for every coordinate:
 * d f / d at[i] (the oracle's numericalGradient over plain arrays).
 */
export function finiteDifferences(f: (v: number[]) => number, at: readonly number[]): number[] {
  return Array.from(numericalGradient((v) => f(Array.from(v)), Float64Array.from(at), 1e-5));
}
