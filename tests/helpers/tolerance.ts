/**
 * THE tolerance table of the tests: how far an operator's output may be from the float64
 * oracle (tests/oracle/) on the same inputs, per output dtype. Every test takes its
 * tolerances from here; there is no other table.
 *
 * How an entry applies (tests/helpers/assert.ts `assertClose`), per element:
 *
 * ```
 * |actual - expected| <= atol * scale + rtol * |expected|,   scale = max(1, max |expected|)
 * ```
 *
 * The scale makes atol relative to the output's magnitude: an element that cancels to ~0 (a
 * gradient, a centred sum) carries the rounding error of the terms it was computed from, not
 * its own.
 *
 * Why these numbers. The oracle reads the inputs exactly as the kernel receives them (already
 * rounded to their dtype), so a correct kernel differs from it by:
 * - the final rounding of each output to its dtype: half an ulp, 2^-24 (float32), 2^-11
 *   (float16) or 2^-8 (bfloat16) relative. An entry allows twice that, for kernels that
 *   round one intermediate (e.g. a statistic stored in the output dtype) before the last
 *   multiply-add;
 * - plus, on an NPU, fp32 accumulation: CANN sums in fp32, ~sqrt(n) * 2^-24 relative to the
 *   sum of |terms| for the n ~ 1e3..1e5 elements of a channel or group in these tests: 1e-4
 *   covers it (the software CANN accumulates in float64 and needs none of it; the CPU
 *   backend's float32 runs, F32_ARITHMETIC, fit well within it; real hardware needs it).
 *
 * Comparisons that are not "kernel vs oracle on the same inputs" have their own entries
 * below, each with its reason.
 *
 * @module
 */

import type { DType } from "../../src/tensor/dtype.ts";

/** rtol/atol pair; see the module doc for how it applies. */
export interface Tolerance {
  readonly rtol: number;
  readonly atol: number;
}

/** Relative room for fp32 accumulation on an NPU (module doc). */
export const FP32_ACCUMULATION = 1e-4;

/** Half an ulp of each floating dtype, relative: 2^-(mantissa bits + 1). */
export const HALF_ULP = {
  float32: 2 ** -24,
  float16: 2 ** -11,
  bfloat16: 2 ** -8,
} as const;

function entry(halfUlp: number): Tolerance {
  const t = 2 * halfUlp + FP32_ACCUMULATION;
  return Object.freeze({ rtol: t, atol: t });
}

/**
 * Kernel output vs the float64 oracle on the same inputs, by output dtype:
 * float32 ~1.0e-4, float16 ~1.1e-3, bfloat16 ~7.9e-3; int32 outputs are exact.
 */
export const TOLERANCE: Readonly<Record<DType, Tolerance>> = Object.freeze({
  float32: entry(HALF_ULP.float32),
  float16: entry(HALF_ULP.float16),
  bfloat16: entry(HALF_ULP.bfloat16),
  int32: Object.freeze({ rtol: 0, atol: 0 }),
});

/**
 * The CPU backend's float32 arithmetic against the float64 oracle on the same inputs, for tests
 * of the kernels themselves (DESIGN.md "Numerics"): every element-wise formula evaluated in
 * float32 (a few roundings of 2^-24 each), row and channel sums of float32 blocks of at most 64
 * terms per lane added in float64 (a mean's and a variance's terms taken about a pivot near the
 * run's mean, so that data far from zero does not drift: tests/cpu/statistics_accuracy.test.ts),
 * each output rounded once to its dtype. Float32 outputs: 2^-19 relative plus 2^-17 of the
 * output's scale (8 and 128 half-ulps: the formulas' roundings and the block sums of terms up to
 * the scale); 16-bit outputs: one ulp of their dtype (2^-10, 2^-7 relative) plus that float32
 * room. Where an output cancels terms larger than itself, the bound is relative to those terms
 * instead: {@linkcode cancellation}.
 */
export const F32_ARITHMETIC: Readonly<Record<DType, Tolerance>> = Object.freeze({
  float32: Object.freeze({ rtol: 2 ** -19, atol: 2 ** -17 }),
  float16: Object.freeze({ rtol: 2 ** -10 + 2 ** -19, atol: 2 ** -10 + 2 ** -17 }),
  bfloat16: Object.freeze({ rtol: 2 ** -7 + 2 ** -19, atol: 2 ** -7 + 2 ** -17 }),
  int32: Object.freeze({ rtol: 0, atol: 0 }),
});

