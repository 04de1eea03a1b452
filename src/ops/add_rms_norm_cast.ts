/**
 * aclnnAddRmsNormCast: the residual add of an LLM block fused with RMSNorm, whose normalized
 * output comes both in float32 (for a float32 consumer, e.g. a router) and in the data dtype.
 * Per row of N = numel(gamma) elements:
 *
 * ```
 * x    = x1 + x2                         (returned rounded to x1's dtype)
 * rstd = 1 / sqrt(sum(x^2) / N + epsilon)
 * y1   = x * rstd * gamma                (float32)
 * y2   = y1 rounded to x1's dtype
 * ```
 *
 * @example
 * ```ts
 * import { addRmsNormCast, Tensor } from "@aclnn/norm";
 * const x1 = Tensor.fromArray([1, 2, 3, 4], [2, 2], "float16");
 * const x2 = Tensor.fromArray([2, 2, 0, 0], [2, 2], "float16");
 * const r = addRmsNormCast({ x1, x2, gamma: Tensor.ones([2], "float16") });
 * console.log(r.x.toArray(), r.y1.dtype, r.y2.dtype); // [3, 4, 3, 4] float32 float16
 * ```
 *
 * @module
 */

import type { AddRmsNormCastPlan, AddRmsNormCastTensors } from "../backends/mod.ts";
import { rowGeometry } from "../backends/mod.ts";
import { formatShape } from "../tensor/layout.ts";
import { Tensor } from "../tensor/tensor.ts";
import { z } from "./zod.ts";
import { checkFusedShapes, fusedDTypeError } from "./fused_norm_checks.ts";
import {
  epsilonSchema,
  fillAll,
  newStatistic,
  placeRowNorm,
  TILING_ERROR,
  tilingFailure,
} from "./row_norm_checks.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnAddRmsNormCast";

/** Preallocated outputs of {@linkcode addRmsNormCast} (CANN y1Out, y2Out, rstdOut, xOut). */
export interface AddRmsNormCastOut {
  /** Receives y1: x1's shape, float32, any strides. */
  y1?: Tensor | null;
  /** Receives y2: x1's shape and dtype, any strides. */
  y2?: Tensor | null;
  /** Receives rstd: float32, x1's dims before gamma's then 1 for each gamma dim. */
  rstd?: Tensor | null;
  /** Receives x = x1 + x2: x1's shape and dtype, any strides. */
  x?: Tensor | null;
}

/** Arguments of {@linkcode addRmsNormCast} (names as in CANN). */
export interface AddRmsNormCastArgs {
  /** First summand, rank 1-8, float16 or bfloat16. */
  x1: check.MaybeTensor;
  /** Second summand (the residual): x1's shape and dtype. */
  x2: check.MaybeTensor;
  /** Scale: x1's trailing dims, x1's dtype. */
  gamma: check.MaybeTensor;
  /** Added to mean(x^2), >= 0 (a float32 attribute in CANN). Default 1e-6. */
  epsilon?: number;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: AddRmsNormCastOut;
}

/** Results of {@linkcode addRmsNormCast}; `using` frees the outputs the call allocated. */
export interface AddRmsNormCastResult extends Disposable {
  /** x * rstd * gamma in float32, x1's shape. */
  y1: Tensor;
  /** y1 in x1's dtype. */
  y2: Tensor;
  /** Per-row 1/sqrt(mean(x^2) + epsilon), float32. */
  rstd: Tensor;
  /** x1 + x2 in x1's dtype. */
  x: Tensor;
}

const scalarsSchema = z.object({ epsilon: epsilonSchema(1e-6) });

/**
 * Runs the fused residual add and RMSNorm with a float32 and a 16-bit output as
 * aclnnAddRmsNormCast does, on the CPU or on the NPU the tensors live on.
 *
 * Validation, in the order of CANN's generated operator (ops-nn `norm/add_rms_norm_cast/op_host/
 * add_rms_norm_cast_def.cpp`, then `add_rms_norm_cast_tiling.cpp:80-184, 258-266`): 161001 when
 * x1, x2 or gamma is missing or an `out` entry is `null`; 161002 when the dtypes are no row of
 * the OpDef (x1 float16 or bfloat16; x2, gamma, y2, x: x1's; y1, rstd: float32). Every output
 * empty: SUCCESS with nothing written (allocated outputs hold NaN). Then 561002 (the tiling): x1
 * or gamma with no dim or more than 8, x2/y1/y2/x/rstd of another rank than x1, gamma of more
 * dims than x1, x2/y1/y2/x not x1's shape, gamma not x1's trailing dims, rstd not x1's leading
 * dims then 1s, a dim of x1 that is 0 (with rstd not empty), epsilon negative. On an NPU the
 * chip's rules apply too: Atlas A2/A3 and Ascend 950 only.
 *
 * The CPU computes as Ascend 950 does (y1 the float32 y, y2 its rounding); the A2/A3 kernels
 * round more on the way (float16: the add, x * rstd and the gamma product in half and y1 =
 * float(y2); bfloat16 y1 = float(y2) unless the rows fit the cores): docs/norm_family_kernels.md
 * section 7, modelled per SoC by the software CANN.
 *
 * @example
 * ```ts
 * import { addRmsNormCast, Tensor } from "@aclnn/norm";
 * const hidden = Tensor.random([2, 3, 16], { seed: 1, dtype: "bfloat16" });
 * const residual = Tensor.random([2, 3, 16], { seed: 2, dtype: "bfloat16" });
 * const gamma = Tensor.ones([16], "bfloat16");
 * const { y1, y2, rstd } = addRmsNormCast({ x1: hidden, x2: residual, gamma });
 * console.log(y1.dtype, y2.dtype, rstd.shape); // float32 bfloat16 [2, 3, 1]
 * ```
 */
