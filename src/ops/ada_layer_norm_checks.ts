/**
 * The validation aclnnAdaLayerNorm and aclnnAdaLayerNormV2 share (their op_api CheckParams:
 * ops-nn e5c3fa9 `norm/ada_layer_norm/op_host/op_api/aclnn_ada_layer_norm.cpp:33-129`,
 * `norm/ada_layer_norm_v2/op_host/op_api/aclnn_ada_layer_norm_v2.cpp:33-127`): 161001 for a
 * missing x, scale, shift or out, then 161002 for dtypes, then for shapes, in each one's order
 * (V2 checks shift before scale, bias before weight, rstd before mean, and takes a float32 weight
 * or bias with 16-bit x). docs/norm_family_kernels.md section 12.
 *
 * @module
 */

import type { AdaLayerNormPlan, AdaLayerNormTensors, Backend } from "../backends/mod.ts";
import { rowGeometry } from "../backends/mod.ts";
import type { Device } from "../tensor/device.ts";
import { formatShape } from "../tensor/layout.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { z } from "./zod.ts";
import { epsilonSchema, placeRowNorm } from "./row_norm_checks.ts";
import * as check from "./validate.ts";

/** The arguments both operators take (names as in CANN, Optional dropped). */
export interface AdaLayerNormInputs {
  /** Input [B..., S, H], rank 2-8, every dim non-zero, float32/float16/bfloat16. */
  x: check.MaybeTensor;
  /** Per-batch scale: [B..., H] or [B..., 1, H] (broadcast over S), x's dtype. */
  scale: check.MaybeTensor;
  /** Per-batch shift: scale's forms, x's dtype. */
  shift: check.MaybeTensor;
  /** LayerNorm weight [H] (ones when absent): x's dtype (V2: or float32). */
  weight?: check.MaybeTensor;
  /** LayerNorm bias [H] (zeros when absent): weight's dtype when both are given. */
  bias?: check.MaybeTensor;
  /** Added to the variance (a float32 in the kernel). Default 1e-5. */
  epsilon?: number;
}

/** The outputs `out` may give: out (named output), V2's mean and rstd (null: not computed). */
export interface AdaLayerNormGiven {
  readonly output?: Tensor;
  readonly mean?: Tensor;
  readonly rstd?: Tensor;
}

/** What validation established for one call. */
export interface AdaValidated {
  readonly device: Device;
  readonly backend: Backend;
  readonly plan: AdaLayerNormPlan;
  readonly tensors: Omit<AdaLayerNormTensors, "output" | "mean" | "rstd">;
  readonly given: AdaLayerNormGiven;
}

const scalarsSchema = z.object({ epsilon: epsilonSchema(1e-5) });

/** 161002 unless `t` has dtype `want`. */
function sameDType(
  op: string,
  name: string,
  t: Tensor | undefined,
  want: string,
  of: string,
): void {
  if (t && t.dtype !== want) check.invalid(op, name, `dtype ${t.dtype} must be ${of}'s ${want}`);
}

/**
 * Validates a call of `op` (V2 when `v2`) with the outputs `given` (from `out`), in CANN's order.
 */
export function validateAda(
  op: string,
  v2: boolean,
  args: AdaLayerNormInputs,
  given: AdaLayerNormGiven,
): AdaValidated {
  const x = check.requireTensor(op, "x", args.x);
  const scale = check.requireTensor(op, "scale", args.scale);
  const shift = check.requireTensor(op, "shift", args.shift);
  const weight = check.optionalTensor(op, "weight", args.weight);
  const bias = check.optionalTensor(op, "bias", args.bias);
  const { epsilon } = check.parseArguments(op, scalarsSchema, args);
  const { output, mean, rstd } = given;

  // CheckDtypeValid.
  check.checkDType(op, "x", x, ["float32", "float16", "bfloat16"]);
  const pair = (a: [string, Tensor | undefined], b: [string, Tensor | undefined]) =>
    v2 ? [b, a] : [a, b];
  for (const [name, t] of pair(["scale", scale], ["shift", shift])) {
    sameDType(op, name, t, x.dtype, "x");
  }
  if (weight && bias) sameDType(op, "weight", weight, bias.dtype, "bias");
  for (const [name, t] of pair(["weight", weight], ["bias", bias])) {
    if (t && !(v2 && t.dtype === "float32")) sameDType(op, name!, t, x.dtype, "x");
  }
  sameDType(op, "output", output, x.dtype, "x");
  for (const [name, t] of pair(["mean", mean], ["rstd", rstd])) {
    sameDType(op, name!, t, x.dtype, "x");
  }

  // CheckShape.
  if (x.rank < 2 || x.rank > 8) check.invalid(op, "x", `rank ${x.rank} must be 2 to 8`);
  if (x.numel === 0) check.invalid(op, "x", `shape ${formatShape(x.shape)} must have no dim of 0`);
  const H = x.shape[x.rank - 1];
  const lead = x.shape.slice(0, -2);
  for (const [name, t] of pair(["scale", scale], ["shift", shift])) {
    const s = t!.shape;
    if (!check.sameShape(s, [...lead, 1, H]) && !check.sameShape(s, [...lead, H])) {
      check.invalid(
        op,
        name!,
        `shape ${formatShape(s)} must be ${formatShape([...lead, 1, H])} or ` +
          `${formatShape([...lead, H])} (x's batch dims and H)`,
      );
    }
  }
  for (const [name, t] of pair(["weight", weight], ["bias", bias])) {
    if (t) check.checkShape(op, name!, t, [H], "[H] of x");
  }
  if (output) check.checkShape(op, "output", output, x.shape, "x");
  const stats = [...x.shape.slice(0, -1), 1];
  for (const [name, t] of pair(["mean", mean], ["rstd", rstd])) {
    if (t) check.checkShape(op, name!, t, stats, "x with last dim 1");
  }

  const geometry = rowGeometry(x.shape, x.rank - 1);
  const { device, backend } = placeRowNorm(op, { output, mean, rstd }, {
    x,
    scale,
    shift,
    weight,
    bias,
  }, geometry);
  const plan = { geometry, epsilon: Math.fround(epsilon), seq: x.shape[x.rank - 2] };
  return { device, backend, plan, tensors: { x, scale, shift, weight, bias }, given };
}
