/**
 * aclnnInplaceAddRmsNorm: aclnnAddRmsNorm in place. x = x1Ref + x2Ref is rounded to the dtype and
 * written over x2Ref; then, per row of N = numel(gamma) elements of that x,
 *
 * ```
 * rstd  = 1 / sqrt(sum(x^2) / N + epsilon)
 * x1Ref = x * rstd * gamma
 * ```
 *
 * with the kernels and roundings of {@linkcode addRmsNorm} (ops-nn
 * `norm/inplace_add_rms_norm/op_kernel/inplace_add_rms_norm.cpp` binds AddRmsNorm's y to x1 and
 * x to x2). Only rstd is a new tensor.
 *
 * @example
 * ```ts
 * import { inplaceAddRmsNorm, Tensor } from "@aclnn/norm";
 * const x1Ref = Tensor.fromArray([1, 2, 3, 4], [2, 2]);
 * const x2Ref = Tensor.fromArray([2, 2, 0, 0], [2, 2]);
 * const { rstd } = inplaceAddRmsNorm({ x1Ref, x2Ref, gamma: Tensor.ones([2]), epsilon: 0 });
 * console.log(x2Ref.toArray(), rstd.shape); // [3, 4, 3, 4] [2, 1]
 * ```
 *
 * @module
 */

import type { InplaceAddRmsNormPlan, InplaceAddRmsNormTensors } from "../backends/mod.ts";
import { rowGeometry } from "../backends/mod.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import { formatShape } from "../tensor/layout.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { z } from "./zod.ts";
import {
  checkTrailingGamma,
  epsilonSchema,
  MAX_RANK,
  newStatistic,
  statisticsShape,
  TILING_ERROR,
  tilingFailure,
} from "./row_norm_checks.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnInplaceAddRmsNorm";

/** Preallocated output of {@linkcode inplaceAddRmsNorm} (CANN rstdOut). */
export interface InplaceAddRmsNormOut {
  /** Receives rstd: float32, x1Ref's dims before gamma's then 1 for each gamma dim. */
  rstd?: Tensor | null;
}

/** Arguments of {@linkcode inplaceAddRmsNorm} (names as in CANN). */
export interface InplaceAddRmsNormArgs {
  /** First summand, rank 1-8, float32/float16/bfloat16; receives y = x * rstd * gamma. */
  x1Ref: check.MaybeTensor;
  /** Second summand (the residual): x1Ref's shape and dtype; receives x = x1Ref + x2Ref. */
  x2Ref: check.MaybeTensor;
  /** Scale: x1Ref's trailing dims, x1Ref's dtype. */
  gamma: check.MaybeTensor;
  /** Added to mean(x^2), >= 0. Default 1e-6 (the operator definition's). */
  epsilon?: number;
  /** A preallocated rstd (validated as aclnn does); allocated when missing. */
  out?: InplaceAddRmsNormOut;
}

/** Result of {@linkcode inplaceAddRmsNorm}; `using` frees rstd when the call allocated it. */
export interface InplaceAddRmsNormResult extends Disposable {
  /** Per-row 1/sqrt(mean(x^2) + epsilon), float32. */
  rstd: Tensor;
}

const scalarsSchema = z.object({ epsilon: epsilonSchema(1e-6) });

/**
 * Runs the fused residual add and RMSNorm in place as aclnnInplaceAddRmsNorm does, on the CPU or
 * on the NPU the tensors live on: afterwards x1Ref holds y and x2Ref holds x = x1 + x2 (what the
 * next block adds to), as `addRmsNorm` would have returned them.
 *
 * Validation, in the order of CANN's generated operator (opbase individual-op framework, then
 * AddRmsNorm's tiling, ops-nn `norm/add_rms_norm/op_host/add_rms_norm_tiling.cpp`
 * CheckInputOutputDim, CheckInputOutputShape, GetEpsilonParameter): 161001 when x1Ref, x2Ref or
 * gamma is missing or `out.rstd` is `null`; 161002 when the dtypes are not a row of the
 * definition (`inplace_add_rms_norm_def.cpp`: x1Ref float32/float16/bfloat16, x2Ref and gamma
 * x1Ref's dtype, rstd float32); nothing happens when x1Ref, x2Ref and rstd are all empty; then
 * 561002: x1Ref and gamma of 1 to 8 dims, gamma no more dims than x1Ref, x2Ref and rstd of
 * x1Ref's rank, no empty dim in x1Ref, x2Ref's shape x1Ref's, rstd x1Ref's leading dims, gamma
 * x1Ref's trailing dims and rstd's trailing dims 1, epsilon >= 0. x1Ref and x2Ref may not share
 * memory with each other, gamma or rstd (161002). On an NPU the chip's rules apply too (not on
 * Atlas training or Atlas 200I/500 A2; no bfloat16 on the Atlas inference series, whose kernel
 * does not store rstd: the backend computes it with aclnnRmsNorm over the stored x).
 *
 * @example
 * ```ts
 * import { inplaceAddRmsNorm, Tensor } from "@aclnn/norm";
 * const hidden = Tensor.random([2, 3, 16], { seed: 1, dtype: "bfloat16" });
 * const residual = Tensor.random([2, 3, 16], { seed: 2, dtype: "bfloat16" });
 * const gamma = Tensor.ones([16], "bfloat16");
 * const { rstd } = inplaceAddRmsNorm({ x1Ref: hidden, x2Ref: residual, gamma });
 * console.log(rstd.shape); // [2, 3, 1]; hidden now holds y, residual the new residual stream
 * ```
 */
