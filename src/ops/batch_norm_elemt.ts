/**
 * aclnnBatchNormElemt: normalizes x with given per-channel statistics (the last step of the
 * SyncBatchNorm forward pass, after {@linkcode batchNormGatherStatsWithCounts}):
 *
 * ```
 * output = (x - mean) * invstd * weight + bias
 * ```
 *
 * `eps` is passed through to CANN; it is not used by the formula (invstd already has it).
 *
 * @example
 * ```ts
 * import { batchNormElemt, Tensor } from "@aclnn/norm";
 * const y = batchNormElemt({
 *   input: Tensor.fromArray([1, 2, 3, 4], [2, 2]),
 *   mean: Tensor.fromArray([2, 3], [2]),
 *   invstd: Tensor.fromArray([1, 0.5], [2]),
 * });
 * console.log(y.toArray()); // [-1, -0.5, 1, 0.5]
 * ```
 *
 * @module
 */

import { z } from "./zod.ts";
import {
  type BatchNormElemtPlan,
  type BatchNormElemtTensors,
  channelGeometry,
} from "../backends/mod.ts";
import { ACLNN_ERR_PARAM_INVALID } from "../errors.ts";
import { Tensor } from "../tensor/tensor.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnBatchNormElemt";

/** Preallocated output of {@linkcode batchNormElemt}. */
export interface BatchNormElemtOut {
  /** Receives y: input's shape and dtype (any strides). */
  output?: Tensor | null;
}

/** Arguments of {@linkcode batchNormElemt} (names as in CANN). */
export interface BatchNormElemtArgs {
  /** x: rank 2-8, channel = dim 1 (must not be 0). */
  input: check.MaybeTensor;
  /** gamma: rank 1, C elements, any float dtype; all ones when absent. */
  weight?: check.MaybeTensor;
  /** beta: rank 1, C elements, any float dtype; zeros when absent. */
  bias?: check.MaybeTensor;
  /** Per-channel mean: rank 1, C elements, any float dtype (float32 with 16-bit data). */
  mean: check.MaybeTensor;
  /**
   * Per-channel 1/sqrt(var + eps): rank 1, C elements, any float dtype. Prefer float32 with
   * float16 data: CANN rebuilds the variance as 1/invstd^2 - eps in invstd's dtype, which
   * overflows in float16 once invstd exceeds 256 (a nearly constant channel).
   */
  invstd: check.MaybeTensor;
  /** Passed to CANN (unused by the formula). Default 1e-5. */
  eps?: number;
  /** Preallocated output (validated as aclnn does); allocated when missing. */
  out?: BatchNormElemtOut;
}

const scalarsSchema = z.object({ eps: check.epsilon });

/**
 * Normalizes x with given statistics as aclnnBatchNormElemt does, on the CPU or on the NPU
 * the tensors live on.
 *
 * Validation (aclnnBatchNormElemt documentation): 161001 when input, mean or invstd is
 * missing, or `out.output` is `null`; 161002 when a tensor is not float32/float16/bfloat16
 * (each tensor is checked on its own, as CANN does: float32 statistics with float16/bfloat16
 * data are accepted), output does not have input's dtype, input's rank is outside 2-8,
 * output's shape differs from input's, C (input dim 1) is 0, or weight/bias/mean/invstd are
 * not rank 1 with C elements.
 *
 * @example
 * ```ts
 * import { batchNormElemt, batchNormStats, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([8, 3, 4], { seed: 1 });
 * const { mean, invstd } = batchNormStats({ input: x });
 * const y = batchNormElemt({ input: x, mean, invstd });
 * console.log(y.shape); // [8, 3, 4]
 * ```
 */
export function batchNormElemt(args: BatchNormElemtArgs): Tensor {
  return call(args).output;
}

/** What validation established for one set of argument values. */
type Validated = PlannedCall<"output", BatchNormElemtPlan, BatchNormElemtTensors>;

const call = defineOperator<
  BatchNormElemtArgs,
  "output",
  Validated,
  { output: Tensor } & Disposable
>({
  op: OP,
  args: ["input", "weight", "bias", "mean", "invstd", "eps"],
  outputs: {
    output: (v) => Tensor.emptyLike(v.tensors.input, v.tensors.input.dtype, v.device),
  },
  validate,
  run: (v, o) => v.backend.batchNormElemt(v.plan, { ...v.tensors, output: o.output! }),
});

function validate(args: BatchNormElemtArgs): Validated {
  // CANN returns 161002, not 161001, for a null input, mean, invstd or output
  // (aclnn_batch_norm_elemt.cpp CheckBatchNormElemtParams: CHECK_RET(CheckNotNull(...),
  // ACLNN_ERR_PARAM_INVALID)); so does this function.
  const input = check.requireTensor(OP, "input", args.input, ACLNN_ERR_PARAM_INVALID);
  const weight = check.optionalTensor(OP, "weight", args.weight);
  const bias = check.optionalTensor(OP, "bias", args.bias);
  const mean = check.requireTensor(OP, "mean", args.mean, ACLNN_ERR_PARAM_INVALID);
  const invstd = check.requireTensor(OP, "invstd", args.invstd, ACLNN_ERR_PARAM_INVALID);
  const { eps } = check.parseScalars(OP, scalarsSchema, { eps: args.eps });
  const output = check.requestedOutput(OP, "output", args.out, true, ACLNN_ERR_PARAM_INVALID);

  const perChannel = { weight, bias, mean, invstd };
  const all = { input, ...perChannel, output };
  // CANN checks each tensor against the dtype list on its own (aclnn_batch_norm_elemt.cpp
  // CheckDtypeValid); the result is copied to output by ViewCopy, which needs the dtype of
  // the computed tensor, input's (opbase docs/zh/api/nnopbase/opdev/L0/ViewCopy.md).
  check.checkChannelData(OP, all, input, output);
  const channels = input.shape[1];
  check.checkChannelsNonZero(OP, channels);
  for (const [name, t] of Object.entries(perChannel)) {
    if (!t) continue;
    check.checkPerChannelShape(OP, name, t, channels);
  }
  check.checkWrites(OP, { output }, { input, ...perChannel });
  const { device, backend } = check.placeCall(OP, all);

  return {
    device,
    backend,
    plan: { geometry: channelGeometry(input.shape), eps },
    tensors: { input, weight, bias, mean, invstd },
    given: { output },
  };
}
