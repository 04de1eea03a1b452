/**
 * aclnnGemmaRmsNorm: RMSNorm as the Gemma models use it, scaling by 1 + gamma. Per row of
 * N = numel(gamma) elements (gamma's dims, the trailing dims of x):
 *
 * ```
 * rstd = 1 / sqrt(sum(x^2) / N + epsilon)
 * y    = x * rstd * (1 + gamma)
 * ```
 *
 * 1 + gamma is formed in float32, never rounded to gamma's dtype (ops-nn
 * `norm/rms_norm/op_kernel/rms_norm.h:150-166`, ComputeMulGammaCast with is_gemma), and y is
 * rounded once to x's dtype.
 *
 * @example
 * ```ts
 * import { gemmaRmsNorm, Tensor } from "@aclnn/norm";
 * const x = Tensor.fromArray([3, 4, 0, 0], [2, 2]);
 * const { y, rstd } = gemmaRmsNorm({ x, gamma: Tensor.zeros([2]), epsilon: 0 });
 * console.log(y.toArray().slice(0, 2), rstd.shape); // [0.8485..., 1.1313...] [2, 1]
 * ```
 *
 * @module
 */

import type { RmsNormArgs, RmsNormOut, RmsNormResult } from "./rms_norm.ts";
import { rmsForwardOutputs, type RmsForwardValidated, validateRmsForward } from "./rms_norm.ts";
import { defineOperator } from "./spec.ts";

const OP = "aclnnGemmaRmsNorm";

/** Preallocated outputs of {@linkcode gemmaRmsNorm} (CANN yOut, rstdOut). */
export type GemmaRmsNormOut = RmsNormOut;

/**
 * Arguments of {@linkcode gemmaRmsNorm} (names as in CANN): x (rank 1-8, float32/float16/
 * bfloat16), gamma (x's trailing dims; x's dtype, or float32 with 16-bit x on Ascend 950 and the
 * CPU), epsilon (>= 0, default 1e-6, the definition's and torch_npu's), out.
 */
export type GemmaRmsNormArgs = RmsNormArgs;

/** Results of {@linkcode gemmaRmsNorm}: y = x * rstd * (1 + gamma) and rstd (float32). */
export type GemmaRmsNormResult = RmsNormResult;

/**
 * Runs Gemma's RMSNorm as aclnnGemmaRmsNorm does, on the CPU or on the NPU the tensors live on.
 *
 * Validation, in the order of CANN's generated operator (opbase individual-op framework, then
 * ops-nn `norm/rms_norm/op_host/rms_norm_tiling.cpp` Tiling4GemmaRmsNorm: CheckInputShape4RmsNorm,
 * then setEpsTiling): 161001 when x or gamma is missing or `out.y`/`out.rstd` is `null`; 161002
 * when the dtypes are not a row of the operator's definition (`gemma_rms_norm_def.cpp`: x
 * float32/float16/bfloat16, gamma x's dtype or float32, y x's dtype, rstd float32); then 561002:
 * x and gamma of 1 to 8 dims, gamma no more dims than x and equal to x's trailing dims, y's shape
 * x's, no empty dim in gamma, x, y or rstd (unless every output is empty: then nothing is
 * computed, and epsilon is not checked), each rstd dim 1 or x's, and epsilon >= 0. rstd must hold one value per row
 * (161002). On an NPU the chip's rules apply too: Atlas A2/A3 and Ascend 950 only (not the
 * Atlas inference series, Atlas training or Atlas 200I/500 A2); a float32 gamma with 16-bit x
 * on Ascend 950 only.
 *
 * Without `out`, y takes x's dtype, shape and memory layout and rstd is float32 with x's
 * leading dims then 1s.
 *
 * @example
 * ```ts
 * import { gemmaRmsNorm, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([2, 4, 16], { seed: 1, dtype: "bfloat16" });
 * const gamma = Tensor.zeros([16], "bfloat16"); // Gemma's weights start at 0: scale 1
 * const { y, rstd } = gemmaRmsNorm({ x, gamma });
 * console.log(y.dtype, rstd.dtype, rstd.shape); // bfloat16 float32 [2, 4, 1]
 * ```
 */
export function gemmaRmsNorm(args: GemmaRmsNormArgs): GemmaRmsNormResult {
  return call(args);
}

const call = defineOperator<GemmaRmsNormArgs, "y" | "rstd", RmsForwardValidated, RmsNormResult>({
  op: OP,
  args: ["x", "gamma", "epsilon"],
  outputs: rmsForwardOutputs,
  validate: (args) => validateRmsForward(OP, args),
  run: (v, o) => v.backend.gemmaRmsNorm(v.plan, { ...v.tensors, y: o.y!, rstd: o.rstd! }),
});
