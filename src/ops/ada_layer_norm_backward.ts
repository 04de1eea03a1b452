/**
 * aclnnAdaLayerNormBackward: the gradients of aclnnAdaLayerNorm from the forward's per-row mean
 * and rstd. Per row of H elements of input [B..., S, H], with the row's batch index b, z = (x -
 * mean) * rstd, sc = 1 + scale[b] and w, bias (ones, zeros when absent):
 *
 * ```
 * g          = gradOut * w * sc
 * gradInput  = (g - mean_H(g) - z * mean_H(g * z)) * rstd
 * gradScale  = sum over S of gradOut * (z * w + bias)      (per batch)
 * gradShift  = sum over S of gradOut                       (per batch)
 * gradWeight = sum over rows of gradOut * sc * z
 * gradBias   = sum over rows of gradOut * sc
 * ```
 *
 * (the issue-39 reference notes, norm_family.md, aclnnAdaLayerNormBackward; the kernel's own
 * order is not re-derived: docs/norm_family_kernels.md section 13.)
 *
 * @example
 * ```ts
 * import { adaLayerNormBackward, adaLayerNormV2, Tensor } from "@aclnn/norm";
 * const input = Tensor.fromArray([1, 3, 2, 6], [1, 2, 2]);
 * const scale = Tensor.zeros([1, 2]);
 * const shift = Tensor.zeros([1, 2]);
 * const f = adaLayerNormV2({ x: input, scale, shift, epsilon: 0 });
 * const g = adaLayerNormBackward({
 *   gradOut: Tensor.ones([1, 2, 2]), input, normalizedShape: [2],
 *   rstd: f.rstd!, mean: f.mean!, scale, shift,
 * });
 * console.log(g.gradShift!.toArray()); // [2, 2]
 * ```
 *
 * @module
 */

import type { AdaLayerNormBackwardPlan, AdaLayerNormBackwardTensors } from "../backends/mod.ts";
import { rowGeometry } from "../backends/mod.ts";
import type { DType } from "../tensor/dtype.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import { formatShape } from "../tensor/layout.ts";
import { Tensor } from "../tensor/tensor.ts";
import { checkMaxRank, normalizedShapeSchema, placeRowNorm } from "./row_norm_checks.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";
import { z } from "./zod.ts";

const OP = "aclnnAdaLayerNormBackward";

/**
 * Preallocated outputs of {@linkcode adaLayerNormBackward} (CANN gradInputOut ... gradBiasOut).
 * An entry `null`: that gradient is not computed (CANN takes a null output; no outputMask).
 */
export interface AdaLayerNormBackwardOut {
  /** Receives dL/dinput: input's shape and dtype, any strides. */
  gradInput?: Tensor | null;
  /** Receives dL/dscale: scale's shape and dtype. */
  gradScale?: Tensor | null;
  /** Receives dL/dshift: shift's shape and dtype. */
  gradShift?: Tensor | null;
  /** Receives dL/dweight: H elements; weight's (else bias's) dtype, else float32 or input's. */
  gradWeight?: Tensor | null;
  /** Receives dL/dbias: H elements, gradWeight's dtype rule. */
  gradBias?: Tensor | null;
}

/** Arguments of {@linkcode adaLayerNormBackward} (names as in CANN, Optional/Out dropped). */
export interface AdaLayerNormBackwardArgs {
  /** dL/doutput: input's shape, float32/float16/bfloat16. */
  gradOut: check.MaybeTensor;
  /** The forward's x [B..., S, H] (rank 2-8, no dim of 0), gradOut's dtype. */
  input: check.MaybeTensor;
  /** [H]: one entry, input's last dim. */
  normalizedShape: readonly number[] | null | undefined;
  /** Per-row rstd of the forward: input's shape with last dim 1, gradOut's dtype. */
  rstd: check.MaybeTensor;
  /** Per-row mean of the forward: rstd's shape, gradOut's dtype. */
  mean: check.MaybeTensor;
  /** The forward's per-batch scale: [B..., H] or [B..., 1, H], gradOut's dtype. */
  scale: check.MaybeTensor;
  /** The forward's per-batch shift: scale's forms, gradOut's dtype. */
  shift: check.MaybeTensor;
  /** LayerNorm weight [H] (ones when absent): input's dtype or float32. */
  weight?: check.MaybeTensor;
  /** LayerNorm bias [H] (zeros when absent): weight's dtype when both are given. */
  bias?: check.MaybeTensor;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated, null skipped. */
  out?: AdaLayerNormBackwardOut;
}

