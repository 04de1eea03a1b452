/**
 * aclnnFastLayerNorm: {@linkcode layerNorm}'s Layer Normalization (the "50% faster" interface of
 * CANN's documentation, whose accumulation order differs), with CANN's own check order. With
 * rows = the product of the leading dims and N = prod(normalizedShape), per row:
 *
 * ```
 * mean = sum(x) / N
 * rstd = 1 / sqrt(sum((x - mean)^2) / N + eps)
 * output = (x - mean) * rstd * weight + bias
 * ```
 *
 * Source: hicann/ops-nn e5c3fa9 `norm/layer_norm_v4/op_host/op_api/aclnn_fast_layer_norm.cpp`
 * (cited as `:<line>`) and `norm/layer_norm_v4/docs/aclnnFastLayerNorm.md`. CANN always runs the
 * l0 LayerNormV4 (float32 mean and rstd), then casts them to the outputs' dtypes. Products:
 * Atlas A3 and Atlas A2 only (the document; `src/backends/ascend/soc.ts`).
 *
 * @example
 * ```ts
 * import { fastLayerNorm, Tensor } from "@aclnn/norm";
 * const x = Tensor.fromArray([1, 2, 3, 4, 2, 2, 2, 2], [2, 4]);
 * const { mean, rstd } = fastLayerNorm({ input: x, normalizedShape: [4] });
 * console.log(mean.toArray(), rstd.shape); // [2.5, 2] [2, 1]
 * ```
 *
 * @module
 */

import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import type { Tensor } from "../tensor/tensor.ts";
import {
  checkParamDType,
  copiedStatisticsShape,
  LAYER_NORM_ARGS,
  type LayerNormArgs,
  type LayerNormOut,
  type LayerNormOutput,
  layerNormOutputs,
  type LayerNormResult,
  type LayerNormValidated,
  placeLayerNorm,
  readLayerNormArgs,
} from "./layer_norm.ts";
import {
  checkMaxRank,
  checkViewCopy,
  fillAll,
  INNER_NULLPTR,
  MAX_RANK,
  tilingFailure,
} from "./row_norm_checks.ts";
import { defineOperator } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnFastLayerNorm";

/**
 * Preallocated outputs of {@linkcode fastLayerNorm} (CANN out, meanOutOptional,
 * rstdOutOptional): `output` of input's dtype and shape; mean and rstd of any float dtype (CANN
 * casts its float32 statistics to them), `[A1..Ai, 1..1]` (one row: any one-element shape).
 */
export type FastLayerNormOut = LayerNormOut;

/** Arguments of {@linkcode fastLayerNorm}: {@linkcode layerNorm}'s. */
export type FastLayerNormArgs = LayerNormArgs;

/** Results of {@linkcode fastLayerNorm}; `using` frees the outputs the call allocated. */
export type FastLayerNormResult = LayerNormResult;

/**
 * Runs Layer Normalization as aclnnFastLayerNorm does, on the CPU or on the NPU the tensors
 * live on.
 *
 * Validation in aclnnFastLayerNormGetWorkspaceSize's order: 161001 when input or
 * normalizedShape is missing or `out.output` is `null` (CheckFastNotNull, `:112-118`); then
 * CheckParams, all 161002: input not float32/float16/bfloat16 (on every SoC, `:50-53`); weight
 * not in that list or neither float32 nor input's dtype, weight's dtype not bias's, bias likewise
 * (`:65-86`); output, rstd, mean not in the list (`:87-99`); normalizedShape empty, a tensor of
 * more than 8 dims, normalizedShape of more than 8 entries, weight's rank not
 * len(normalizedShape), input of fewer dims, bias's rank, a normalized dim not input's (or
 * weight's, bias's), output's shape not input's (`:184-221`). eps is any finite number.
 *
 * Then rows of no element (N = 0) succeed with mean filled with 0 and rstd with NaN, whatever
 * their shapes (also with no rows); no rows succeed with nothing written (`:355-373`). Otherwise
 * CANN copies its results with l0op::ViewCopy (`:271-317`): 561103 when output's dtype is not
 * input's (y is copied uncast), or rstd, then mean, is not `[A1..Ai, 1..1]` (with one row, one
 * element of any shape).
 *
 * Without `out`, output takes input's dtype, shape and memory layout, and mean/rstd are float32
 * `[A1..Ai, 1..1]` (`[0]` without rows), as torch_npu allocates them.
 *
 * @example
 * ```ts
 * import { fastLayerNorm, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([2, 3, 8], { seed: 1, dtype: "float16" });
 * const mean = Tensor.empty([2, 3, 1], "float16"); // the document's dtype: input's
 * const r = fastLayerNorm({ input: x, normalizedShape: [8], out: { mean } });
 * console.log(r.output.dtype, r.mean.dtype, r.rstd.dtype); // float16 float16 float32
 * ```
 */
