/**
 * The per-element formulas, written once and inlined by V8 into every loop that uses them.
 * They are the reference kernels' expressions operation for operation, so a fast kernel and
 * the reference round the same float64 value (only the order of the channel sums differs).
 *
 * Worker-safe (see codecs.ts).
 *
 * @module
 */

import { bf16Exact } from "./codecs.ts";

/** BatchNorm/GroupNorm forward: y = (x - mean) * scale + shift, scale = invstd * gamma. */
export function normalized(x: number, mean: number, scale: number, shift: number): number {
  return (x - mean) * scale + shift;
}

/**
 * Training-mode BatchNorm gradient: scale * (dy - meanDy - (x - mean) * k), with
 * scale = w * invstd, meanDy = sumDy / M and k = invstd^2 * sumDyXmu / M.
 */
export function batchNormGrad(
  dy: number,
  x: number,
  mean: number,
  scale: number,
  meanDy: number,
  k: number,
): number {
  return scale * (dy - meanDy - (x - mean) * k);
}

/**
 * GroupNorm gradient: rstd * (dy * w - a - xhat * b) with xhat = (x - mean) * rstd,
 * a = sum(dy * w) / M and b = sum(dy * w * xhat) / M over the group.
 */
export function groupNormGrad(
  dy: number,
  x: number,
  mean: number,
  rstd: number,
  w: number,
  a: number,
  b: number,
): number {
  return rstd * (dy * w - a - (x - mean) * rstd * b);
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
