/**
 * aclnnLayerNormBackward: the gradients of Layer Normalization with respect to its input,
 * weight and bias, from the forward's per-row mean and rstd. Per row, over the N normalized
 * elements, with xhat = (x - mean) * rstd and g = gradOut * weight:
 *
 * ```
 * gradInput  = rstd * (g - sum(g) / N - xhat * sum(g * xhat) / N)
 * gradWeight = sum over rows of gradOut * xhat
 * gradBias   = sum over rows of gradOut
 * ```
 *
 * @example
 * ```ts
 * import { layerNorm, layerNormBackward, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([4, 8], { seed: 1 });
 * const weight = Tensor.ones([8]);
 * const f = layerNorm({ input: x, normalizedShape: [8], weight });
 * const g = layerNormBackward({
 *   gradOut: Tensor.ones([4, 8]), input: x, normalizedShape: [8],
 *   mean: f.mean, rstd: f.rstd, weight,
 * });
 * console.log(g.gradBias?.toArray()); // [4, 4, 4, 4, 4, 4, 4, 4]
 * ```
 *
 * @module
 */

import type { LayerNormBackwardPlan, LayerNormBackwardTensors } from "../backends/mod.ts";
import { rowGeometry } from "../backends/mod.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import { formatShape } from "../tensor/layout.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { z } from "./zod.ts";
import {
  checkMaxRank,
  checkNormalizedRank,
  MAX_RANK,
  normalizedAxis,
  normalizedShapeSchema,
  placeRowNorm,
} from "./row_norm_checks.ts";
import { defineOperator, emptyLikeWhen, emptyWhen, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnLayerNormBackward";

/** Preallocated outputs of {@linkcode layerNormBackward}. */
export interface LayerNormBackwardOut {
  /** Receives dL/dx: input's shape, any float dtype, any strides. */
  gradInput?: Tensor | null;
  /**
   * Receives dL/dweight, any float dtype: normalizedShape's shape (one element: any one-element
   * shape; input without rows: any shape of prod(normalizedShape) elements, zero-filled).
   */
  gradWeight?: Tensor | null;
  /** Receives dL/dbias: same rules as `gradWeight`. */
  gradBias?: Tensor | null;
}

/** Arguments of {@linkcode layerNormBackward} (names as in CANN, Optional/Out dropped). */
export interface LayerNormBackwardArgs {
  /** dL/dy: input's shape and dtype. */
  gradOut: check.MaybeTensor;
  /** x of the forward, rank 1-8. */
  input: check.MaybeTensor;
  /** The normalized (trailing) dims, as in the forward. */
  normalizedShape: readonly number[] | null | undefined;
  /** Per-row mean of the forward (one value per row, any float dtype). */
  mean: check.MaybeTensor;
  /** Per-row rstd of the forward (mean's shape, any float dtype). */
  rstd: check.MaybeTensor;
  /** Scale of the forward, shape normalizedShape, float32 or input's dtype; ones when absent. */
  weight?: check.MaybeTensor;
  /** Offset of the forward: validated as CANN does, never read. */
  bias?: check.MaybeTensor;
  /** Which of gradInput, gradWeight, gradBias to compute. Default [true, true, true]. */
  outputMask?: readonly boolean[] | null;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: LayerNormBackwardOut;
}

/**
 * Results; an output is null when its outputMask entry is false. `using` frees the outputs the
 * call allocated.
 */
export interface LayerNormBackwardResult extends Disposable {
  /** dL/dx, input's shape. */
  gradInput: Tensor | null;
  /** dL/dweight, shape normalizedShape (float32 unless given). */
  gradWeight: Tensor | null;
  /** dL/dbias, shape normalizedShape (float32 unless given). */
  gradBias: Tensor | null;
}

const scalarsSchema = z.object({
  normalizedShape: normalizedShapeSchema,
  outputMask: check.outputMask("gradInput, gradWeight, gradBias"),
});

/**
 * Computes the LayerNorm gradients as aclnnLayerNormBackward does, on the CPU or on the NPU
 * the tensors live on.
 *
 * Validation, in CANN's order (ops-nn `norm/layer_norm_grad_v3/op_host/op_api/
 * aclnn_layer_norm_backward.cpp` CheckNotNull, the outputMask checks, CheckDtype, CheckShape):
 * 161001 when gradOut, input, normalizedShape, mean, rstd or outputMask (`null`) is missing, or
 * an output the mask asks for is `null` in `out`; 161002 when outputMask has not 3 entries, a
 * tensor is not float32/float16/bfloat16, gradOut's dtype is not input's, weight is neither
 * float32 nor input's dtype, a tensor has more than 8 dims, normalizedShape has not 1 to 8
 * entries or differs from input's trailing dims (CANN's own loop compares only some of them
 * without a weight; this package compares all, as its documentation requires) or from weight's
 * or bias's shape, gradOut's or gradInput's shape is not input's, mean's shape is not rstd's,
 * mean has not one value per row, or gradWeight/gradBias have not prod(normalizedShape)
 * elements, or (input with rows, more than one normalized element) not normalizedShape's shape:
 * there CANN's ViewCopy of the result fails, and CANN returns success with the output
 * unwritten. On an NPU the chip's rules apply too (no bfloat16 on the Atlas training and
 * inference series; not on Atlas 200I/500 A2).
 *
 * Without `out`, gradInput takes input's dtype, shape and memory layout, and gradWeight/gradBias
 * are float32 of shape normalizedShape (as torch_npu allocates them). No rows give zero
 * gradWeight and gradBias.
 *
 * @example
 * ```ts
 * import { layerNormBackward, Tensor } from "@aclnn/norm";
 * const x = Tensor.fromArray([2, 3, 4, 5], [2, 2]);
 * const r = layerNormBackward({
 *   gradOut: x, input: x, normalizedShape: [2],
 *   mean: Tensor.fromArray([2, 3], [2, 1]), rstd: Tensor.fromArray([4, 5], [2, 1]),
 *   outputMask: [true, true, false],
 * });
 * console.log(r.gradWeight?.toArray(), r.gradBias); // [20, 62] null
 * ```
 */
export function layerNormBackward(args: LayerNormBackwardArgs): LayerNormBackwardResult {
  return call(args);
}

type Output = "gradInput" | "gradWeight" | "gradBias";

/** What validation established for one set of argument values. */
type Validated = PlannedCall<Output, LayerNormBackwardPlan, LayerNormBackwardTensors>;

const call = defineOperator<LayerNormBackwardArgs, Output, Validated>({
  op: OP,
  args: [
    "gradOut",
    "input",
    "normalizedShape",
    "mean",
    "rstd",
    "weight",
    "bias",
    "outputMask",
  ],
  outputs: {
    gradInput: (v) =>
      emptyLikeWhen(v.plan.mask[0], v.tensors.input, v.tensors.input.dtype, v.device),
    gradWeight: (v) => emptyWhen(v.plan.mask[1], v.plan.normalizedShape, "float32", v.device),
    gradBias: (v) => emptyWhen(v.plan.mask[2], v.plan.normalizedShape, "float32", v.device),
  },
  validate,
  run: (v, outputs) => v.backend.layerNormBackward(v.plan, { ...v.tensors, ...outputs }),
});

function validate(args: LayerNormBackwardArgs): Validated {
  const gradOut = check.requireTensor(OP, "gradOut", args.gradOut);
  const input = check.requireTensor(OP, "input", args.input);
  if (args.normalizedShape === undefined || args.normalizedShape === null) {
    check.missing(OP, "normalizedShape");
  }
  const mean = check.requireTensor(OP, "mean", args.mean);
  const rstd = check.requireTensor(OP, "rstd", args.rstd);
  if (args.outputMask === null) check.missing(OP, "outputMask");
  const weight = check.optionalTensor(OP, "weight", args.weight);
  const bias = check.optionalTensor(OP, "bias", args.bias);
  // outputMask's length is 161002 (aclnn_layer_norm_backward.cpp CheckParams), a requested
  // output given as null 161001.
  const { normalizedShape, outputMask } = check.parseArguments(OP, scalarsSchema, args);
  const mask = outputMask as [boolean, boolean, boolean];
  const gradInput = check.requestedOutput(OP, "gradInput", args.out, mask[0]);
  const gradWeight = check.requestedOutput(OP, "gradWeight", args.out, mask[1]);
  const gradBias = check.requestedOutput(OP, "gradBias", args.out, mask[2]);

  // CheckDtype.
  for (const [name, t] of Object.entries({ gradOut, input, mean, rstd })) {
    check.checkDType(OP, name, t, FLOAT_DTYPES);
  }
  check.checkSameDType(OP, "input", input, "gradOut", gradOut);
  if (weight) {
    check.checkDType(OP, "weight", weight, FLOAT_DTYPES);
    if (weight.dtype !== "float32" && weight.dtype !== input.dtype) {
      check.invalid(
        OP,
        "weight",
        `dtype ${weight.dtype} must be float32 or input dtype ${input.dtype}`,
      );
    }
  }
  for (const [name, t] of Object.entries({ bias, gradInput, gradWeight, gradBias })) {
    if (t) check.checkDType(OP, name, t, FLOAT_DTYPES);
  }

  // CheckShape, in its order.
  for (const [name, t] of Object.entries({ gradOut, input, mean, rstd })) {
    checkMaxRank(OP, name, t);
  }
  const len = normalizedShape.length;
  if (len > MAX_RANK) {
    check.invalid(OP, "normalizedShape", `has ${len} dims; it must have at most ${MAX_RANK}`);
  }
  for (const [name, t] of Object.entries({ gradInput, gradWeight, gradBias })) {
    checkMaxRank(OP, name, t);
  }
  if (len < 1) check.invalid(OP, "normalizedShape", "must have at least 1 dim");
  checkNormalizedRank(OP, input, len);
  const axis = normalizedAxis(OP, input, normalizedShape);
  for (const [name, t] of Object.entries({ weight, bias })) {
    if (!t) continue;
    checkMaxRank(OP, name, t);
    if (t.rank !== len) {
      check.invalid(OP, name, `rank ${t.rank} must equal len(normalizedShape) = ${len}`);
    }
    check.checkShape(OP, name, t, normalizedShape, "normalizedShape");
  }
  check.checkShape(OP, "gradOut", gradOut, input.shape, "input");
  check.checkShape(OP, "rstd", rstd, mean.shape, "mean");
  const geometry = rowGeometry(input.shape, axis);
  check.checkNumel(OP, "mean", mean, geometry.rows, "one value per row: rows");
  if (gradInput) check.checkShape(OP, "gradInput", gradInput, input.shape, "input");
  if (gradWeight) {
    check.checkNumel(OP, "gradWeight", gradWeight, geometry.cols, "prod(normalizedShape)");
  }
  if (gradBias) check.checkNumel(OP, "gradBias", gradBias, geometry.cols, "prod(normalizedShape)");
  // CANN copies the normalizedShape-shaped results with l0op::ViewCopy, which refuses another
  // shape unless both hold one element, and ignores the failure (aclnn_layer_norm_backward.cpp
  // 359-362, 413-415): it returns success with the output unwritten. Refused here instead.
  if (geometry.rows > 0 && geometry.cols > 1) {
    for (const [name, t] of Object.entries({ gradWeight, gradBias })) {
      if (t && !check.sameShape(t.shape, normalizedShape)) {
        check.invalid(
          OP,
          name,
          `shape ${formatShape(t.shape)} must have normalizedShape's shape ` +
            `${formatShape(normalizedShape)}: CANN's ViewCopy of the result would fail and ` +
            "leave it unwritten while returning success",
        );
      }
    }
  }

  const written = { gradInput, gradWeight, gradBias };
  const read = { gradOut, input, mean, rstd, weight, bias };
  const { device, backend } = placeRowNorm(OP, written, read, geometry);
  return {
    device,
    backend,
    plan: { geometry, normalizedShape: Object.freeze([...normalizedShape]), mask },
    tensors: { gradOut, input, mean, rstd, weight, bias },
    given: { gradInput, gradWeight, gradBias },
  };
}