/**
 * Results of {@linkcode adaLayerNormBackward} (null: not computed); `using` frees the outputs
 * the call allocated.
 */
export interface AdaLayerNormBackwardResult extends Disposable {
  /** dL/dinput, input's dtype. */
  gradInput: Tensor | null;
  /** dL/dscale, scale's shape and dtype. */
  gradScale: Tensor | null;
  /** dL/dshift, shift's shape and dtype. */
  gradShift: Tensor | null;
  /** dL/dweight, [H]. */
  gradWeight: Tensor | null;
  /** dL/dbias, [H]. */
  gradBias: Tensor | null;
}

const scalarsSchema = z.object({ normalizedShape: normalizedShapeSchema });

/**
 * Computes the AdaLayerNorm gradients as aclnnAdaLayerNormBackward does, on the CPU or on the
 * NPU the tensors live on (Atlas A2/A3 only: CANN computes nothing on other SoCs and returns
 * success, so the library refuses them, naming the SoC).
 *
 * Validation, in CANN's order (ops-nn `norm/ada_layer_norm_grad/op_host/op_api/
 * aclnn_ada_layer_norm_backward.cpp`, CheckNotNull :51-63, CheckDtype :96-138, CheckShape
 * :275-328): 161001 when gradOut, input, normalizedShape, mean, rstd, scale or shift is missing;
 * 161002 when gradOut is not float32/float16/bfloat16, input, rstd, mean, scale or shift has
 * another dtype, weight or bias is neither input's dtype nor float32, weight and bias differ,
 * gradInput/gradScale/gradShift are not input's/scale's/shift's dtype, gradWeight/gradBias not
 * weight's (else bias's; with neither, float32 or input's); then a tensor of more than 8 dims,
 * gradOut not input's shape, mean not rstd's, normalizedShape not of one entry, input of fewer
 * than 2 dims, normalizedShape not input's last dim, weight or bias not 1-D (or, this package's
 * rule, not [H]: CANN drops that check's result, :307-308), a dim of input 0, scale or shift
 * neither [B..., 1, H] nor [B..., H], mean not input's shape with last dim 1, gradInput,
 * gradScale, gradShift not input's, scale's, shift's shape, gradWeight or gradBias not of H
 * elements. Every output `null`: SUCCESS, nothing computed.
 *
 * Without `out`, gradInput takes input's layout and dtype, gradScale/gradShift scale's/shift's
 * shape and dtype, gradWeight/gradBias [H] in weight's (else bias's, else float32) dtype. The
 * column and per-batch sums are in a fixed order here; CANN's kernel adds per-core partials.
 *
 * @example
 * ```ts
 * import { adaLayerNormBackward, adaLayerNormV2, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([2, 4, 8], { seed: 1, dtype: "bfloat16" });
 * const scale = Tensor.random([2, 1, 8], { seed: 2, dtype: "bfloat16" });
 * const shift = Tensor.random([2, 8], { seed: 3, dtype: "bfloat16" });
 * const { mean, rstd } = adaLayerNormV2({ x, scale, shift });
 * const g = adaLayerNormBackward({
 *   gradOut: Tensor.random([2, 4, 8], { seed: 4, dtype: "bfloat16" }), input: x,
 *   normalizedShape: [8], rstd: rstd!, mean: mean!, scale, shift, out: { gradInput: null },
 * });
 * console.log(g.gradInput, g.gradScale!.shape, g.gradWeight!.dtype); // null [2, 1, 8] float32
 * ```
 */
export function adaLayerNormBackward(args: AdaLayerNormBackwardArgs): AdaLayerNormBackwardResult {
  return call(args);
}