/**
 * `t`, widened for an output formed by cancelling float32 terms of magnitude up to `terms`
 * (e.g. LayerNorm's (x - mean) * rstd, whose terms are |x| * rstd): float32 arithmetic then
 * errs by a few float32 epsilons of `terms`, 2^-21 * terms (four half-ulps), whatever the
 * output's own size. `outputScale` is the scale `assertClose` applies to atol
 * (max(1, max |expected|)).
 */
export function cancellation(t: Tolerance, terms: number, outputScale: number): Tolerance {
  return { rtol: t.rtol, atol: Math.max(t.atol, 2 ** -21 * terms / Math.max(1, outputScale)) };
}

/** The table entry for an output stored in `dtype`. */
export function toleranceFor(dtype: DType): Tolerance {
  return TOLERANCE[dtype];
}

/**
 * The looser of two entries: an output compared with an oracle that was itself fed values
 * rounded to another dtype on the way (e.g. a float16 statistic feeding a float32 output).
 */
export function looser(a: Tolerance, b: Tolerance): Tolerance {
  return { rtol: Math.max(a.rtol, b.rtol), atol: Math.max(a.atol, b.atol) };
}

/**
 * Two kernels compared with each other instead of with the oracle (e.g. a backend's output in
 * a child process against the CPU backend's): each is within `t` of the exact value, so they
 * are within twice `t` of each other.
 */
export function betweenKernels(t: Tolerance): Tolerance {
  return { rtol: 2 * t.rtol, atol: 2 * t.atol };
}

/** Bitwise-equal results: the same kernel on the same values (views, masks, defaults). */
export const EXACT: Tolerance = Object.freeze({ rtol: 0, atol: 0 });

/**
 * The software CANN against a float64 replay of the steps it documents for an operator (the
 * same operations in the same order, the same roundings to CANN's intermediate dtypes, one
 * rounding per output): both are IEEE double arithmetic, so the bits agree. Only for the
 * simulator; an NPU gets TOLERANCE.
 */
export const SIM_REPLAY: Tolerance = EXACT;

/**
 * A float64 formula vs central differences of a float64 forward (h = 1e-5): truncation
 * error ~h^2 * |f'''| and cancellation ~2^-53 * |f| / h, both ~1e-10 for the O(1) problems
 * of the tests; 1e-6 leaves a wide margin and still catches any wrong term.
 */
export const FINITE_DIFFERENCES: Tolerance = Object.freeze({ rtol: 1e-6, atol: 1e-6 });

/**
 * An invariant that holds exactly in real arithmetic and is checked on float32 outputs
 * (e.g. sum of a training gradInput over a channel = 0, stats of normalised data): the
 * float32 entry's rounding of each of the n summed outputs, accumulated: n * 2^-24 relative
 * to the sum of |terms|, with the fp32-accumulation room.
 */
export function invariantTolerance(n: number): Tolerance {
  const t = Math.max(1, n) * 2 * HALF_ULP.float32 + FP32_ACCUMULATION;
  return { rtol: t, atol: t };
}

/**
 * A module's result vs PyTorch's float32 CPU result for the same steps (tests/nn, the fixture
 * of tests/nn/make_torch_fixtures.py). PyTorch rounds its intermediates to float32 and sums a
 * channel's or group's terms (at most 108 in the fixture) in float32; the package sums in
 * float64 and rounds each output once; the training replays feed each step's parameter update
 * into the next. Measured over the whole fixture (CPU backend and software CANN): at most 2.1
 * half-ulps of float32 under the scaled rule of `assertClose`. 32 half-ulps (1.9e-6) leaves
 * 15x room for a fixture regenerated by another torch build; a biased running variance (1% at
 * 108 terms), a wrong momentum or a misplaced eps of 1e-3 (the fixture's eps cases) are far
 * outside it.
 */
export const PYTORCH_FLOAT32: Tolerance = Object.freeze({
  rtol: 32 * HALF_ULP.float32,
  atol: 32 * HALF_ULP.float32,
});
