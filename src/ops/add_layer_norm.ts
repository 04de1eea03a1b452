/**
 * aclnnAddLayerNorm: the residual add of a transformer block fused with LayerNorm. Per row of
 * N = numel(gamma) elements:
 *
 * ```
 * x    = x1 + x2 (+ bias)            (in float32, not rounded before the statistics)
 * mean = sum(x) / N
 * rstd = 1 / sqrt(sum((x - mean)^2) / N + epsilon)
 * y    = (x - mean) * rstd * gamma + beta
 * ```
 *
 * `x` (rounded once to y's dtype) is returned when `additionalOutput` is true.
 *
 * @example
 * ```ts
 * import { addLayerNorm, Tensor } from "@aclnn/norm";
 * const x1 = Tensor.fromArray([1, 2, 3, 4], [1, 4]);
 * const x2 = Tensor.fromArray([1, 0, 1, 0], [1, 4]);
 * const r = addLayerNorm({ x1, x2, gamma: Tensor.ones([4]), beta: Tensor.zeros([4]), additionalOutput: true });
 * console.log(r.x!.toArray(), r.mean.toArray()); // [2, 2, 4, 4] [3]
 * ```
 *
 * @module
 */

import type { AddLayerNormPlan, AddLayerNormTensors } from "../backends/mod.ts";
import { rowGeometry } from "../backends/mod.ts";
import type { DType } from "../tensor/dtype.ts";
import { Tensor } from "../tensor/tensor.ts";
import { z } from "./zod.ts";
import { checkAddBias, checkFusedShapes, fusedDTypeError } from "./fused_norm_checks.ts";
import { epsilonSchema, fillAll, newStatistic, placeRowNorm } from "./row_norm_checks.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnAddLayerNorm";

/** Preallocated outputs of {@linkcode addLayerNorm} (CANN yOut, meanOut, rstdOut, xOut). */
export interface AddLayerNormOut {
  /** Receives y: x1's shape, float32 when x1 or x2 is float32 else x1's dtype; any strides. */
  y?: Tensor | null;
  /** Receives the per-row mean: float32, x1's dims before gamma's then 1 for each gamma dim. */
  mean?: Tensor | null;
  /** Receives the per-row rstd: mean's shape and dtype. */
  rstd?: Tensor | null;
  /** Receives x = x1 + x2 (+ bias): y's shape and dtype (read only with additionalOutput). */
  x?: Tensor | null;
}

/** Arguments of {@linkcode addLayerNorm} (names as in CANN, Optional/Out dropped). */
export interface AddLayerNormArgs {
  /** First summand, rank 1-8, float32/float16/bfloat16. */
  x1: check.MaybeTensor;
  /** Second summand (the residual): x1's shape; x1's dtype, or float32 with 16-bit x1 (or the reverse). */
  x2: check.MaybeTensor;
  /** Scale: x1's trailing dims; float32, or x1's dtype when x1 and x2 are the same 16-bit dtype. */
  gamma: check.MaybeTensor;
  /** Offset: gamma's shape and dtype. */
  beta: check.MaybeTensor;
  /** Third summand, y's dtype: gamma's elements (added to every row) or x1's shape. */
  bias?: check.MaybeTensor;
  /** Added to the variance (a float32 attribute in CANN). Default 1e-5. */
  epsilon?: number;
  /** Whether x = x1 + x2 (+ bias) is returned. Default false. */
  additionalOutput?: boolean;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: AddLayerNormOut;
}

/** Results of {@linkcode addLayerNorm}; `using` frees the outputs the call allocated. */
export interface AddLayerNormResult extends Disposable {
  /** (x - mean) * rstd * gamma + beta. */
  y: Tensor;
  /** Per-row mean of x, float32. */
  mean: Tensor;
  /** Per-row 1/sqrt(biased var(x) + epsilon), float32. */
  rstd: Tensor;
  /** x1 + x2 (+ bias) in y's dtype; null unless additionalOutput. */
  x: Tensor | null;
}

const scalarsSchema = z.object({
  epsilon: epsilonSchema(1e-5),
  additionalOutput: check.flag.default(false),
});

/**
 * Runs the fused residual add and LayerNorm as aclnnAddLayerNorm does, on the CPU or on the NPU
 * the tensors live on.
 *
 * Validation, in the order of CANN's generated operator (ops-nn `norm/add_layer_norm/op_host/
 * add_layer_norm_def.cpp`, then `add_layer_norm_tiling.cpp` / `_arch35.cpp`): 161001 when x1,
 * x2, gamma or beta is missing or an `out` entry is `null`; 161002 when the dtypes are no row of
 * the OpDef (x1, x2: the same dtype, or float32 with a 16-bit other; gamma = beta: float32, or
 * x1's when x1 = x2 is 16-bit; bias, y, x: float32 when x1 or x2 is, else x1's; mean, rstd:
 * float32). Every output empty: SUCCESS with nothing written (allocated outputs hold NaN). Then
 * 561002 (the tiling): x1 or gamma with no dim or more than 8, x2/y/x/mean/rstd of another rank
 * than x1, gamma of more dims than x1, x2/y/x not x1's shape, beta not gamma's, gamma not x1's
 * trailing dims, mean/rstd not x1's leading dims then 1s, a bias that is empty, whose trailing
 * dims are not gamma's, or that holds neither gamma's nor x1's elements (Ascend 950's rule, the
 * strictest). On an NPU the chip's rules apply too: not on Atlas training or 200I/500 A2; on the
 * Atlas inference series float32 or float16 only, all tensors of one dtype, and mean/rstd are
 * not written by CANN (the backend fills them with NaN); rows of no element (cols = 0) are 561002
 * except on Ascend 950, which fills mean and rstd with NaN, as the CPU does.
 *
 * @example
 * ```ts
 * import { addLayerNorm, Tensor } from "@aclnn/norm";
 * const hidden = Tensor.random([2, 3, 16], { seed: 1, dtype: "bfloat16" });
 * const residual = Tensor.random([2, 3, 16], { seed: 2, dtype: "bfloat16" });
 * const gamma = Tensor.ones([16], "float32");
 * const beta = Tensor.zeros([16], "float32");
 * const { y, mean, x } = addLayerNorm({ x1: hidden, x2: residual, gamma, beta, additionalOutput: true });
 * console.log(y.dtype, mean.shape, x!.dtype); // bfloat16 [2, 3, 1] bfloat16
 * ```
 */
