/**
 * aclnnBatchNormBackward: the gradients of BatchNorm with respect to its input, weight and
 * bias, in training mode (batch statistics saveMean/saveInvstd) or in evaluation mode
 * (running statistics runningMean/runningVar + eps).
 *
 * Training mode, per channel c with M = numel(input) / C elements:
 *
 * ```
 * gradInput  = w * invstd * (dy - sumDy / M - (x - mean) * invstd^2 * sumDyXmu / M)
 * gradWeight = sumDyXmu * invstd          sumDy = sum(dy), sumDyXmu = sum(dy * (x - mean))
 * gradBias   = sumDy                      mean = saveMean, invstd = saveInvstd
 * ```
 *
 * Evaluation mode uses mean = runningMean, invstd = 1 / sqrt(runningVar + eps) and
 * gradInput = dy * invstd * w. Missing tensors default to weight = 1, runningMean = 0,
 * runningVar = 1, saveMean = 0, saveInvstd = 1.
 *
 * @example
 * ```ts
 * import { batchNormBackward, Tensor } from "@aclnn/norm";
 * const x = Tensor.fromArray([1, 2, 3, 4, 5, 6, 7, 8], [2, 2, 2]);
 * const dy = Tensor.ones([2, 2, 2]);
 * const r = batchNormBackward({ gradOut: dy, input: x, training: false });
 * console.log(r.gradBias?.toArray()); // [4, 4]
 * ```
 *
 * @module
 */

import { z } from "./zod.ts";
import {
  type BatchNormBackwardPlan,
  type BatchNormBackwardTensors,
  channelGeometry,
} from "../backends/mod.ts";
import { type DType, FLOAT_DTYPES } from "../tensor/dtype.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { defineOperator, emptyLikeWhen, emptyWhen, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnBatchNormBackward";

/** Preallocated outputs of {@linkcode batchNormBackward}. */
export interface BatchNormBackwardOut {
  /** Receives dL/dx: same dtype and shape as `input` (any strides). */
  gradInput?: Tensor | null;
  /** Receives dL/dweight: C elements. */
  gradWeight?: Tensor | null;
  /** Receives dL/dbias: C elements. */
  gradBias?: Tensor | null;
}

/** Arguments of {@linkcode batchNormBackward} (names as in CANN). */
export interface BatchNormBackwardArgs {
  /** dL/dy, same dtype and shape as `input`; rank 2-8. */
  gradOut: check.MaybeTensor;
  /** x, rank 2-8, channel = dim 1. */
  input: check.MaybeTensor;
  /** gamma, C elements; all ones when absent. */
  weight?: check.MaybeTensor;
  /** Running mean, C elements (used when `training` is false); zeros when absent. */
  runningMean?: check.MaybeTensor;
  /** Running variance, C elements (used when `training` is false); ones when absent. */
  runningVar?: check.MaybeTensor;
  /** Batch mean saved by the forward, C elements (or 0 in eval mode); zeros when absent. */
  saveMean?: check.MaybeTensor;
  /** Batch 1/sqrt(var + eps), C elements (or 0 in eval mode); ones when absent. */
  saveInvstd?: check.MaybeTensor;
  /** true: gradient through the batch statistics; false: through fixed running statistics. */
  training: boolean;
  /** Added to runningVar in evaluation mode. Default 1e-5. */
  eps?: number;
  /** Which of gradInput, gradWeight, gradBias to compute. Default [true, true, true]. */
  outputMask?: readonly boolean[];
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: BatchNormBackwardOut;
}

/**
 * Results; an output is null when its outputMask entry is false. `using` frees the outputs the
 * call allocated.
 */
export interface BatchNormBackwardResult extends Disposable {
  /** dL/dx, shape of `input`. */
  gradInput: Tensor | null;
  /** dL/dweight per channel. */
  gradWeight: Tensor | null;
  /** dL/dbias per channel. */
  gradBias: Tensor | null;
}

const scalarsSchema = z.object({
  training: check.trainingFlag,
  eps: check.epsilon,
  outputMask: check.outputMask("gradInput, gradWeight, gradBias"),
});

