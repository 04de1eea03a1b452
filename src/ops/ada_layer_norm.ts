/**
 * aclnnAdaLayerNorm: adaptive LayerNorm (DiT's adaLN). Per row of H elements of x [B..., S, H],
 * with the row's batch index b (scale and shift broadcast over S):
 *
 * ```
 * output = LayerNorm_H(x; weight, bias, epsilon) * (1 + scale[b]) + shift[b]
 * ```
 *
 * @example
 * ```ts
 * import { adaLayerNorm, Tensor } from "@aclnn/norm";
 * const x = Tensor.fromArray([1, 3, 2, 6], [1, 2, 2]);
 * const scale = Tensor.ones([1, 1, 2]);
 * const shift = Tensor.zeros([1, 2]);
 * console.log(adaLayerNorm({ x, scale, shift, epsilon: 0 }).output.toArray()); // [-2, 2, -2, 2]
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

const OP = "aclnnAdaLayerNorm";

/** Preallocated outputs of {@linkcode adaLayerNorm} (CANN out). */
export interface AdaLayerNormOut {
  /** Receives the output: x's shape and dtype, any strides. */
  output?: Tensor | null;
}

/** Arguments of {@linkcode adaLayerNorm} (names as in CANN, Optional dropped). */
export interface AdaLayerNormArgs extends AdaLayerNormInputs {
  /** Preallocated output (validated as aclnn does); allocated when missing. */
  out?: AdaLayerNormOut;
}

/** Results of {@linkcode adaLayerNorm}; `using` frees the output the call allocated. */
export interface AdaLayerNormResult extends Disposable {
  /** The normalized, scaled and shifted x. */
  output: Tensor;
}

/**
 * Runs adaptive LayerNorm as aclnnAdaLayerNorm does, on the CPU or on the NPU the tensors live on
 * (Atlas A2/A3; not Ascend 950, whose OpDef does not register it: use {@linkcode adaLayerNormV2}).
 *
 * Validation, in CANN's order (ops-nn `norm/ada_layer_norm/op_host/op_api/
 * aclnn_ada_layer_norm.cpp:33-129`): 161001 when x, scale or shift is missing or `out.output` is
 * `null`; 161002 when x is not float32/float16/bfloat16, scale or shift has another dtype,
 * weight and bias (both given) differ, weight or bias is not x's dtype, output is not x's dtype;
 * then when x has fewer than 2 or more than 8 dims or a dim of 0, scale or shift is neither
 * [B..., 1, H] nor [B..., H], weight or bias is not [H], output is not x's shape.
 *
 * @example
 * ```ts
 * import { adaLayerNorm, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([2, 4, 8], { seed: 1, dtype: "bfloat16" });
 * const scale = Tensor.random([2, 1, 8], { seed: 2, dtype: "bfloat16" });
 * const shift = Tensor.random([2, 8], { seed: 3, dtype: "bfloat16" });
 * console.log(adaLayerNorm({ x, scale, shift }).output.dtype); // bfloat16
 * ```
 */
export function adaLayerNorm(args: AdaLayerNormArgs): AdaLayerNormResult {
  return call(args) as AdaLayerNormResult;
}

const call = defineOperator<AdaLayerNormArgs, "output", AdaValidated>({
  op: OP,
  args: ["x", "scale", "shift", "weight", "bias", "epsilon"],
  outputs: { output: (v) => Tensor.emptyLike(v.tensors.x, v.tensors.x.dtype, v.device) },
  validate: (args) =>
    validateAda(OP, false, args, { output: check.requestedOutput(OP, "output", args.out, true) }),
  run: (v, o) => v.backend.adaLayerNorm(v.plan, { ...v.tensors, output: o.output! }),
});