export function inplaceAddRmsNorm(args: InplaceAddRmsNormArgs): InplaceAddRmsNormResult {
  return call(args);
}

/**
 * What validation established; `empty`: x1Ref, x2Ref and rstd are all empty, so CANN skips the
 * launch (the generated framework's NnopbaseSkipKernelLaunch).
 */
type Validated = PlannedCall<"rstd", InplaceAddRmsNormPlan, InplaceAddRmsNormTensors> & {
  readonly empty: boolean;
};

const call = defineOperator<InplaceAddRmsNormArgs, "rstd", Validated, InplaceAddRmsNormResult>({
  op: OP,
  args: ["x1Ref", "x2Ref", "gamma", "epsilon"],
  outputs: { rstd: (v) => newStatistic(v.tensors.x1Ref, v.plan.geometry, v.device) },
  validate,
  run: (v, o) => {
    if (!v.empty) v.backend.inplaceAddRmsNorm(v.plan, { ...v.tensors, rstd: o.rstd! });
  },
});

/** 561002 naming `name`: the tiling's rule for its shape. */
function shapeFailure(name: string, t: Tensor, rule: string): never {
  return tilingFailure(OP, TILING_ERROR, name, `shape ${formatShape(t.shape)} ${rule}`);
}

/** AddRmsNorm's tiling on (x1Ref, x2Ref, gamma, rstd), in its order (RMS_NORM_KEY). */
function checkTilingShapes(x1: Tensor, x2: Tensor, gamma: Tensor, rstd: readonly number[]): void {
  for (const [name, t] of [["x1Ref", x1], ["gamma", gamma]] as const) {
    if (t.rank < 1 || t.rank > MAX_RANK) {
      tilingFailure(OP, TILING_ERROR, name, `rank ${t.rank} must be in 1..${MAX_RANK}`);
    }
  }
  if (gamma.rank > x1.rank) {
    tilingFailure(
      OP,
      TILING_ERROR,
      "gamma",
      `rank ${gamma.rank} must not exceed x1Ref's ${x1.rank}`,
    );
  }
  if (x2.rank !== x1.rank) {
    tilingFailure(OP, TILING_ERROR, "x2Ref", `rank ${x2.rank} must equal x1Ref's ${x1.rank}`);
  }
  if (rstd.length !== x1.rank) {
    tilingFailure(OP, TILING_ERROR, "rstd", `rank ${rstd.length} must equal x1Ref's ${x1.rank}`);
  }
  if (x1.numel === 0) shapeFailure("x1Ref", x1, "must not be empty");
  if (!check.sameShape(x2.shape, x1.shape)) {
    shapeFailure("x2Ref", x2, `must equal x1Ref's ${formatShape(x1.shape)}`);
  }
  checkTrailingGamma(OP, TILING_ERROR, gamma, "x1Ref", x1);
  const want = statisticsShape(x1.shape, x1.rank - gamma.rank, 1);
  if (!check.sameShape(rstd, want)) {
    tilingFailure(
      OP,
      TILING_ERROR,
      "rstd",
      `shape ${formatShape(rstd)} must be ${formatShape(want)} (x1Ref's dims before gamma's, ` +
        "then 1 for each gamma dim)",
    );
  }
}

function validate(args: InplaceAddRmsNormArgs): Validated {
  const x1Ref = check.requireTensor(OP, "x1Ref", args.x1Ref);
  const x2Ref = check.requireTensor(OP, "x2Ref", args.x2Ref);
  const gamma = check.requireTensor(OP, "gamma", args.gamma);
  const rstd = check.requestedOutput(OP, "rstd", args.out, true);
  const { epsilon } = check.parseScalars(OP, scalarsSchema, { epsilon: args.epsilon });

  // The (dtype, format) rows of the definition.
  check.checkDType(OP, "x1Ref", x1Ref, FLOAT_DTYPES);
  check.checkSameDType(OP, "x2Ref", x2Ref, "x1Ref", x1Ref);
  check.checkSameDType(OP, "gamma", gamma, "x1Ref", x1Ref);
  if (rstd && rstd.dtype !== "float32") {
    check.invalid(OP, "rstd", `dtype ${rstd.dtype} must be float32`);
  }

  const axis = Math.max(0, x1Ref.rank - gamma.rank);
  const geometry = rowGeometry(x1Ref.shape, axis);
  const rstdShape = rstd ? rstd.shape : statisticsShape(x1Ref.shape, axis, geometry.rows);
  const empty = x1Ref.numel === 0 && x2Ref.numel === 0 &&
    rstdShape.reduce((p, d) => p * d, 1) === 0;
  if (!empty) {
    checkTilingShapes(x1Ref, x2Ref, gamma, rstdShape);
    if (epsilon < 0) {
      tilingFailure(OP, TILING_ERROR, "epsilon", `(${epsilon}) must not be negative`);
    }
  }

  // x1Ref and x2Ref are written over themselves, nowhere else.
  const written = { x1Ref, x2Ref, rstd };
  const read = { x1Ref, x2Ref, gamma };
  check.checkWrites(OP, written, read, [["x1Ref", "x1Ref"], ["x2Ref", "x2Ref"]]);
  const { device, backend } = check.placeCall(OP, { ...read, rstd }, {
    rows: geometry.rows,
    cols: geometry.cols,
    axis,
  });
  return {
    device,
    backend,
    plan: { geometry, epsilon },
    tensors: { x1Ref, x2Ref, gamma },
    given: { rstd },
    empty,
  };
}
