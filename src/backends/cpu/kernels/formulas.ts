/**
 * The per-channel constants of the float32 kernels' writes (wasm/channel_norms.wat), packed
 * once per channel (or per (n, c)) on the calling thread from the float64 statistics.
 *
 * Part of the pool's worker script (see pool/worker_entry.ts).
 *
 * @module
 */

/**
 * The float32 kernels of the BatchNorm family and GroupNorm (channel_norms.wat) take their
 * writes centred, as CANN's kernels compute them, so that an output close to zero errs by
 * float32 ulps of its terms (x - mean) rather than of |x * scale|: normalize
 * y = (x - k0) * k1 + k2, and the training gradients gi = (dy * k3 - k2) - (x - k0) * k1.
 * Constants per channel, k_j at [j * C + c] (per sample n at [(n * count + j) * C + c]).
 */
export const NORMALIZE_CONSTANTS = 3;

/** Constants of the centred gradient write (see NORMALIZE_CONSTANTS). */
export const GRADIENT_CONSTANTS = 4;

/** The centred normalizing constants (mean, scale, shift) of channel `at` (stride C). */
export function normalizeCentered(
  mean: number,
  scale: number,
  shift: number,
  out: Float64Array,
  at: number,
  stride: number,
): void {
  out[at] = mean;
  out[at + stride] = scale;
  out[at + 2 * stride] = shift;
}

/**
 * The centred training gradient scale * (dy - meanDy - (x - mean) * k) of channel `at`
 * (stride C), with scale = w * invstd, meanDy = sumDy / M and k = invstd^2 * sumDyXmu / M:
 * (mean, scale * k, scale * meanDy, scale).
 */
export function batchNormGradCentered(
  mean: number,
  scale: number,
  meanDy: number,
  k: number,
  out: Float64Array,
  at: number,
  stride: number,
): void {
  out[at] = mean;
  out[at + stride] = scale * k;
  out[at + 2 * stride] = scale * meanDy;
  out[at + 3 * stride] = scale;
}

/**
 * The centred GroupNorm gradient rstd * (dy * w - a - (x - mean) * rstd * b) of channel `at`
 * (stride C), with a = sum(dy * w) / M and b = sum(dy * w * xhat) / M over the group:
 * (mean, rstd^2 * b, rstd * a, rstd * w).
 */
export function groupNormGradCentered(
  mean: number,
  rstd: number,
  w: number,
  a: number,
  b: number,
  out: Float64Array,
  at: number,
  stride: number,
): void {
  out[at] = mean;
  out[at + stride] = rstd * rstd * b;
  out[at + 2 * stride] = rstd * a;
  out[at + 3 * stride] = rstd * w;
}