export function fastLayerNorm(args: FastLayerNormArgs): FastLayerNormResult {
  return call(args);
}

const call = defineOperator<
  FastLayerNormArgs,
  LayerNormOutput,
  LayerNormValidated,
  FastLayerNormResult
>({
  op: OP,
  args: [...LAYER_NORM_ARGS],
  outputs: layerNormOutputs,
  validate,
  run: (v, o) => {
    const { rows, cols } = v.plan.geometry;
    if (cols === 0) {
      // N == 0 comes first (:355-368): meanOut filled with 0, rstdOut with NaN
      // (ProcessEmptyTensorWithValue), whatever their shapes and whether there are rows.
      fillAll(o.mean!, 0);
      fillAll(o.rstd!, NaN);
      return;
    }
    if (rows === 0) return; // M == 0 (:369-373): nothing written.
    v.backend.fastLayerNorm(v.plan, {
      ...v.tensors,
      output: o.output!,
      mean: o.mean!,
      rstd: o.rstd!,
    });
  },
});

function validate(args: FastLayerNormArgs): LayerNormValidated {
  // CheckFastNotNull.
  const a = readLayerNormArgs(OP, args);
  const { input, output, mean, rstd, weight, bias, normalizedShape } = a;

  // CheckInputDtype (:65-86): weight's rules, weight == bias, then bias's rules.
  check.checkDType(OP, "input", input, FLOAT_DTYPES);
  if (weight) checkParamDType(OP, "weight", weight, input);
  if (weight && bias && weight.dtype !== bias.dtype) {
    check.invalid(OP, "bias", `dtype ${bias.dtype} must equal weight dtype ${weight.dtype}`);
  }
  if (bias) checkParamDType(OP, "bias", bias, input);
  // CheckFastOutputDtype (:87-99): list membership only.
  for (const [name, t] of Object.entries({ output, rstd, mean })) {
    if (t) check.checkDType(OP, name, t, FLOAT_DTYPES);
  }

  // CheckShape (:184-221), in its order.
  const len = normalizedShape.length;
  if (len < 1) check.invalid(OP, "normalizedShape", "is empty; it must have 1 to 8 entries");
  for (const [name, t] of Object.entries({ output, input, weight, rstd, mean, bias })) {
    checkMaxRank(OP, name, t);
  }
  if (len > MAX_RANK) {
    check.invalid(OP, "normalizedShape", `has ${len} dims; it must have 1 to ${MAX_RANK}`);
  }
  const rankOf = (name: string, t: Tensor | undefined) => {
    if (t && t.rank !== len) {
      check.invalid(OP, name, `rank ${t.rank} must equal len(normalizedShape) = ${len}`);
    }
  };
  rankOf("weight", weight);
  if (input.rank < len) {
    check.invalid(OP, "input", `rank ${input.rank} must be at least len(normalizedShape) = ${len}`);
  }
  rankOf("bias", bias);
  // CheckNormalizeShape (:141-182): per index, input's dim, then weight's, then bias's.
  const axis = input.rank - len;
  normalizedShape.forEach((d, i) => {
    if (d !== input.shape[axis + i]) {
      check.invalid(
        OP,
        "normalizedShape",
        `[${normalizedShape}] must equal input's last ${len} dims [${input.shape.slice(axis)}]`,
      );
    }
    for (const [name, t] of Object.entries({ weight, bias })) {
      if (t && t.shape[i] !== d) {
        check.invalid(
          OP,
          name,
          `shape [${t.shape}] must equal normalizedShape [${normalizedShape}]`,
        );
      }
    }
  });
  if (output) check.checkShape(OP, "output", output, input.shape, "input");

  const v = placeLayerNorm(OP, a, axis);
  // doFastLayerNorm (:271-317), reached with rows of elements only: y (input's dtype) is
  // ViewCopy'd into out without a cast, then rstd and mean cast and ViewCopy'd.
  const want = copiedStatisticsShape(v);
  if (want) {
    if (output && output.dtype !== input.dtype) {
      tilingFailure(
        OP,
        INNER_NULLPTR,
        "output",
        `dtype ${output.dtype} must be input's ${input.dtype}: l0op::ViewCopy copies LayerNormV4's ` +
          "y of input's dtype into it without a cast",
      );
    }
    if (rstd) checkViewCopy(OP, "rstd", rstd, want);
    if (mean) checkViewCopy(OP, "mean", mean, want);
  }
  return v;
}
