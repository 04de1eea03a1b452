/**
 * aclnnRmsNorm: Root Mean Square Layer Normalization over gamma's dims, the trailing dims of
 * x. No mean is subtracted and there is no bias; per row of N = numel(gamma) elements:
 *
 * ```
 * rstd = 1 / sqrt(sum(x^2) / N + epsilon)
 * y    = x * rstd * gamma
 * ```
 *
 * rstd is float32 with x's leading dims then 1s, the input of {@linkcode rmsNormGrad}.
 *
 * @example
 * ```ts
 * import { rmsNorm, Tensor } from "@aclnn/norm";
 * const x = Tensor.fromArray([3, 4, 0, 0], [2, 2]);
 * const { y, rstd } = rmsNorm({ x, gamma: Tensor.ones([2]), epsilon: 0 });
 * console.log(y.toArray().slice(0, 2), rstd.shape); // [0.8485..., 1.1313...] [2, 1]
 * ```
 *
 * @module
 */

import type { RmsNormPlan, RmsNormTensors } from "../backends/mod.ts";
import { rowGeometry } from "../backends/mod.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import { formatShape } from "../tensor/layout.ts";
import { Tensor } from "../tensor/tensor.ts";
import { z } from "./zod.ts";
import {
  checkRowStatistic,
  checkTrailingGamma,
  epsilonSchema,
  MAX_RANK,
  newStatistic,
  placeRowNorm,
  TILING_ERROR,
  tilingFailure,
} from "./row_norm_checks.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnRmsNorm";

/** Preallocated outputs of {@linkcode rmsNorm} (CANN yOut, rstdOut). */
export interface RmsNormOut {
  /** Receives y: x's shape and dtype, any strides. */
  y?: Tensor | null;
  /** Receives rstd: float32, one value per row, each dim 1 or x's dim at that index. */
  rstd?: Tensor | null;
}

/** Arguments of {@linkcode rmsNorm} (names as in CANN). */
export interface RmsNormArgs {
  /** x, rank 1-8, float32/float16/bfloat16. */
  x: check.MaybeTensor;
  /** Scale: x's trailing dims, x's dtype or float32 (16-bit x with float32 gamma). */
  gamma: check.MaybeTensor;
  /** Added to mean(x^2), >= 0. Default 1e-6 (the docs' and torch_npu's). */
  epsilon?: number;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: RmsNormOut;
}

/** Results of {@linkcode rmsNorm}; `using` frees the outputs the call allocated. */
export interface RmsNormResult extends Disposable {
  /** x * rstd * gamma, x's shape and dtype. */
  y: Tensor;
  /** Per-row 1/sqrt(mean(x^2) + epsilon), float32. */
  rstd: Tensor;
}

const scalarsSchema = z.object({ epsilon: epsilonSchema(1e-6) });

/** The (x, gamma, y, rstd) dtype rule of the OpDef rows every chip has or the A2/A3/950 add. */
export function checkRmsDTypes(
  op: string,
  data: Readonly<Record<string, Tensor | undefined>>,
  x: Tensor,
  gamma: Tensor,
  statistics: Readonly<Record<string, Tensor | undefined>>,
): void {
  check.checkDType(op, "x", x, FLOAT_DTYPES);
  for (const [name, t] of Object.entries(data)) {
    if (t && t.dtype !== x.dtype) {
      check.invalid(op, name, `dtype ${t.dtype} must equal x dtype ${x.dtype}`);
    }
  }
  if (gamma.dtype !== "float32" && gamma.dtype !== x.dtype) {
    check.invalid(op, "gamma", `dtype ${gamma.dtype} must be float32 or x dtype ${x.dtype}`);
  }
  for (const [name, t] of Object.entries(statistics)) {
    if (t && t.dtype !== "float32") check.invalid(op, name, `dtype ${t.dtype} must be float32`);
  }
}

/**
 * Runs RMSNorm as aclnnRmsNorm does, on the CPU or on the NPU the tensors live on.
 *
 * Validation, in the order of CANN's generated operator (opbase individual-op framework, then
 * ops-nn `norm/rms_norm/op_host/rms_norm_tiling.cpp` CheckInputShape4RmsNorm): 161001 when x
 * or gamma is missing or `out.y`/`out.rstd` is `null`; 161002 when the dtypes are not a row of
 * the operator's definition (`rms_norm_def.cpp`: x float32/float16/bfloat16, gamma x's dtype or
 * float32, y x's dtype, rstd float32); then the tiling's checks with 561002: x and gamma of
 * 1 to 8 dims, gamma no more dims than x and equal to x's trailing dims, y's shape x's, no
 * empty dim in gamma, x, y or rstd (unless every output is empty: then nothing is computed,
 * and epsilon is not checked), each rstd dim 1 or x's, and epsilon >= 0. rstd must hold one
 * value per row (161002). On an NPU the chip's rules apply too (not on Atlas training or Atlas 200I/500 A2; no bfloat16 or
 * float32 gamma with 16-bit x on the Atlas inference series).
 *
 * Without `out`, y takes x's dtype, shape and memory layout and rstd is float32 with x's
 * leading dims then 1s, as torch_npu allocates them.
 *
 * @example
 * ```ts
 * import { rmsNorm, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([2, 4, 16], { seed: 1, dtype: "float16" });
 * const gamma = Tensor.ones([16], "float32"); // mixed precision: float32 gamma
 * const { y, rstd } = rmsNorm({ x, gamma });
 * console.log(y.dtype, rstd.dtype, rstd.shape); // float16 float32 [2, 4, 1]
 * ```
 */
