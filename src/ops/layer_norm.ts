/**
 * aclnnLayerNorm: Layer Normalization over the trailing `normalizedShape` dims of the input.
 * With rows = the product of the leading dims and N = prod(normalizedShape), per row:
 *
 * ```
 * mean = sum(x) / N
 * rstd = 1 / sqrt(sum((x - mean)^2) / N + eps)       (biased variance, as PyTorch)
 * output = (x - mean) * rstd * weight + bias
 * ```
 *
 * mean and rstd are the float32 statistics torch_npu allocates (`[A1..Ai, 1..1]`), which
 * {@linkcode layerNormBackward} takes.
 *
 * @example
 * ```ts
 * import { layerNorm, Tensor } from "@aclnn/norm";
 * const x = Tensor.fromArray([1, 2, 3, 4, 2, 2, 2, 2], [2, 4]);
 * const { output, mean, rstd } = layerNorm({ input: x, normalizedShape: [4] });
 * console.log(mean.toArray(), mean.shape); // [2.5, 2] [2, 1]
 * console.log(output.toArray().slice(0, 2)); // [-1.34..., -0.44...]
 * ```
 *
 * @module
 */

import type { LayerNormPlan, LayerNormTensors } from "../backends/mod.ts";
import { rowGeometry } from "../backends/mod.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import { Tensor } from "../tensor/tensor.ts";
import { z } from "./zod.ts";
import {
  checkMaxRank,
  checkNormalizedRank,
  checkViewCopy,
  epsilonSchema,
  fillAll,
  MAX_RANK,
  newStatistic,
  normalizedAxis,
  normalizedShapeSchema,
  placeRowNorm,
  statisticsShape,
} from "./row_norm_checks.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnLayerNorm";

/** Preallocated outputs of {@linkcode layerNorm} (CANN out, meanOutOptional, rstdOutOptional). */
export interface LayerNormOut {
  /** Receives y: input's shape, any float dtype (the result is cast to it), any strides. */
  output?: Tensor | null;
  /**
   * Receives the per-row mean, any float dtype: `[A1..Ai, 1..1]` (one row: any one-element
   * shape); any shape when input has no rows (nothing is written) or rows of no element (every
   * element is 0). On Ascend 950 (DAV_3510) a non-empty one must be `[A1..Ai, 1..1]`.
   */
  mean?: Tensor | null;
  /** Receives the per-row rstd: same rules as `mean`. */
  rstd?: Tensor | null;
}

/** Arguments of {@linkcode layerNorm} (names as in CANN, Optional/Out dropped). */
export interface LayerNormArgs {
  /** x, rank 1-8, float32/float16/bfloat16. */
  input: check.MaybeTensor;
  /** The normalized (trailing) dims of input: 1 to 8 of them, equal to input's last dims. */
  normalizedShape: readonly number[] | null | undefined;
  /** Scale, shape normalizedShape, float32 or input's dtype; ones when absent. */
  weight?: check.MaybeTensor;
  /** Offset, shape normalizedShape, weight's dtype rule; zeros when absent. */
  bias?: check.MaybeTensor;
  /** Added to the variance. Default 1e-5. */
  eps?: number;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: LayerNormOut;
}

/** Results of {@linkcode layerNorm}; `using` frees the outputs the call allocated. */
export interface LayerNormResult extends Disposable {
  /** y, input's shape. */
  output: Tensor;
  /** Per-row mean (float32 `[A1..Ai, 1..1]` unless given in `out`). */
  mean: Tensor;
  /** Per-row 1/sqrt(biased var + eps) (same shape and dtype as mean). */
  rstd: Tensor;
}

/**
 * Runs Layer Normalization as aclnnLayerNorm does, on the CPU or on the NPU the tensors live on.
 *
 * Validation, in CANN's order (ops-nn `norm/layer_norm_v4/op_host/op_api/aclnn_layer_norm.cpp`
 * CheckNotNull, CheckInputDtype/CheckOutputDtype, CheckShape, CheckMeanRstdOutputShape):
 * 161001 when input or normalizedShape is missing or `out.output` is `null`; 161002 when a
 * tensor is not float32/float16/bfloat16, weight or bias is neither float32 nor input's dtype
 * or they differ, a tensor has more than 8 dims, normalizedShape has not 1 to 8 entries or
 * differs from input's trailing dims (or weight's/bias's shape), or output's shape is not
 * input's. eps is any finite number (CANN checks none). On an NPU the chip's rules apply too
 * (bfloat16 on Atlas A2/A3/950 only; not on the Atlas inference series; on Ascend 950 a
 * non-empty mean/rstd must be `[A1..Ai, 1..1]` and the two equal, 161002). Then 561103 when a
 * given mean or rstd is not `[A1..Ai, 1..1]` (with one row, one element of any shape) and
 * input has rows of elements: CANN copies its results with l0op::ViewCopy, which refuses
 * another shape (the documentation lists no code for it).
 *
 * Without `out`, output takes input's dtype, shape and memory layout, and mean/rstd are float32
 * `[A1..Ai, 1..1]` (`[0]` without rows), as torch_npu allocates them. Rows of no element give
 * mean 0 and rstd NaN, as CANN writes them.
 *
 * @example
 * ```ts
 * import { layerNorm, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([2, 3, 8], { seed: 1, dtype: "bfloat16" });
 * const weight = Tensor.ones([8], "float32"); // float32 parameters with bfloat16 data
 * const r = layerNorm({ input: x, normalizedShape: [8], weight, eps: 1e-5 });
 * console.log(r.output.dtype, r.mean.dtype, r.mean.shape); // bfloat16 float32 [2, 3, 1]
 * ```
 */