type Output = "gradInput" | "gradScale" | "gradShift" | "gradWeight" | "gradBias";

/** What validation established, which outputs the call computes and the column dtype. */
type Validated =
  & PlannedCall<Output, AdaLayerNormBackwardPlan, AdaLayerNormBackwardTensors>
  & { readonly want: Readonly<Record<Output, boolean>>; readonly columnDType: DType };

function when(v: Validated, name: Output, make: () => Tensor): Tensor | undefined {
  return v.want[name] ? make() : undefined;
}

const call = defineOperator<
  AdaLayerNormBackwardArgs,
  Output,
  Validated,
  AdaLayerNormBackwardResult
>({
  op: OP,
  args: ["gradOut", "input", "normalizedShape", "rstd", "mean", "scale", "shift", "weight", "bias"],
  outputs: {
    gradInput: (v) =>
      when(
        v,
        "gradInput",
        () => Tensor.emptyLike(v.tensors.input, v.tensors.input.dtype, v.device),
      ),
    gradScale: (v) =>
      when(
        v,
        "gradScale",
        () => Tensor.empty(v.tensors.scale.shape, v.tensors.scale.dtype, v.device),
      ),
    gradShift: (v) =>
      when(
        v,
        "gradShift",
        () => Tensor.empty(v.tensors.shift.shape, v.tensors.shift.dtype, v.device),
      ),
    gradWeight: (v) =>
      when(v, "gradWeight", () => Tensor.empty(v.plan.normalizedShape, v.columnDType, v.device)),
    gradBias: (v) =>
      when(v, "gradBias", () => Tensor.empty(v.plan.normalizedShape, v.columnDType, v.device)),
  },
  validate,
  run: (v, o) => {
    if (!Object.values(v.want).some((w) => w)) return;
    v.backend.adaLayerNormBackward(v.plan, { ...v.tensors, ...o });
  },
});

/** 161002 unless `t` has dtype `want` (`of` names where `want` comes from). */
function sameDType(name: string, t: Tensor | undefined, want: DType, of: string): void {
  if (t && t.dtype !== want) check.invalid(OP, name, `dtype ${t.dtype} must be ${of}'s ${want}`);
}