export function rmsNorm(args: RmsNormArgs): RmsNormResult {
  return call(args);
}

type Output = "y" | "rstd";

/** What validation of aclnnRmsNorm or aclnnGemmaRmsNorm established for one set of arguments. */
export type RmsForwardValidated = PlannedCall<Output, RmsNormPlan, RmsNormTensors>;
type Validated = RmsForwardValidated;

/**
 * How aclnnRmsNorm and aclnnGemmaRmsNorm allocate the outputs `out` does not give: y like x
 * (dtype, shape, memory layout), rstd float32 with x's leading dims then 1s.
 */
export const rmsForwardOutputs: Readonly<
  Record<Output, (v: Validated) => Tensor>
> = {
  y: (v) => Tensor.emptyLike(v.tensors.x, v.tensors.x.dtype, v.device),
  rstd: (v) => newStatistic(v.tensors.x, v.plan.geometry, v.device),
};

const call = defineOperator<RmsNormArgs, Output, Validated, RmsNormResult>({
  op: OP,
  args: ["x", "gamma", "epsilon"],
  outputs: rmsForwardOutputs,
  validate,
  run: (v, o) => v.backend.rmsNorm(v.plan, { ...v.tensors, y: o.y!, rstd: o.rstd! }),
});

/**
 * RmsNorm's tiling checks on (x, gamma, y) with 561002 (CheckInputShape4RmsNorm). `empty`: every
 * output is empty, so CANN skips the launch; the dims must still be consistent here, only
 * empty ones are allowed.
 */
export function checkRmsShapes(
  op: string,
  x: Tensor,
  gamma: Tensor,
  y: Tensor | undefined,
  empty: boolean,
): void {
  for (const [name, t] of Object.entries({ x, gamma })) {
    if (t.rank < 1 || t.rank > MAX_RANK) {
      tilingFailure(op, TILING_ERROR, name, `rank ${t.rank} must be in 1..${MAX_RANK}`);
    }
  }
  if (gamma.rank > x.rank) {
    tilingFailure(op, TILING_ERROR, "gamma", `rank ${gamma.rank} must not exceed x rank ${x.rank}`);
  }
  if (y && y.rank !== x.rank) {
    tilingFailure(op, TILING_ERROR, "y", `rank ${y.rank} must equal x rank ${x.rank}`);
  }
  if (!empty && gamma.numel === 0) {
    tilingFailure(op, TILING_ERROR, "gamma", `shape ${formatShape(gamma.shape)} must not be empty`);
  }
  checkTrailingGamma(op, TILING_ERROR, gamma, "x", x);
  if (!empty && x.numel === 0) {
    tilingFailure(op, TILING_ERROR, "x", `shape ${formatShape(x.shape)} must not be empty`);
  }
  if (y && y.shape.some((d, i) => d !== x.shape[i])) {
    tilingFailure(
      op,
      TILING_ERROR,
      "y",
      `shape ${formatShape(y.shape)} must equal x shape ${formatShape(x.shape)}`,
    );
  }
}

function validate(args: RmsNormArgs): Validated {
  return validateRmsForward(OP, args);
}

/**
 * The validation of aclnnRmsNorm, which aclnnGemmaRmsNorm (same generated-operator framework,
 * same tiling checks: rms_norm_tiling.cpp Tiling4GemmaRmsNorm calls CheckInputShape4RmsNorm,
 * then refuses a negative epsilon) shares: `op` names the operator in errors.
 */
export function validateRmsForward(op: string, args: RmsNormArgs): Validated {
  const x = check.requireTensor(op, "x", args.x);
  const gamma = check.requireTensor(op, "gamma", args.gamma);
  const y = check.requestedOutput(op, "y", args.out, true);
  const rstd = check.requestedOutput(op, "rstd", args.out, true);
  const { epsilon } = check.parseScalars(op, scalarsSchema, { epsilon: args.epsilon });

  checkRmsDTypes(op, { y }, x, gamma, { rstd });
  const axis = x.rank - gamma.rank;
  const geometry = rowGeometry(x.shape, Math.max(axis, 0));
  // Every output empty: CANN skips the launch (and the tiling's emptiness checks).
  const empty = (y ? y.numel : x.numel) === 0 && (rstd ? rstd.numel : geometry.rows) === 0;
  checkRmsShapes(op, x, gamma, y, empty);
  if (rstd && !empty) checkRowStatistic(op, TILING_ERROR, "rstd", rstd, x, geometry.rows);
  // The tiling's epsilon check (not reached when every output is empty: no launch, no tiling).
  if (epsilon < 0 && !empty) {
    tilingFailure(op, TILING_ERROR, "epsilon", `(${epsilon}) must not be negative`);
  }

  const { device, backend } = placeRowNorm(op, { y, rstd }, { x, gamma }, geometry);
  return {
    device,
    backend,
    plan: { geometry, epsilon },
    tensors: { x, gamma },
    given: { y, rstd },
  };
}
