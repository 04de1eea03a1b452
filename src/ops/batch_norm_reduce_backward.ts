/**
 * aclnnBatchNormReduceBackward: the per-channel reductions of BatchNorm's backward pass
 * (the first half of SyncBatchNorm backward): sumDy, sumDyXmu, gradWeight, gradBias.
 *
 * @module
 */

import { z } from "./zod.ts";
import {
  type BatchNormReduceBackwardPlan,
  type BatchNormReduceBackwardTensors,
  channelGeometry,
} from "../backends/mod.ts";
import type { DType } from "../tensor/dtype.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { defineOperator, emptyWhen, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnBatchNormReduceBackward";

/** Preallocated outputs of {@linkcode batchNormReduceBackward}. */
export interface BatchNormReduceBackwardOut {
  /** Receives sum(gradOut) per channel. */
  sumDy?: Tensor | null;
  /** Receives sum(gradOut * (input - mean)) per channel. */
  sumDyXmu?: Tensor | null;
  /** Receives sumDyXmu * invstd. */
  gradWeight?: Tensor | null;
  /** Receives sum(gradOut). */
  gradBias?: Tensor | null;
}

/** Arguments of {@linkcode batchNormReduceBackward} (names as in CANN). */
export interface BatchNormReduceBackwardArgs {
  /** dL/dy, same dtype and shape as `input`; rank 2-8. */
  gradOut: check.MaybeTensor;
  /** x, rank 2-8, channel = dim 1 (must not be 0). */
  input: check.MaybeTensor;
  /** Per-channel mean, C elements. */
  mean: check.MaybeTensor;
  /** Per-channel 1/sqrt(var + eps), C elements. */
  invstd: check.MaybeTensor;
  /** gamma, C elements; only checked (its values are not used). */
  weight?: check.MaybeTensor;
  /** Compute sumDy and sumDyXmu. Default true. */
  inputG?: boolean;
  /** Compute gradWeight. Default true. */
  weightG?: boolean;
  /** Compute gradBias. Default true. */
  biasG?: boolean;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: BatchNormReduceBackwardOut;
}

/**
 * Results; an output is null when its mask is false. `using` frees the outputs the call
 * allocated.
 */
export interface BatchNormReduceBackwardResult extends Disposable {
  /** sum(gradOut) per channel. */
  sumDy: Tensor | null;
  /** sum(gradOut * (input - mean)) per channel. */
  sumDyXmu: Tensor | null;
  /** sumDyXmu * invstd per channel. */
  gradWeight: Tensor | null;
  /** sum(gradOut) per channel. */
  gradBias: Tensor | null;
}

const masksSchema = z.object({ inputG: check.flag, weightG: check.flag, biasG: check.flag });

/**
 * Computes sumDy, sumDyXmu, gradWeight and gradBias per channel (dim 1) as
 * aclnnBatchNormReduceBackward does, on the CPU or on the NPU the tensors live on.
 *
 * @example
 * ```ts
 * import { batchNormReduceBackward, Tensor } from "@aclnn/norm";
 * const r = batchNormReduceBackward({
 *   gradOut: Tensor.fromArray([1, 1, 1, 2, 2, 2, 3, 3], [4, 2]),
 *   input: Tensor.fromArray([0, 1, 2, 3, 4, 5, 6, 7], [4, 2]),
 *   mean: Tensor.fromArray([1, 1], [2]),
 *   invstd: Tensor.fromArray([1, 1], [2]),
 * });
 * console.log(r.sumDy?.toArray(), r.sumDyXmu?.toArray()); // [7, 8] [21, 30]
 * ```
 */
export function batchNormReduceBackward(
  args: BatchNormReduceBackwardArgs,
): BatchNormReduceBackwardResult {
  return call(args);
}

type Output = "sumDy" | "sumDyXmu" | "gradWeight" | "gradBias";

/** What validation established for one set of argument values. */
interface Validated
  extends PlannedCall<Output, BatchNormReduceBackwardPlan, BatchNormReduceBackwardTensors> {
  readonly channels: number;
  /** dtype of sumDy/sumDyXmu when allocated (mean's). */
  readonly sumDType: DType;
  /** dtype of gradWeight/gradBias when allocated (weight's, else mean's). */
  readonly gradDType: DType;
}

// PyTorch's allocation rule: per-channel sums in mean's dtype, weight gradients in weight's.
const call = defineOperator<BatchNormReduceBackwardArgs, Output, Validated>({
  op: OP,
  args: ["gradOut", "input", "mean", "invstd", "weight", "inputG", "weightG", "biasG"],
  outputs: {
    sumDy: (v) => emptyWhen(v.plan.inputG, [v.channels], v.sumDType, v.device),
    sumDyXmu: (v) => emptyWhen(v.plan.inputG, [v.channels], v.sumDType, v.device),
    gradWeight: (v) => emptyWhen(v.plan.weightG, [v.channels], v.gradDType, v.device),
    gradBias: (v) => emptyWhen(v.plan.biasG, [v.channels], v.gradDType, v.device),
  },
  validate,
  run: (v, o) => v.backend.batchNormReduceBackward(v.plan, { ...v.tensors, ...o }),
});

function validate(args: BatchNormReduceBackwardArgs): Validated {
  const gradOut = check.requireTensor(OP, "gradOut", args.gradOut);
  const input = check.requireTensor(OP, "input", args.input);
  const mean = check.requireTensor(OP, "mean", args.mean);
  const invstd = check.requireTensor(OP, "invstd", args.invstd);
  const weight = check.optionalTensor(OP, "weight", args.weight);
  const { inputG, weightG, biasG } = check.parseArguments(OP, masksSchema, args);
  const sumDy = check.requestedOutput(OP, "sumDy", args.out, inputG);
  const sumDyXmu = check.requestedOutput(OP, "sumDyXmu", args.out, inputG);
  const gradWeight = check.requestedOutput(OP, "gradWeight", args.out, weightG);
  const gradBias = check.requestedOutput(OP, "gradBias", args.out, biasG);

  for (const [name, t] of Object.entries({ gradOut, input, mean, invstd, weight })) {
    if (t) check.checkDType(OP, name, t, FLOAT_DTYPES);
  }
  check.checkSameDType(OP, "gradOut", gradOut, "input", input);
  check.checkRank(OP, "gradOut", gradOut, 2, 8);
  check.checkRank(OP, "input", input, 2, 8);
  check.checkShape(OP, "gradOut", gradOut, input.shape, "input");
  const channels = input.shape[1];
  check.checkChannelsNonZero(OP, channels);
  const perChannel = { mean, invstd, weight, sumDy, sumDyXmu, gradWeight, gradBias };
  for (const [name, t] of Object.entries(perChannel)) {
    if (!t) continue;
    check.checkDType(OP, name, t, FLOAT_DTYPES);
    check.checkPerChannelShape(OP, name, t, channels);
  }
  check.checkWrites(
    OP,
    { sumDy, sumDyXmu, gradWeight, gradBias },
    { gradOut, input, mean, invstd, weight },
  );
  const { device, backend } = check.placeCall(OP, { gradOut, input, ...perChannel });
  return {
    device,
    backend,
    plan: { geometry: channelGeometry(input.shape), inputG, weightG, biasG },
    tensors: { gradOut, input, mean, invstd, weight },
    given: { sumDy, sumDyXmu, gradWeight, gradBias },
    channels,
    sumDType: mean.dtype,
    gradDType: weight?.dtype ?? mean.dtype,
  };
}