function validate(args: AdaLayerNormBackwardArgs): Validated {
  // CheckNotNull (:51-63).
  const gradOut = check.requireTensor(OP, "gradOut", args.gradOut);
  const input = check.requireTensor(OP, "input", args.input);
  if (args.normalizedShape === undefined || args.normalizedShape === null) {
    check.missing(OP, "normalizedShape");
  }
  const mean = check.requireTensor(OP, "mean", args.mean);
  const rstd = check.requireTensor(OP, "rstd", args.rstd);
  const scale = check.requireTensor(OP, "scale", args.scale);
  const shift = check.requireTensor(OP, "shift", args.shift);
  const weight = check.optionalTensor(OP, "weight", args.weight);
  const bias = check.optionalTensor(OP, "bias", args.bias);
  const { normalizedShape } = check.parseArguments(OP, scalarsSchema, args);
  const out = args.out as Record<string, unknown> | undefined | null;
  const names: Output[] = ["gradInput", "gradScale", "gradShift", "gradWeight", "gradBias"];
  const want = Object.fromEntries(names.map((n) => [n, out?.[n] !== null])) as Record<
    Output,
    boolean
  >;
  const [gradInput, gradScale, gradShift, gradWeight, gradBias] = names.map((n) =>
    check.requestedOutput(OP, n, args.out, want[n])
  );

  // CheckDtype (:96-138), CheckOptionalOutDtype (:66-95).
  check.checkDType(OP, "gradOut", gradOut, FLOAT_DTYPES);
  for (const [name, t] of Object.entries({ input, rstd, mean, scale, shift })) {
    sameDType(name, t, gradOut.dtype, "gradOut");
  }
  for (const [name, t] of Object.entries({ weight, bias })) {
    if (!t) continue;
    check.checkDType(OP, name, t, FLOAT_DTYPES);
    if (t.dtype !== "float32") sameDType(name, t, input.dtype, "input");
  }
  if (weight && bias) sameDType("weight", weight, bias.dtype, "bias");
  sameDType("gradInput", gradInput, input.dtype, "input");
  sameDType("gradScale", gradScale, scale.dtype, "scale");
  sameDType("gradShift", gradShift, shift.dtype, "shift");
  const column = weight ?? bias;
  for (const [name, t] of Object.entries({ gradWeight, gradBias })) {
    if (!t) continue;
    if (column) sameDType(name, t, column.dtype, weight ? "weight" : "bias");
    else if (t.dtype !== "float32") sameDType(name, t, input.dtype, "input");
  }

  // CheckShape (:275-328), in its order.
  const maxed = { gradOut, input, mean, rstd, scale, shift, gradInput, gradScale, gradShift };
  for (const [name, t] of Object.entries({ ...maxed, gradWeight, gradBias })) {
    checkMaxRank(OP, name, t);
  }
  check.checkShape(OP, "gradOut", gradOut, input.shape, "input");
  check.checkShape(OP, "mean", mean, rstd.shape, "rstd");
  if (normalizedShape.length !== 1) {
    check.invalid(OP, "normalizedShape", `has ${normalizedShape.length} entries; it must have 1`);
  }
  if (input.rank < 2) check.invalid(OP, "input", `rank ${input.rank} must be at least 2`);
  const H = input.shape[input.rank - 1];
  if (normalizedShape[0] !== H) {
    check.invalid(
      OP,
      "normalizedShape",
      `[${normalizedShape[0]}] must equal input's last dim ${H}`,
    );
  }
  for (const [name, t] of Object.entries({ weight, bias })) {
    if (!t) continue;
    checkMaxRank(OP, name, t);
    if (t.rank !== 1) check.invalid(OP, name, `rank ${t.rank} must equal len(normalizedShape) = 1`);
    // CANN compares weight/bias with normalizedShape but drops the result (:307-308) and its
    // kernel reads H elements: this package's rule.
    check.checkShape(OP, name, t, [H], "normalizedShape");
  }
  // ValidateScaleShiftShapes (:175-209).
  if (input.numel === 0) {
    check.invalid(OP, "input", `shape ${formatShape(input.shape)} must have no dim of 0`);
  }
  const lead = input.shape.slice(0, -2);
  for (const [name, t] of Object.entries({ scale, shift })) {
    if (!check.sameShape(t.shape, [...lead, 1, H]) && !check.sameShape(t.shape, [...lead, H])) {
      check.invalid(
        OP,
        name,
        `shape ${formatShape(t.shape)} must be ${formatShape([...lead, 1, H])} or ` +
          `${formatShape([...lead, H])} (input's batch dims and H)`,
      );
    }
  }
  check.checkShape(OP, "mean", mean, [...input.shape.slice(0, -1), 1], "input with last dim 1");
  // CheckOutputShapes (:243-273).
  if (gradInput) check.checkShape(OP, "gradInput", gradInput, input.shape, "input");
  if (gradScale) check.checkShape(OP, "gradScale", gradScale, scale.shape, "scale");
  if (gradShift) check.checkShape(OP, "gradShift", gradShift, shift.shape, "shift");
  for (const [name, t] of Object.entries({ gradWeight, gradBias })) {
    if (t) check.checkNumel(OP, name, t, H, "H (normalizedShape's)");
  }

  const geometry = rowGeometry(input.shape, input.rank - 1);
  const given = { gradInput, gradScale, gradShift, gradWeight, gradBias };
  const read = { gradOut, input, rstd, mean, scale, shift, weight, bias };
  const { device, backend } = placeRowNorm(OP, given, read, geometry);
  // infer_dtype (:375-389): the l0 column results' dtype; the outputs given decide after the
  // tensors, float32 last.
  const columnDType = column?.dtype ?? gradWeight?.dtype ?? gradBias?.dtype ?? "float32";
  const plan = { geometry, seq: input.shape[input.rank - 2], normalizedShape: [H] };
  return { device, backend, plan, tensors: read, given, want, columnDType };
}
