/**
 * aclnnInstanceNorm (src/ops/instance_norm.ts) in float64: x 4-D, laid out NCHW ([N, C, H, W])
 * or NHWC ([N, H, W, C]); per (n, c), over the H * W elements of that channel:
 *
 * ```
 * mean = sum(x) / (H * W),  variance = sum((x - mean)^2) / (H * W)      (biased)
 * y = (x - mean) / sqrt(variance + eps) * gamma[c] + beta[c]
 * ```
 *
 * y is in x's layout; mean and variance are element n * C + c (the logical order of both
 * [N, C, 1, 1] and [N, 1, 1, C]). Written from the aclnnInstanceNorm documentation's formula,
 * with the biased variance the 950 graph op (ops-nn norm/instance_norm) uses.
 *
 * @module
 */

/** instanceNorm64's outputs. */
export interface InstanceNorm64 {
  /** y, x's layout. */
  y: Float64Array;
  /** Per-(n, c) mean, element n * C + c. */
  mean: Float64Array;
  /** Per-(n, c) biased variance, element n * C + c. */
  variance: Float64Array;
}

/** InstanceNorm of x (shape [N, C, H, W] or, with `nhwc`, [N, H, W, C]) in float64. */
export function instanceNorm64(
  x: ArrayLike<number>,
  shape: readonly number[],
  nhwc: boolean,
  gamma: ArrayLike<number>,
  beta: ArrayLike<number>,
  eps: number,
): InstanceNorm64 {
  const [N, d1, d2, d3] = shape;
  const C = nhwc ? d3 : d1;
  const hw = nhwc ? d1 * d2 : d2 * d3;
  const index = (n: number, c: number, i: number) =>
    nhwc ? (n * hw + i) * C + c : (n * C + c) * hw + i;
  const y = new Float64Array(N * C * hw);
  const mean = new Float64Array(N * C);
  const variance = new Float64Array(N * C);
  for (let n = 0; n < N; n++) {
    for (let c = 0; c < C; c++) {
      let sum = 0;
      for (let i = 0; i < hw; i++) sum += x[index(n, c, i)];
      const m = sum / hw;
      let squares = 0;
      for (let i = 0; i < hw; i++) squares += (x[index(n, c, i)] - m) ** 2;
      const v = squares / hw;
      const rstd = 1 / Math.sqrt(v + eps);
      for (let i = 0; i < hw; i++) {
        const k = index(n, c, i);
        y[k] = (x[k] - m) * rstd * gamma[c] + beta[c];
      }
      mean[n * C + c] = m;
      variance[n * C + c] = v;
    }
  }
  return { y, mean, variance };
}