/** Mixed precision as CANN allows it: `t.dtype` is `base` or float32. */
function checkDTypeOrFloat32(name: string, t: Tensor, baseName: string, base: DType): void {
  if (t.dtype !== base && t.dtype !== "float32") {
    check.invalid(OP, name, `dtype ${t.dtype} must be float32 or ${baseName} dtype ${base}`);
  }
}

/**
 * Computes the BatchNorm gradients as aclnnBatchNormBackward does, on the CPU or on the NPU
 * the tensors live on.
 *
 * Validation follows the aclnn documentation: 161001 when gradOut or input is missing, or
 * when an output the mask asks for is given as `null` in `out`; 161002 for unsupported
 * dtypes (float32/float16/bfloat16), ranks outside 2-8, gradOut/input/gradInput shape or
 * dtype mismatches, per-channel tensors without C elements, and an
 * outputMask that does not have 3 entries. Per-channel tensors may be float32 with float16
 * or bfloat16 data (mixed precision); runningVar must share runningMean's dtype, saveInvstd
 * saveMean's, gradBias gradWeight's. Masked-off outputs are neither validated nor written.
 *
 * Without `out`, gradInput takes input's dtype, shape and memory layout (channels-last in,
 * channels-last out), and gradWeight/gradBias use weight's dtype (input's when weight is
 * absent).
 *
 * @example
 * ```ts
 * import { batchNormBackward, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([4, 3, 5], { seed: 1 });
 * const dy = Tensor.random([4, 3, 5], { seed: 2 });
 * const { gradInput, gradWeight, gradBias } = batchNormBackward({
 *   gradOut: dy,
 *   input: x,
 *   saveMean: Tensor.zeros([3]),
 *   saveInvstd: Tensor.ones([3]),
 *   training: true,
 * });
 * console.log(gradInput?.shape, gradWeight?.shape, gradBias?.shape); // [4, 3, 5] [3] [3]
 * ```
 */
export function batchNormBackward(args: BatchNormBackwardArgs): BatchNormBackwardResult {
  return call(args);
}

/** The outputs of aclnnBatchNormBackward and aclnnFastBatchNormBackward. */
export type BatchNormBackwardOutput = "gradInput" | "gradWeight" | "gradBias";
type Output = BatchNormBackwardOutput;

/** What validation established for one set of argument values (shared with the fast variant). */
export interface BatchNormBackwardValidated<P extends BatchNormBackwardPlan = BatchNormBackwardPlan>
  extends PlannedCall<Output, P, BatchNormBackwardTensors> {
  /** C (input dim 1; 0 for an empty input of rank < 2). */
  readonly channels: number;
  /** dtype of gradWeight/gradBias when allocated (weight's, else input's). */
  readonly gradDType: DType;
}
type Validated = BatchNormBackwardValidated;

/** The arguments aclnnBatchNormBackward's outcome depends on, in CANN's order. */
export const BATCH_NORM_BACKWARD_ARGS = [
  "gradOut",
  "input",
  "weight",
  "runningMean",
  "runningVar",
  "saveMean",
  "saveInvstd",
  "training",
  "eps",
  "outputMask",
] as const;

/**
 * How each output is allocated without `out`: gradInput like input, gradWeight/gradBias `[C]`
 * in weight's dtype (input's without weight); undefined when masked off.
 */
export const batchNormBackwardOutputs: {
  readonly [K in Output]: (v: BatchNormBackwardValidated) => Tensor | undefined;
} = {
  gradInput: (v) => emptyLikeWhen(v.plan.mask[0], v.tensors.input, v.tensors.input.dtype, v.device),
  gradWeight: (v) => emptyWhen(v.plan.mask[1], [v.channels], v.gradDType, v.device),
  gradBias: (v) => emptyWhen(v.plan.mask[2], [v.channels], v.gradDType, v.device),
};

const call = defineOperator<BatchNormBackwardArgs, Output, Validated>({
  op: OP,
  args: [...BATCH_NORM_BACKWARD_ARGS],
  outputs: batchNormBackwardOutputs,
  validate,
  run: (v, outputs) => v.backend.batchNormBackward(v.plan, { ...v.tensors, ...outputs }),
});

