/**
 * aclnnAdaLayerNormV2: adaptive LayerNorm (DiT's adaLN) with its statistics. Per row of H
 * elements of x [B..., S, H], with the row's batch index b (scale and shift broadcast over S):
 *
 * ```
 * mean   = sum(x) / H,  rstd = 1 / sqrt(sum((x - mean)^2) / H + epsilon)
 * output = ((x - mean) * rstd * weight + bias) * (1 + scale[b]) + shift[b]
 * ```
 *
 * mean and rstd come in x's dtype, [B..., S, 1].
 *
 * @example
 * ```ts
 * import { adaLayerNormV2, Tensor } from "@aclnn/norm";
 * const x = Tensor.fromArray([1, 3, 2, 6], [1, 2, 2]);
 * const scale = Tensor.zeros([1, 2]);
 * const shift = Tensor.zeros([1, 2]);
 * const r = adaLayerNormV2({ x, scale, shift, epsilon: 0 });
 * console.log(r.output.toArray(), r.mean!.toArray()); // [-1, 1, -1, 1] [2, 4]
 * ```
 *
 * @module
 */

import { Tensor } from "../tensor/tensor.ts";
import {
  type AdaLayerNormInputs,
  type AdaValidated,
  validateAda,
} from "./ada_layer_norm_checks.ts";
import { defineOperator } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnAdaLayerNormV2";

/** Preallocated outputs of {@linkcode adaLayerNormV2} (CANN out, meanOutOptional, rstdOutOptional). */
export interface AdaLayerNormV2Out {
  /** Receives the output: x's shape and dtype, any strides. */
  output?: Tensor | null;
  /** Receives the per-row mean: [B..., S, 1] in x's dtype; `null`: not computed. */
  mean?: Tensor | null;
  /** Receives the per-row rstd: mean's shape and dtype; `null`: not computed. */
  rstd?: Tensor | null;
}

/** Arguments of {@linkcode adaLayerNormV2} (names as in CANN, Optional dropped). */
export interface AdaLayerNormV2Args extends AdaLayerNormInputs {
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: AdaLayerNormV2Out;
}

/** Results of {@linkcode adaLayerNormV2}; `using` frees the outputs the call allocated. */
export interface AdaLayerNormV2Result extends Disposable {
  /** The normalized, scaled and shifted x. */
  output: Tensor;
  /** Per-row mean in x's dtype (null when `out.mean` is null). */
  mean: Tensor | null;
  /** Per-row 1/sqrt(biased var + epsilon) in x's dtype (null when `out.rstd` is null). */
  rstd: Tensor | null;
}

/**
 * Runs adaptive LayerNorm with its statistics as aclnnAdaLayerNormV2 does, on the CPU or on the
 * NPU the tensors live on (Atlas A2/A3, Ascend 950).
 *
 * Validation, in CANN's order (ops-nn `norm/ada_layer_norm_v2/op_host/op_api/
 * aclnn_ada_layer_norm_v2.cpp:33-127`): 161001 when x, scale or shift is missing or `out.output`
 * is `null`; 161002 when x is not float32/float16/bfloat16, shift or scale has another dtype,
 * weight and bias (both given) differ, bias or weight is neither x's dtype nor float32, output,
 * rstd or mean is not x's dtype; then when x has fewer than 2 or more than 8 dims or a dim of 0,
 * shift or scale is neither [B..., 1, H] nor [B..., H], bias or weight is not [H], output is not
 * x's shape, rstd or mean not x's shape with a last dim of 1.
 *
 * The CPU multiplies by rstd as the single-row and slice templates do; the A2/A3 multi-row
 * template (H <= 3072) divides by sqrt(var + eps) instead (docs/norm_family_kernels.md section
 * 12), which the software CANN models.
 *
 * @example
 * ```ts
 * import { adaLayerNormV2, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([2, 4, 8], { seed: 1, dtype: "float16" });
 * const scale = Tensor.random([2, 8], { seed: 2, dtype: "float16" });
 * const shift = Tensor.random([2, 1, 8], { seed: 3, dtype: "float16" });
 * const { output, mean, rstd } = adaLayerNormV2({ x, scale, shift });
 * console.log(output.shape, mean!.dtype, rstd!.shape); // [2, 4, 8] float16 [2, 4, 1]
 * ```
 */
export function adaLayerNormV2(args: AdaLayerNormV2Args): AdaLayerNormV2Result {
  return call(args) as AdaLayerNormV2Result;
}

type Output = "output" | "mean" | "rstd";

/** What validation established, and which statistics the call computes. */
type Validated = AdaValidated & { readonly want: { mean: boolean; rstd: boolean } };

const call = defineOperator<AdaLayerNormV2Args, Output, Validated>({
  op: OP,
  args: ["x", "scale", "shift", "weight", "bias", "epsilon"],
  outputs: {
    output: (v) => Tensor.emptyLike(v.tensors.x, v.tensors.x.dtype, v.device),
    mean: (v) => v.want.mean ? statistic(v) : undefined,
    rstd: (v) => v.want.rstd ? statistic(v) : undefined,
  },
  validate,
  run: (v, o) => {
    v.backend.adaLayerNormV2(v.plan, {
      ...v.tensors,
      output: o.output!,
      mean: o.mean,
      rstd: o.rstd,
    });
  },
});

/** A [B..., S, 1] statistic in x's dtype. */
function statistic(v: Validated): Tensor {
  const x = v.tensors.x;
  return Tensor.empty([...x.shape.slice(0, -1), 1], x.dtype, v.device);
}

function validate(args: AdaLayerNormV2Args): Validated {
  const out = args.out as Record<string, unknown> | undefined | null;
  const want = { mean: out?.mean !== null, rstd: out?.rstd !== null };
  const given = {
    output: check.requestedOutput(OP, "output", args.out, true),
    mean: check.requestedOutput(OP, "mean", args.out, want.mean),
    rstd: check.requestedOutput(OP, "rstd", args.out, want.rstd),
  };
  return { ...validateAda(OP, true, args, given), want };
}
