/**
 * Float64 oracles for the simulator's chip-fidelity tests: rounding a value to float32, float16
 * or bfloat16 the way an NPU stores an intermediate (round to nearest even), in either overflow
 * mode of the chip (hicann/runtime docs/zh/api_ref/25-02_Enumerations.md aclrtFloatOverflowMode:
 * Inf/NaN mode keeps +-Inf and NaN; saturation mode gives +-max for +-Inf and 0 for NaN), and the
 * chains CANN's op_api decompositions form in such a dtype. Independent of the simulator's C and
 * of the library: float16 comes from `Math.f16round`, float32 from `Math.fround`, bfloat16 from
 * float64 arithmetic here.
 *
 * @module
 */

/** A dtype an intermediate can be formed in. */
export type NarrowDType = "float32" | "float16" | "bfloat16";
/** The chip's overflow mode (aclrtFloatOverflowMode). */
export type OverflowMode = "inf_nan" | "saturation";

const MAX: Record<NarrowDType, number> = {
  float32: 3.4028234663852886e38,
  float16: 65504,
  bfloat16: 3.3895313892515355e38,
};

/** x rounded to nearest even with `bits` significand bits (bfloat16: 8); no subnormals needed. */
function roundSignificand(x: number, bits: number): number {
  if (!Number.isFinite(x) || x === 0) return x;
  const e = Math.floor(Math.log2(Math.abs(x)));
  let q = 2 ** (e - bits + 1);
  if (Math.abs(x) / q >= 2 ** bits) q *= 2; // log2 rounded up across a power of two
  const m = x / q;
  const f = Math.floor(m);
  const r = m - f > 0.5 || (m - f === 0.5 && f % 2 !== 0) ? f + 1 : f;
  return r * q;
}

/** `x` rounded to `dtype` as the chip stores an intermediate in `mode`. */
export function roundTo(x: number, dtype: NarrowDType, mode: OverflowMode = "inf_nan"): number {
  let r: number;
  if (dtype === "float32") r = Math.fround(x);
  else if (dtype === "float16") r = Math.f16round(x);
  else {
    r = roundSignificand(x, 8);
    if (Math.abs(r) > MAX.bfloat16) r = r > 0 ? Infinity : -Infinity;
  }
  if (mode === "inf_nan") return r;
  if (Number.isNaN(r)) return 0;
  if (!Number.isFinite(r)) return r > 0 ? MAX[dtype] : -MAX[dtype];
  return r;
}

/**
 * The variance CANN rebuilds from an inverse standard deviation in its dtype: Sub(Div(1,
 * Mul(invstd, invstd)), eps) with eps = (float)eps converted to the dtype (ops-nn
 * aclnn_batch_norm_elemt.cpp 171-187; aclnn_group_norm_backward.cpp 449-466 with eps 1e-5).
 */
export function rebuiltVariance(
  invstd: number,
  eps: number,
  dtype: NarrowDType,
  mode: OverflowMode,
): number {
  const r = (x: number) => roundTo(x, dtype, mode);
  return r(r(1 / r(invstd * invstd)) - r(Math.fround(eps)));
}
