/**
 * The row sums of the LayerNorm / RMSNorm kernels, in one association that the TypeScript
 * row loops (row_loops.ts) and the WebAssembly ones
 * (src/backends/cpu/wasm/row_norms.wat) share, so that all give the same bits: eight
 * chains, element j < n & ~7 into chain j mod 8, combined as
 * ((c0 + c2) + (c4 + c6)) + ((c1 + c3) + (c5 + c7)), then the last n mod 8 elements added in
 * order. (Eight chains are four float64x2 accumulators: the vector additions of a row do
 * not wait on each other.)
 *
 * @module
 */

/** The eight-chain sum of `a[0..n)`. */
export function sum8(a: Float64Array, n: number): number {
  let c0 = 0, c1 = 0, c2 = 0, c3 = 0, c4 = 0, c5 = 0, c6 = 0, c7 = 0;
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    c0 += a[i];
    c1 += a[i + 1];
    c2 += a[i + 2];
    c3 += a[i + 3];
    c4 += a[i + 4];
    c5 += a[i + 5];
    c6 += a[i + 6];
    c7 += a[i + 7];
  }
  let s = ((c0 + c2) + (c4 + c6)) + ((c1 + c3) + (c5 + c7));
  for (; i < n; i++) s += a[i];
  return s;
}

/**
 * Mean and 1/sqrt(biased variance + eps) of `x[b..b+n)` (n > 0), in one pass of sums shifted
 * by the row's first element k (so that a large |mean| does not cancel the variance away):
 * S and Q the eight-chain sums of d = x - k and d * d, shift = S / n, mean = k + shift,
 * variance max(Q / n - shift^2, 0) (rounding can leave it below zero). Writes [mean, rstd]
 * into `out`.
 */
export function moments8(
  x: Float32Array | Float64Array,
  b: number,
  n: number,
  eps: number,
  out: Float64Array,
): void {
  const k = x[b];
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
  let q0 = 0, q1 = 0, q2 = 0, q3 = 0, q4 = 0, q5 = 0, q6 = 0, q7 = 0;
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    const d0 = x[b + i] - k;
    const d1 = x[b + i + 1] - k;
    const d2 = x[b + i + 2] - k;
    const d3 = x[b + i + 3] - k;
    const d4 = x[b + i + 4] - k;
    const d5 = x[b + i + 5] - k;
    const d6 = x[b + i + 6] - k;
    const d7 = x[b + i + 7] - k;
    s0 += d0;
    s1 += d1;
    s2 += d2;
    s3 += d3;
    s4 += d4;
    s5 += d5;
    s6 += d6;
    s7 += d7;
    q0 += d0 * d0;
    q1 += d1 * d1;
    q2 += d2 * d2;
    q3 += d3 * d3;
    q4 += d4 * d4;
    q5 += d5 * d5;
    q6 += d6 * d6;
    q7 += d7 * d7;
  }
  let s = ((s0 + s2) + (s4 + s6)) + ((s1 + s3) + (s5 + s7));
  let q = ((q0 + q2) + (q4 + q6)) + ((q1 + q3) + (q5 + q7));
  for (; i < n; i++) {
    const d = x[b + i] - k;
    s += d;
    q += d * d;
  }
  const shift = s / n;
  out[0] = k + shift;
  out[1] = 1 / Math.sqrt(Math.max(q / n - shift * shift, 0) + eps);
}

/** 1/sqrt(mean(x[b..b+n)^2) + eps), the mean from the eight-chain sum of the squares. */
export function rstd8(x: Float32Array | Float64Array, b: number, n: number, eps: number): number {
  let q0 = 0, q1 = 0, q2 = 0, q3 = 0, q4 = 0, q5 = 0, q6 = 0, q7 = 0;
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    const v0 = x[b + i];
    const v1 = x[b + i + 1];
    const v2 = x[b + i + 2];
    const v3 = x[b + i + 3];
    const v4 = x[b + i + 4];
    const v5 = x[b + i + 5];
    const v6 = x[b + i + 6];
    const v7 = x[b + i + 7];
    q0 += v0 * v0;
    q1 += v1 * v1;
    q2 += v2 * v2;
    q3 += v3 * v3;
    q4 += v4 * v4;
    q5 += v5 * v5;
    q6 += v6 * v6;
    q7 += v7 * v7;
  }
  let q = ((q0 + q2) + (q4 + q6)) + ((q1 + q3) + (q5 + q7));
  for (; i < n; i++) q += x[b + i] * x[b + i];
  return 1 / Math.sqrt(q / n + eps);
}