export function addLayerNorm(args: AddLayerNormArgs): AddLayerNormResult {
  return call(args) as AddLayerNormResult;
}

type Output = "y" | "mean" | "rstd" | "x";

/** What validation established; `empty`: every output is empty (no launch). */
type Validated = PlannedCall<Output, AddLayerNormPlan, AddLayerNormTensors> & {
  readonly empty: boolean;
};

const call = defineOperator<AddLayerNormArgs, Output, Validated>({
  op: OP,
  args: ["x1", "x2", "gamma", "beta", "bias", "epsilon", "additionalOutput"],
  outputs: {
    y: (v) => Tensor.emptyLike(v.tensors.x1, v.plan.dtype, v.device),
    mean: (v) => newStatistic(v.tensors.x1, v.plan.geometry, v.device),
    rstd: (v) => newStatistic(v.tensors.x1, v.plan.geometry, v.device),
    x: (v) =>
      v.plan.additionalOutput ? Tensor.emptyLike(v.tensors.x1, v.plan.dtype, v.device) : undefined,
  },
  validate,
  run: (v, o) => {
    if (v.empty) {
      for (const name of ["y", "mean", "rstd", "x"] as const) {
        if (o[name] && !v.given[name]) fillAll(o[name]!, NaN);
      }
      return;
    }
    const outputs = { y: o.y!, mean: o.mean!, rstd: o.rstd!, x: o.x };
    v.backend.addLayerNorm(v.plan, { ...v.tensors, ...outputs });
  },
});

/** The OpDef's y dtype for x1, x2 (float32 when either is), or undefined when no row pairs them. */
function resultDType(x1: DType, x2: DType): DType | undefined {
  if (x1 === x2) return x1;
  return x1 === "float32" || x2 === "float32" ? "float32" : undefined;
}

function validate(args: AddLayerNormArgs): Validated {
  const x1 = check.requireTensor(OP, "x1", args.x1);
  const x2 = check.requireTensor(OP, "x2", args.x2);
  const gamma = check.requireTensor(OP, "gamma", args.gamma);
  const beta = check.requireTensor(OP, "beta", args.beta);
  const bias = check.optionalTensor(OP, "bias", args.bias);
  const { epsilon, additionalOutput } = check.parseArguments(OP, scalarsSchema, args);
  const y = check.requestedOutput(OP, "y", args.out, true);
  const mean = check.requestedOutput(OP, "mean", args.out, true);
  const rstd = check.requestedOutput(OP, "rstd", args.out, true);
  const x = check.requestedOutput(OP, "x", args.out, additionalOutput);

  // The OpDef's rows (add_layer_norm_def.cpp:32-94, 155-216; docs/norm_family_kernels.md 1).
  check.checkDType(OP, "x1", x1, ["float32", "float16", "bfloat16"]);
  check.checkDType(OP, "x2", x2, ["float32", "float16", "bfloat16"]);
  const dtype = resultDType(x1.dtype, x2.dtype);
  if (!dtype) fusedDTypeError(OP, "x2", x2.dtype, `x1 ${x1.dtype} (the same, or float32)`);
  const mixed = x1.dtype !== x2.dtype;
  const gammaTypes: DType[] = mixed || dtype === "float32" ? ["float32"] : ["float32", dtype];
  if (!gammaTypes.includes(gamma.dtype)) {
    fusedDTypeError(OP, "gamma", gamma.dtype, gammaTypes.join(" or "));
  }
  if (beta.dtype !== gamma.dtype) fusedDTypeError(OP, "beta", beta.dtype, `gamma's ${gamma.dtype}`);
  for (const [name, t] of Object.entries({ bias, y, x })) {
    if (t && t.dtype !== dtype) fusedDTypeError(OP, name, t.dtype, `${dtype} (y's dtype)`);
  }
  for (const [name, t] of Object.entries({ mean, rstd })) {
    if (t && t.dtype !== "float32") fusedDTypeError(OP, name, t.dtype, "float32");
  }

  const geometry = rowGeometry(x1.shape, Math.max(0, x1.rank - gamma.rank));
  const given = { y, mean, rstd, x };
  const sizes = { y: x1.numel, mean: geometry.rows, rstd: geometry.rows, x: x1.numel };
  const empty = Object.entries(given).every(([name, t]) =>
    (t ? t.numel : name === "x" && !additionalOutput ? 0 : sizes[name as Output]) === 0
  );
  const read = { x1, x2, gamma, beta, bias };
  const { device, backend } = placeRowNorm(OP, given, read, geometry);
  let biasRows = false;
  if (!empty) {
    checkFusedShapes(OP, { data: ["x1", x1], same: { x2, y, x }, gamma, beta, mean, rstd }, 1);
    if (bias) biasRows = checkAddBias(OP, bias, x1, gamma);
  }
  const plan = { geometry, epsilon: Math.fround(epsilon), additionalOutput, dtype, biasRows };
  return { device, backend, plan, tensors: { x1, x2, gamma, beta, bias }, given, empty };
}
