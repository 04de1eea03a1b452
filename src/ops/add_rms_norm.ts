/**
 * aclnnAddRmsNorm: the residual add of an LLM block fused with RMSNorm. x = x1 + x2 is rounded
 * to x1's dtype and returned; then, per row of N = numel(gamma) elements of that x:
 *
 * ```
 * rstd = 1 / sqrt(sum(x^2) / N + epsilon)
 * y    = x * rstd * gamma
 * ```
 *
 * `x` is the next residual stream and, with `rstd`, what {@linkcode rmsNormGrad} takes.
 *
 * @example
 * ```ts
 * import { addRmsNorm, Tensor } from "@aclnn/norm";
 * const x1 = Tensor.fromArray([1, 2, 3, 4], [2, 2]);
 * const x2 = Tensor.fromArray([2, 2, 0, 0], [2, 2]);
 * const { y, rstd, x } = addRmsNorm({ x1, x2, gamma: Tensor.ones([2]), epsilon: 0 });
 * console.log(x.toArray(), rstd.shape); // [3, 4, 3, 4] [2, 1]
 * ```
 *
 * @module
 */

import type { AddRmsNormPlan, AddRmsNormTensors } from "../backends/mod.ts";
import { rowGeometry } from "../backends/mod.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import { Tensor } from "../tensor/tensor.ts";
import { z } from "./zod.ts";
import {
  checkMaxRank,
  checkTrailingGamma,
  checkViewCopy,
  epsilonSchema,
  fillAll,
  INNER_NULLPTR,
  newStatistic,
  placeRowNorm,
  statisticsShape,
  tilingFailure,
} from "./row_norm_checks.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnAddRmsNorm";

/** Preallocated outputs of {@linkcode addRmsNorm} (CANN yOut, rstdOut, xOut). */
export interface AddRmsNormOut {
  /** Receives y: x1's shape and dtype, any strides. */
  y?: Tensor | null;
  /**
   * Receives rstd: float32, x1's dims before gamma's then 1 for each gamma dim (one row: any
   * one-element shape; any shape when x1 or gamma is empty: nothing is written).
   */
  rstd?: Tensor | null;
  /** Receives x = x1 + x2: x1's shape and dtype, any strides. */
  x?: Tensor | null;
}

/** Arguments of {@linkcode addRmsNorm} (names as in CANN). */
export interface AddRmsNormArgs {
  /** First summand, rank 1-8, float32/float16/bfloat16. */
  x1: check.MaybeTensor;
  /** Second summand (the residual): x1's shape and dtype. */
  x2: check.MaybeTensor;
  /** Scale: x1's trailing dims, x1's dtype. */
  gamma: check.MaybeTensor;
  /** Added to mean(x^2), >= 0. Default 1e-6 (torch_npu's npu_add_rms_norm). */
  epsilon?: number;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: AddRmsNormOut;
}

/** Results of {@linkcode addRmsNorm}; `using` frees the outputs the call allocated. */
export interface AddRmsNormResult extends Disposable {
  /** x * rstd * gamma, x1's shape and dtype. */
  y: Tensor;
  /** Per-row 1/sqrt(mean(x^2) + epsilon), float32. */
  rstd: Tensor;
  /** x1 + x2 in x1's dtype. */
  x: Tensor;
}

const scalarsSchema = z.object({ epsilon: epsilonSchema(1e-6) });

/**
 * Runs the fused residual add and RMSNorm as aclnnAddRmsNorm does (its ADD mode: y, rstd and
 * x), on the CPU or on the NPU the tensors live on.
 *
 * Validation, in CANN's order (ops-nn `norm/add_rms_norm/op_host/op_api/aclnn_add_rms_norm.cpp`
 * CheckNotNull, CheckDtypeValid, CheckShapeDim, then the l0 operator's tiling,
 * `add_rms_norm_tiling.cpp`): 161001 when x1, x2 or gamma is missing or an `out` entry is
 * `null`; 161002 when a tensor is not float32/float16/bfloat16, x2, gamma, y or x has another
 * dtype than x1, rstd is not float32, x1, x2 or gamma has no dim or more than 8, or x2's, y's or
 * x's shape is not x1's. On an NPU the chip's rules apply too (not on Atlas training or Atlas
 * 200I/500 A2; no bfloat16 on the Atlas inference series, whose kernel does not store rstd: the
 * backend computes it with aclnnRmsNorm). Then 561103 when gamma is not x1's trailing dims or
 * epsilon is negative (the l0 operator's tiling), or a given rstd is not x1's dims before
 * gamma's then 1s (with one row, one element of any shape: CANN's l0op::ViewCopy refuses
 * another shape).
 *
 * An empty x1 or gamma: CANN returns SUCCESS before the l0 operator (nothing more is checked,
 * nothing is written), and so does this call: given outputs are left as they were, the ones it
 * allocates hold NaN (rstd of rows of no element is the mean of no square).
 *
 * Without `out`, y and x take x1's dtype, shape and memory layout, and rstd is float32 with
 * x1's leading dims then 1s.
 *
 * @example
 * ```ts
 * import { addRmsNorm, Tensor } from "@aclnn/norm";
 * const hidden = Tensor.random([2, 3, 16], { seed: 1, dtype: "bfloat16" });
 * const residual = Tensor.random([2, 3, 16], { seed: 2, dtype: "bfloat16" });
 * const gamma = Tensor.ones([16], "bfloat16");
 * const { y, rstd, x } = addRmsNorm({ x1: hidden, x2: residual, gamma });
 * console.log(y.dtype, rstd.shape, x.shape); // bfloat16 [2, 3, 1] [2, 3, 16]
 * ```
 */