export function addRmsNormCast(args: AddRmsNormCastArgs): AddRmsNormCastResult {
  return call(args);
}

type Output = "y1" | "y2" | "rstd" | "x";

/** What validation established; `empty`: every output is empty (no launch). */
type Validated = PlannedCall<Output, AddRmsNormCastPlan, AddRmsNormCastTensors> & {
  readonly empty: boolean;
};

const call = defineOperator<AddRmsNormCastArgs, Output, Validated, AddRmsNormCastResult>({
  op: OP,
  args: ["x1", "x2", "gamma", "epsilon"],
  outputs: {
    y1: (v) => Tensor.emptyLike(v.tensors.x1, "float32", v.device),
    y2: (v) => Tensor.emptyLike(v.tensors.x1, v.tensors.x1.dtype, v.device),
    rstd: (v) => newStatistic(v.tensors.x1, v.plan.geometry, v.device),
    x: (v) => Tensor.emptyLike(v.tensors.x1, v.tensors.x1.dtype, v.device),
  },
  validate,
  run: (v, o) => {
    if (v.empty) {
      for (const name of ["y1", "y2", "rstd", "x"] as const) {
        if (!v.given[name]) fillAll(o[name]!, NaN);
      }
      return;
    }
    v.backend.addRmsNormCast(v.plan, {
      ...v.tensors,
      y1: o.y1!,
      y2: o.y2!,
      rstd: o.rstd!,
      x: o.x!,
    });
  },
});

function validate(args: AddRmsNormCastArgs): Validated {
  const x1 = check.requireTensor(OP, "x1", args.x1);
  const x2 = check.requireTensor(OP, "x2", args.x2);
  const gamma = check.requireTensor(OP, "gamma", args.gamma);
  const y1 = check.requestedOutput(OP, "y1", args.out, true);
  const y2 = check.requestedOutput(OP, "y2", args.out, true);
  const rstd = check.requestedOutput(OP, "rstd", args.out, true);
  const x = check.requestedOutput(OP, "x", args.out, true);
  const { epsilon } = check.parseArguments(OP, scalarsSchema, args);

  // The OpDef's rows (add_rms_norm_cast_def.cpp:22-64): FLOAT16 or BF16 data, FLOAT y1/rstd.
  if (x1.dtype !== "float16" && x1.dtype !== "bfloat16") {
    fusedDTypeError(OP, "x1", x1.dtype, "float16 or bfloat16");
  }
  for (const [name, t] of Object.entries({ x2, gamma, y1, y2, rstd, x })) {
    const want = name === "y1" || name === "rstd" ? "float32" : x1.dtype;
    if (t && t.dtype !== want) fusedDTypeError(OP, name, t.dtype, want);
  }

  const geometry = rowGeometry(x1.shape, Math.max(0, x1.rank - gamma.rank));
  const given = { y1, y2, rstd, x };
  const sizes = { y1: x1.numel, y2: x1.numel, rstd: geometry.rows, x: x1.numel };
  const empty = Object.entries(given).every(([name, t]) =>
    (t ? t.numel : sizes[name as Output]) === 0
  );
  const { device, backend } = placeRowNorm(OP, given, { x1, x2, gamma }, geometry);
  if (!empty) {
    const same = { x2, y1, y2, x };
    checkFusedShapes(OP, { data: ["x1", x1], same, gamma, beta: gamma, mean: undefined, rstd }, 1);
    if (x1.numel === 0) {
      tilingFailure(OP, TILING_ERROR, "x1", `shape ${formatShape(x1.shape)} must have no dim of 0`);
    }
    if (epsilon < 0) {
      tilingFailure(OP, TILING_ERROR, "epsilon", `(${epsilon}) must not be negative`);
    }
  }
  const plan = { geometry, epsilon: Math.fround(epsilon) };
  return { device, backend, plan, tensors: { x1, x2, gamma }, given, empty };
}
