/**
 * aclnnDeepNorm: DeepNet's post-LayerNorm with an up-weighted residual. Per row of N =
 * numel(gamma) elements:
 *
 * ```
 * s    = alpha * x + gx              (in float32, not rounded before the statistics)
 * mean = sum(s) / N
 * rstd = 1 / sqrt(sum((s - mean)^2) / N + epsilon)
 * y    = (s - mean) * rstd * gamma + beta
 * ```
 *
 * @example
 * ```ts
 * import { deepNorm, Tensor } from "@aclnn/norm";
 * const x = Tensor.fromArray([1, 2, 3, 4], [1, 4]);
 * const gx = Tensor.fromArray([0, 0, 0, 0], [1, 4]);
 * const r = deepNorm({ x, gx, beta: Tensor.zeros([4]), gamma: Tensor.ones([4]), alpha: 2 });
 * console.log(r.mean.toArray()); // [5]
 * ```
 *
 * @module
 */

import type { DeepNormPlan, DeepNormTensors } from "../backends/mod.ts";
import { rowGeometry } from "../backends/mod.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import { Tensor } from "../tensor/tensor.ts";
import { z } from "./zod.ts";
import { checkFusedShapes, fusedDTypeError } from "./fused_norm_checks.ts";
import { epsilonSchema, fillAll, newStatistic, placeRowNorm } from "./row_norm_checks.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnDeepNorm";

/** Preallocated outputs of {@linkcode deepNorm} (CANN meanOut, rstdOut, yOut). */
export interface DeepNormOut {
  /** Receives the per-row mean: float32, x's dims before gamma's then 1 for each gamma dim. */
  mean?: Tensor | null;
  /** Receives the per-row rstd: mean's shape and dtype. */
  rstd?: Tensor | null;
  /** Receives y: x's shape and dtype, any strides. */
  y?: Tensor | null;
}

/** Arguments of {@linkcode deepNorm} (names as in CANN, in its order: beta before gamma). */
export interface DeepNormArgs {
  /** The sublayer's input (scaled by alpha), rank 2-8, float32/float16/bfloat16. */
  x: check.MaybeTensor;
  /** The sublayer's output: x's shape and dtype. */
  gx: check.MaybeTensor;
  /** Offset: x's trailing dims (1 to 7 of them, fewer than x's), x's dtype. */
  beta: check.MaybeTensor;
  /** Scale: beta's shape, x's dtype. */
  gamma: check.MaybeTensor;
  /** x's factor (a float32 attribute in CANN). Default 0.3. */
  alpha?: number;
  /** Added to the variance (a float32 attribute). Default 1e-6. */
  epsilon?: number;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: DeepNormOut;
}

/** Results of {@linkcode deepNorm}; `using` frees the outputs the call allocated. */
export interface DeepNormResult extends Disposable {
  /** Per-row mean of alpha * x + gx, float32. */
  mean: Tensor;
  /** Per-row 1/sqrt(biased var + epsilon), float32. */
  rstd: Tensor;
  /** (s - mean) * rstd * gamma + beta, x's dtype. */
  y: Tensor;
}

const scalarsSchema = z.object({
  alpha: check.finiteNumber.default(0.3),
  epsilon: epsilonSchema(1e-6),
});