export function layerNorm(args: LayerNormArgs): LayerNormResult {
  return call(args);
}

/** The outputs of aclnnLayerNorm and aclnnFastLayerNorm. */
export type LayerNormOutput = "output" | "mean" | "rstd";

/** What validation established for one set of argument values (shared with the fast variant). */
export type LayerNormValidated = PlannedCall<LayerNormOutput, LayerNormPlan, LayerNormTensors>;
type Validated = LayerNormValidated;

/** The arguments aclnnLayerNorm's and aclnnFastLayerNorm's outcome depends on, in CANN's order. */
export const LAYER_NORM_ARGS = ["input", "normalizedShape", "weight", "bias", "eps"] as const;

/**
 * How each output is allocated without `out`: output in input's dtype, shape and memory layout,
 * mean and rstd float32 `[A1..Ai, 1..1]` (`[0]` without rows), as torch_npu allocates them.
 */
export const layerNormOutputs: {
  readonly [K in LayerNormOutput]: (v: LayerNormValidated) => Tensor;
} = {
  output: (v) => Tensor.emptyLike(v.tensors.input, v.tensors.input.dtype, v.device),
  mean: (v) => newStatistic(v.tensors.input, v.plan.geometry, v.device),
  rstd: (v) => newStatistic(v.tensors.input, v.plan.geometry, v.device),
};

const scalarsSchema = z.object({
  normalizedShape: normalizedShapeSchema,
  eps: epsilonSchema(1e-5),
});

/** A LayerNorm call's arguments once read: its tensors (absent ones undefined) and scalars. */
export interface LayerNormInputs {
  /** x. */
  readonly input: Tensor;
  /** The given `out.output`, `out.mean`, `out.rstd`. */
  readonly output?: Tensor;
  /** See `output`. */
  readonly mean?: Tensor;
  /** See `output`. */
  readonly rstd?: Tensor;
  /** Scale. */
  readonly weight?: Tensor;
  /** Offset. */
  readonly bias?: Tensor;
  /** The normalized dims, integers (their number is unchecked). */
  readonly normalizedShape: readonly number[];
  /** A finite number, 1e-5 by default. */
  readonly eps: number;
}

/**
 * Reads a LayerNorm call's arguments, first as CANN's CheckNotNull (aclnn_layer_norm.cpp) and
 * CheckFastNotNull (aclnn_fast_layer_norm.cpp:112-118) do: 161001 when input or normalizedShape
 * is missing or `out.output` is `null`. meanOutOptional / rstdOutOptional may be null pointers
 * in CANN (allocated here); weight and bias are optional; the scalars are parsed (161002).
 */
export function readLayerNormArgs(op: string, args: LayerNormArgs): LayerNormInputs {
  const input = check.requireTensor(op, "input", args.input);
  if (args.normalizedShape === undefined || args.normalizedShape === null) {
    check.missing(op, "normalizedShape");
  }
  const output = check.requestedOutput(op, "output", args.out, true);
  const mean = check.optionalTensor(op, "mean", args.out?.mean);
  const rstd = check.optionalTensor(op, "rstd", args.out?.rstd);
  const weight = check.optionalTensor(op, "weight", args.weight);
  const bias = check.optionalTensor(op, "bias", args.bias);
  const { normalizedShape, eps } = check.parseArguments(op, scalarsSchema, args);
  return { input, output, mean, rstd, weight, bias, normalizedShape, eps };
}

/**
 * CheckInputDtype's rule for weight and for bias (both operators): float32, float16 or
 * bfloat16, and float32 or input's dtype (161002).
 */