export function addRmsNorm(args: AddRmsNormArgs): AddRmsNormResult {
  return call(args);
}

type Output = "y" | "rstd" | "x";

/**
 * What validation established for one set of argument values; `empty`: x1 or gamma is empty,
 * so CANN returns before computing anything (aclnn_add_rms_norm.cpp:229-236).
 */
type Validated = PlannedCall<Output, AddRmsNormPlan, AddRmsNormTensors> & {
  readonly empty: boolean;
};

const call = defineOperator<AddRmsNormArgs, Output, Validated, AddRmsNormResult>({
  op: OP,
  args: ["x1", "x2", "gamma", "epsilon"],
  outputs: {
    y: (v) => Tensor.emptyLike(v.tensors.x1, v.tensors.x1.dtype, v.device),
    rstd: (v) => newStatistic(v.tensors.x1, v.plan.geometry, v.device),
    x: (v) => Tensor.emptyLike(v.tensors.x1, v.tensors.x1.dtype, v.device),
  },
  validate,
  run: (v, o) => {
    if (v.empty) {
      // CANN writes nothing; the outputs this call allocated hold no result.
      for (const name of ["y", "rstd", "x"] as const) if (!v.given[name]) fillAll(o[name]!, NaN);
      return;
    }
    v.backend.addRmsNorm(v.plan, { ...v.tensors, y: o.y!, rstd: o.rstd!, x: o.x! });
  },
});

function validate(args: AddRmsNormArgs): Validated {
  const x1 = check.requireTensor(OP, "x1", args.x1);
  const x2 = check.requireTensor(OP, "x2", args.x2);
  const gamma = check.requireTensor(OP, "gamma", args.gamma);
  const y = check.requestedOutput(OP, "y", args.out, true);
  const rstd = check.requestedOutput(OP, "rstd", args.out, true);
  const x = check.requestedOutput(OP, "x", args.out, true);
  const { epsilon } = check.parseScalars(OP, scalarsSchema, { epsilon: args.epsilon });

  // CheckDtypeValid.
  for (const [name, t] of Object.entries({ x1, x2, gamma })) {
    check.checkDType(OP, name, t, FLOAT_DTYPES);
  }
  check.checkSameDType(OP, "x2", x2, "x1", x1);
  check.checkSameDType(OP, "gamma", gamma, "x1", x1);
  if (y) check.checkSameDType(OP, "y", y, "x1", x1);
  if (x) check.checkSameDType(OP, "x", x, "x1", x1);
  if (rstd && rstd.dtype !== "float32") {
    check.invalid(OP, "rstd", `dtype ${rstd.dtype} must be float32`);
  }

  // CheckShapeDim.
  for (const [name, t] of Object.entries({ x1, x2, gamma })) checkMaxRank(OP, name, t);
  for (const [name, t] of Object.entries({ x1, x2, gamma })) {
    if (t.rank < 1) check.invalid(OP, name, "must have at least 1 dim");
  }
  check.checkShape(OP, "x2", x2, x1.shape, "x1");
  checkMaxRank(OP, "y", y);
  if (y) check.checkShape(OP, "y", y, x1.shape, "x1");
  checkMaxRank(OP, "rstd", rstd);
  checkMaxRank(OP, "x", x);
  if (x) check.checkShape(OP, "x", x, x1.shape, "x1");

  // An empty x1 or gamma: SUCCESS before the l0 operator (aclnn_add_rms_norm.cpp:229-236).
  const empty = x1.numel === 0 || gamma.numel === 0;
  const geometry = rowGeometry(x1.shape, Math.max(0, x1.rank - gamma.rank));
  const { device, backend } = placeRowNorm(OP, { y, rstd, x }, { x1, x2, gamma }, geometry);
  if (!empty) {
    // The l0 operator's tiling (CheckInputOutputDim/Shape, GetEpsilonParameter): 561103.
    checkTrailingGamma(OP, INNER_NULLPTR, gamma, "x1", x1);
    if (epsilon < 0) {
      tilingFailure(OP, INNER_NULLPTR, "epsilon", `(${epsilon}) must not be negative`);
    }
    // ComputeAddRmsNorm's l0op::ViewCopy of the l0 rstd, x1's leading dims then 1s
    // (aclnn_add_rms_norm.cpp:193-196, add_rms_norm.cpp:39-53): 561103.
    if (rstd) {
      checkViewCopy(OP, "rstd", rstd, statisticsShape(x1.shape, geometry.axis, geometry.rows));
    }
  }

  return {
    device,
    backend,
    plan: { geometry, epsilon },
    tensors: { x1, x2, gamma },
    given: { y, rstd, x },
    empty,
  };
}
