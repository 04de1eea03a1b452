/**
 * The per-element formulas, written once and inlined by V8 into every loop that uses them.
 * Every write is affine in its inputs: each channel's constants are folded first (the
 * `*Affine` functions, once per channel or per (n, c)), so an element costs at most two
 * multiplications and two additions in float64. The WebAssembly kernels evaluate the same
 * operations in the same order, so both give the same bits.
 *
 * The reference kernels evaluate the textbook forms, e.g. (x - mean) * scale + shift, and
 * folding changes the float64 rounding only:
 * - x * scale + (shift - mean * scale) errs by a few float64 ulps of |x * scale|, where the
 *   textbook form errs by ulps of |(x - mean) * scale|. For float32, float16 and bfloat16
 *   data this stays far below the output's own rounding except for outputs much closer to
 *   zero than the input is to its mean (how many outputs differ, and by how much: bench/RESULTS.md ("Why the constants are what they are")).
 *   tests/cpu/fast_kernels.test.ts holds every fast kernel within 1 ulp + 1e-11 of the
 *   oracle.
 * - Non-finite inputs give non-finite outputs wherever the reference's are, but where a
 *   channel's folded constants are themselves infinite (an infinite sum, or invstd), an
 *   infinity of the reference can come out as NaN (Inf - Inf inside the folded form).
 *
 * Why: dropping the subtraction per element made the writes faster (scratch, WebAssembly,
 * one thread, [8,64,32,32] float32, ns per element): GroupNorm gradient rows 0.80 -> 0.60,
 * BatchNorm gradient rows 0.59 -> 0.51, channels-last GroupNorm/BatchNorm gradients
 * 0.86 -> 0.71 and 0.77 -> 0.69, channels-last normalize 0.48 -> 0.44; and GroupNorm's
 * gradient is now the BatchNorm gradient's kernel, with other constants.
 *
 * Part of the pool's worker script (see codecs.ts).
 *
 * @module
 */

import { bf16Exact } from "./codecs.ts";

/** The normalizing write: y = x * scale + shift (constants from {@linkcode normalizeAffine}). */
export function affine(x: number, scale: number, shift: number): number {
  return x * scale + shift;
}

/**
 * The shift of {@linkcode affine} for y = (x - mean) * scale + shift (BatchNorm/GroupNorm
 * forward, scale = invstd * gamma): shift - mean * scale.
 */
export function normalizeAffine(mean: number, scale: number, shift: number): number {
  return shift - mean * scale;
}

/**
 * The input-gradient write: gi = dy * a + (x * b + c), constants from
 * {@linkcode batchNormGradAffine} or {@linkcode groupNormGradAffine}.
 */
export function gradient(dy: number, x: number, a: number, b: number, c: number): number {
  return dy * a + (x * b + c);
}

/**
 * Training-mode BatchNorm gradient scale * (dy - meanDy - (x - mean) * k), with
 * scale = w * invstd, meanDy = sumDy / M and k = invstd^2 * sumDyXmu / M, as the constants
 * (a, b, c) of {@linkcode gradient}, written into out[at], out[at + stride], out[at + 2 stride].
 */
export function batchNormGradAffine(
  mean: number,
  scale: number,
  meanDy: number,
  k: number,
  out: Float64Array,
  at: number,
  stride: number,
): void {
  out[at] = scale;
  out[at + stride] = -scale * k;
  out[at + 2 * stride] = scale * (mean * k - meanDy);
}

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

/**
 * GroupNorm gradient rstd * (dy * w - a - (x - mean) * rstd * b), with a = sum(dy * w) / M
 * and b = sum(dy * w * xhat) / M over the group, as the constants of {@linkcode gradient}
 * (written as by {@linkcode batchNormGradAffine}).
 */
export function groupNormGradAffine(
  mean: number,
  rstd: number,
  w: number,
  a: number,
  b: number,
  out: Float64Array,
  at: number,
  stride: number,
): void {
  const k = rstd * b;
  out[at] = rstd * w;
  out[at + stride] = -rstd * k;
  out[at + 2 * stride] = rstd * (mean * k - a);
}

/**
 * The bfloat16 bits of `value`, rounded once to nearest even. The float32 store rounds
 * first; that is exact unless the float32's low half is the tie pattern 0x8000 (the only
 * case where rounding twice can differ from rounding once) or the value is Inf/NaN: those
 * rare cases take {@linkcode bf16Exact}. The result is meant for a Uint16Array store
 * (it may be negative; the store keeps the low 16 bits).
 */
export function bf16Bits(value: number, aliasF32: Float32Array, aliasI32: Int32Array): number {
  aliasF32[0] = value;
  const w = aliasI32[0];
  return (w & 0xffff) !== 0x8000 && (w & 0x7f800000) !== 0x7f800000
    ? (w + 0x7fff + ((w >> 16) & 1)) >> 16
    : bf16Exact(value, aliasF32, aliasI32);
}