function validate(args: BatchNormBackwardArgs): Validated {
  const gradOut = check.requireTensor(OP, "gradOut", args.gradOut);
  const input = check.requireTensor(OP, "input", args.input);
  const weight = check.optionalTensor(OP, "weight", args.weight);
  const runningMean = check.optionalTensor(OP, "runningMean", args.runningMean);
  const runningVar = check.optionalTensor(OP, "runningVar", args.runningVar);
  const saveMean = check.optionalTensor(OP, "saveMean", args.saveMean);
  const saveInvstd = check.optionalTensor(OP, "saveInvstd", args.saveInvstd);
  // CANN returns 161001 for every outputMask failure, a wrong length included
  // (aclnn_batch_norm_backward.cpp CheckParams maps CheckMaskNotNull to ACLNN_ERR_PARAM_NULLPTR).
  const givenMask = (args as { outputMask?: unknown } | undefined)?.outputMask;
  if (givenMask === null) check.missing(OP, "outputMask");
  if (Array.isArray(givenMask) && givenMask.length !== 3) {
    check.missing(
      OP,
      "outputMask",
      `must have exactly 3 entries (gradInput, gradWeight, gradBias), has ${givenMask.length}, and`,
    );
  }
  const { training, eps, outputMask } = check.parseArguments(OP, scalarsSchema, args);
  const mask = outputMask as [boolean, boolean, boolean];
  const gradInput = check.requestedOutput(OP, "gradInput", args.out, mask[0]);
  const gradWeight = check.requestedOutput(OP, "gradWeight", args.out, mask[1]);
  const gradBias = check.requestedOutput(OP, "gradBias", args.out, mask[2]);

  // Order: dtypes, then ranks and shapes, then per-channel sizes (as aclnn checks them).
  const stats = { weight, runningMean, runningVar, saveMean, saveInvstd };
  const all = { gradOut, input, ...stats, gradInput, gradWeight, gradBias };
  for (const [name, t] of Object.entries(all)) {
    if (t) check.checkDType(OP, name, t, FLOAT_DTYPES);
  }
  check.checkSameDType(OP, "input", input, "gradOut", gradOut);
  if (gradInput) check.checkSameDType(OP, "gradInput", gradInput, "gradOut", gradOut);
  for (const [name, t] of Object.entries(stats)) {
    if (t) checkDTypeOrFloat32(name, t, "gradOut", gradOut.dtype);
  }
  if (runningMean && runningVar) {
    check.checkSameDType(OP, "runningVar", runningVar, "runningMean", runningMean);
  }
  if (saveMean && saveInvstd) {
    check.checkSameDType(OP, "saveInvstd", saveInvstd, "saveMean", saveMean);
  }
  const gradDType = weight?.dtype ?? input.dtype;
  const gradBaseName = weight ? "weight" : "gradOut";
  if (gradWeight) checkDTypeOrFloat32("gradWeight", gradWeight, gradBaseName, gradDType);
  if (gradBias) checkDTypeOrFloat32("gradBias", gradBias, gradBaseName, gradDType);
  if (gradWeight && gradBias) {
    check.checkSameDType(OP, "gradBias", gradBias, "gradWeight", gradWeight);
  }

  check.checkRank(OP, "gradOut", gradOut, 2, 8);
  check.checkRank(OP, "input", input, 2, 8);
  check.checkShape(OP, "input", input, gradOut.shape, "gradOut");
  if (gradInput) check.checkShape(OP, "gradInput", gradInput, gradOut.shape, "gradOut");
  const channels = input.shape[1];
  for (const [name, t] of Object.entries({ ...stats, gradWeight, gradBias })) {
    if (t) check.checkPerChannelShape(OP, name, t, channels, !training && name.startsWith("save"));
  }
  check.checkWrites(OP, { gradInput, gradWeight, gradBias }, { gradOut, input, ...stats });
  const { device, backend } = check.placeCall(OP, all);
  return {
    device,
    backend,
    plan: { geometry: channelGeometry(input.shape), training, eps, mask },
    tensors: { ...stats, gradOut, input },
    given: { gradInput, gradWeight, gradBias },
    channels,
    gradDType,
  };
}