export function checkParamDType(op: string, name: string, t: Tensor, input: Tensor): void {
  check.checkDType(op, name, t, FLOAT_DTYPES);
  if (t.dtype !== "float32" && t.dtype !== input.dtype) {
    check.invalid(op, name, `dtype ${t.dtype} must be float32 or input dtype ${input.dtype}`);
  }
}

/**
 * The end of a LayerNorm validation once CANN's checks passed, normalizing from `axis` on: the
 * device step (placeRowNorm: the outputs written, input, weight and bias read) and the call.
 */
export function placeLayerNorm(op: string, a: LayerNormInputs, axis: number): LayerNormValidated {
  const { input, weight, bias, output, mean, rstd } = a;
  const geometry = rowGeometry(input.shape, axis);
  const read = { input, weight, bias };
  const { device, backend } = placeRowNorm(op, { output, mean, rstd }, read, geometry);
  return {
    device,
    backend,
    plan: { geometry, normalizedShape: Object.freeze([...a.normalizedShape]), eps: a.eps },
    tensors: read,
    given: { output, mean, rstd },
  };
}

/**
 * The shape of the l0 operator's mean and rstd (`[A1..Ai, 1..1]`), which CANN copies into given
 * outputs with l0op::ViewCopy; undefined when CANN returns before copying (no rows, or rows of
 * no element).
 */
export function copiedStatisticsShape(v: LayerNormValidated): number[] | undefined {
  const { axis, rows, cols } = v.plan.geometry;
  if (rows === 0 || cols === 0) return undefined;
  return statisticsShape(v.tensors.input.shape, axis, rows);
}

const call = defineOperator<LayerNormArgs, LayerNormOutput, Validated, LayerNormResult>({
  op: OP,
  args: [...LAYER_NORM_ARGS],
  outputs: layerNormOutputs,
  validate,
  run: (v, o) => {
    const { rows, cols } = v.plan.geometry;
    if (rows > 0 && cols === 0) {
      // Rows of no element: CANN fills every element of meanOut with 0 and of rstdOut with NaN
      // (ProcessEmptyTensorWithValue, aclnn_layer_norm.cpp:373-386), whatever their shapes.
      fillAll(o.mean!, 0);
      fillAll(o.rstd!, NaN);
      return;
    }
    v.backend.layerNorm(v.plan, { ...v.tensors, output: o.output!, mean: o.mean!, rstd: o.rstd! });
  },
});

function validate(args: LayerNormArgs): Validated {
  const a = readLayerNormArgs(OP, args);
  const { input, output, mean, rstd, weight, bias, normalizedShape } = a;

  // CheckInputDtype, CheckOutputDtype.
  check.checkDType(OP, "input", input, FLOAT_DTYPES);
  for (const [name, t] of Object.entries({ weight, bias })) {
    if (t) checkParamDType(OP, name, t, input);
  }
  if (weight && bias && weight.dtype !== bias.dtype) {
    check.invalid(OP, "bias", `dtype ${bias.dtype} must equal weight dtype ${weight.dtype}`);
  }
  for (const [name, t] of Object.entries({ output, mean, rstd })) {
    if (t) check.checkDType(OP, name, t, FLOAT_DTYPES);
  }

  // CheckShape, in its order.
  for (const [name, t] of Object.entries({ input, output, weight, bias, mean, rstd })) {
    checkMaxRank(OP, name, t);
  }
  const len = normalizedShape.length;
  if (len > MAX_RANK || len < 1) {
    check.invalid(OP, "normalizedShape", `has ${len} dims; it must have 1 to ${MAX_RANK}`);
  }
  checkNormalizedRank(OP, input, len);
  for (const [name, t] of Object.entries({ weight, bias })) {
    if (t && t.rank !== len) {
      check.invalid(OP, name, `rank ${t.rank} must equal len(normalizedShape) = ${len}`);
    }
  }
  const axis = normalizedAxis(OP, input, normalizedShape);
  if (weight) check.checkShape(OP, "weight", weight, normalizedShape, "normalizedShape");
  if (bias) check.checkShape(OP, "bias", bias, normalizedShape, "normalizedShape");
  if (output) check.checkShape(OP, "output", output, input.shape, "input");

  const v = placeLayerNorm(OP, a, axis);
  // The l0 operator's mean and rstd are [A1..Ai, 1..1], copied to the outputs with
  // l0op::ViewCopy (aclnn_layer_norm.cpp:461-477; layer_norm_v3.cpp:50-53); without rows, or
  // with rows of no element, CANN returns before (:367-386).
  const want = copiedStatisticsShape(v);
  if (want) {
    if (mean) checkViewCopy(OP, "mean", mean, want);
    if (rstd) checkViewCopy(OP, "rstd", rstd, want);
  }
  return v;
}