/**
 * Runs DeepNorm as aclnnDeepNorm does, on the CPU or on the NPU the tensors live on.
 *
 * Validation, in the order of CANN's generated operator (ops-nn `norm/deep_norm/op_host/
 * deep_norm_def.cpp`, then `deep_norm_shape_check.h`): 161001 when x, gx, beta or gamma is
 * missing or an `out` entry is `null`; 161002 when x is not float32/float16/bfloat16 or gx,
 * beta, gamma, y have another dtype, or mean/rstd are not float32. Every output empty: SUCCESS
 * with nothing written (allocated outputs hold NaN). Then 561002 (the tiling): x rank not 2-8,
 * gamma rank not 1-7, gx/y/mean/rstd of another rank than x, gamma of x's rank or more, a dim of
 * x 0, gx or y not x's shape, beta not gamma's shape, gamma not x's trailing dims, mean/rstd not
 * x's leading dims then 1s. On an NPU the chip's rules apply too (not on Atlas training or
 * 200I/500 A2; no bfloat16 on the Atlas inference series).
 *
 * @example
 * ```ts
 * import { deepNorm, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([2, 3, 16], { seed: 1, dtype: "float16" });
 * const gx = Tensor.random([2, 3, 16], { seed: 2, dtype: "float16" });
 * const gamma = Tensor.ones([16], "float16");
 * const beta = Tensor.zeros([16], "float16");
 * const { y, rstd } = deepNorm({ x, gx, beta, gamma, alpha: 0.87 });
 * console.log(y.dtype, rstd.shape); // float16 [2, 3, 1]
 * ```
 */
export function deepNorm(args: DeepNormArgs): DeepNormResult {
  return call(args);
}

type Output = "mean" | "rstd" | "y";

/** What validation established; `empty`: every output is empty (no launch). */
type Validated = PlannedCall<Output, DeepNormPlan, DeepNormTensors> & { readonly empty: boolean };

const call = defineOperator<DeepNormArgs, Output, Validated, DeepNormResult>({
  op: OP,
  args: ["x", "gx", "beta", "gamma", "alpha", "epsilon"],
  outputs: {
    mean: (v) => newStatistic(v.tensors.x, v.plan.geometry, v.device),
    rstd: (v) => newStatistic(v.tensors.x, v.plan.geometry, v.device),
    y: (v) => Tensor.emptyLike(v.tensors.x, v.tensors.x.dtype, v.device),
  },
  validate,
  run: (v, o) => {
    if (v.empty) {
      for (const name of ["mean", "rstd", "y"] as const) if (!v.given[name]) fillAll(o[name]!, NaN);
      return;
    }
    v.backend.deepNorm(v.plan, { ...v.tensors, mean: o.mean!, rstd: o.rstd!, y: o.y! });
  },
});

function validate(args: DeepNormArgs): Validated {
  const x = check.requireTensor(OP, "x", args.x);
  const gx = check.requireTensor(OP, "gx", args.gx);
  const beta = check.requireTensor(OP, "beta", args.beta);
  const gamma = check.requireTensor(OP, "gamma", args.gamma);
  const mean = check.requestedOutput(OP, "mean", args.out, true);
  const rstd = check.requestedOutput(OP, "rstd", args.out, true);
  const y = check.requestedOutput(OP, "y", args.out, true);
  const { alpha, epsilon } = check.parseArguments(OP, scalarsSchema, args);

  // The OpDef's rows (deep_norm_def.cpp): x = gx = beta = gamma = y, mean/rstd float32.
  check.checkDType(OP, "x", x, FLOAT_DTYPES);
  for (const [name, t] of Object.entries({ gx, beta, gamma, y })) {
    if (t && t.dtype !== x.dtype) fusedDTypeError(OP, name, t.dtype, `x's ${x.dtype}`);
  }
  for (const [name, t] of Object.entries({ mean, rstd })) {
    if (t && t.dtype !== "float32") fusedDTypeError(OP, name, t.dtype, "float32");
  }

  const geometry = rowGeometry(x.shape, Math.max(0, x.rank - gamma.rank));
  const given = { mean, rstd, y };
  const sizes = { mean: geometry.rows, rstd: geometry.rows, y: x.numel };
  const empty = Object.entries(given).every(([name, t]) =>
    (t ? t.numel : sizes[name as Output]) === 0
  );
  const { device, backend } = placeRowNorm(OP, given, { x, gx, beta, gamma }, geometry);
  if (!empty) {
    checkFusedShapes(OP, { data: ["x", x], same: { gx, y }, gamma, beta, mean, rstd }, 2);
  }
  const plan = { geometry, alpha: Math.fround(alpha), epsilon: Math.fround(epsilon) };
  return { device, backend, plan, tensors: { x, gx, beta, gamma }, given, empty };
}
