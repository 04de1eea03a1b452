/**
 * aclnnFastBatchNormBackward: aclnnBatchNormBackward's gradients (the "high-performance
 * version" of its documentation), with CANN's own check order and an algorithm `version` that
 * CANN only logs. Training mode uses saveMean/saveInvstd, evaluation mode runningMean/runningVar
 * + eps; the formulas, defaults (weight 1, runningMean 0, runningVar 1, saveMean 0, saveInvstd 1)
 * and kernels are {@linkcode batchNormBackward}'s.
 *
 * Source: hicann/ops-nn `norm/batch_norm_grad_v3/op_host/op_api/aclnn_fast_batch_norm_backward.cpp`
 * and `docs/aclnnFastBatchNormBackward.md` (e5c3fa9). Products: Atlas A2 only (the document;
 * `src/backends/ascend/soc_batch_norm_family.ts` says why the document and not the code).
 *
 * @example
 * ```ts
 * import { fastBatchNormBackward, Tensor } from "@aclnn/norm";
 * const x = Tensor.fromArray([1, 2, 3, 4, 5, 6, 7, 8], [2, 2, 2]);
 * const r = fastBatchNormBackward({ gradOut: Tensor.ones([2, 2, 2]), input: x, training: false });
 * console.log(r.gradBias?.toArray()); // [4, 4]
 * ```
 *
 * @module
 */

import { z } from "./zod.ts";
import { channelGeometry, type FastBatchNormBackwardPlan } from "../backends/mod.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import type { Tensor } from "../tensor/tensor.ts";
import {
  BATCH_NORM_BACKWARD_ARGS,
  type BatchNormBackwardArgs,
  type BatchNormBackwardOut,
  type BatchNormBackwardOutput,
  batchNormBackwardOutputs,
  type BatchNormBackwardResult,
  type BatchNormBackwardValidated,
} from "./batch_norm_backward.ts";
import { checkViewCopy, INNER_NULLPTR, tilingFailure } from "./row_norm_checks.ts";
import { defineOperator } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnFastBatchNormBackward";

/** Preallocated outputs of {@linkcode fastBatchNormBackward} (those of batchNormBackward). */
export type FastBatchNormBackwardOut = BatchNormBackwardOut;

/** Arguments of {@linkcode fastBatchNormBackward} (names as in CANN). */
export interface FastBatchNormBackwardArgs extends Omit<BatchNormBackwardArgs, "out"> {
  /** The algorithm version, a C int (the documentation: 0 or 1); CANN only logs it. Default 0. */
  version?: number;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: FastBatchNormBackwardOut;
}

/** Results of {@linkcode fastBatchNormBackward}: an output is null when masked off. */
export type FastBatchNormBackwardResult = BatchNormBackwardResult;

const scalarsSchema = z.object({
  training: check.trainingFlag,
  eps: check.epsilon,
  // Any length here: CANN checks the length after its empty path (CheckMaskNotNull).
  outputMask: z.array(z.boolean({ invalid_type_error: "entries must be booleans" }), {
    invalid_type_error: "must be an array of booleans",
  }).default([true, true, true]),
  version: z.number({ invalid_type_error: "must be an integer" }).int("must be an integer")
    .min(-(2 ** 31), "must fit a C int").max(2 ** 31 - 1, "must fit a C int").default(0),
});

/**
 * Computes the BatchNorm gradients as aclnnFastBatchNormBackward does, on the CPU or on the
 * NPU the tensors live on.
 *
 * Validation in aclnnFastBatchNormBackwardGetWorkspaceSize's order: 161001 when gradOut or
 * input is missing; then an empty input or gradOut succeeds with nothing else checked
 * (gradWeight and gradBias are zero-filled here, as every operator of this package fills
 * per-channel reductions over no element; CANN writes nothing); then CheckParams: 161001 when
 * outputMask has fewer than 3 entries (0: CANN's "should not be less than 1"; 1 or 2: CANN
 * reads entries 1 and 2 regardless, refused) or an output it asks for is `null` in `out`;
 * 161002 when gradOut, input, a requested output or a per-channel tensor is not
 * float32/float16/bfloat16, input's dtype is not gradOut's, a rank is outside 2-8, gradOut,
 * input and gradInput shapes differ, or weight, runningMean or runningVar is not `[C]`.
 * Entries of outputMask beyond the third are ignored, as CANN ignores them.
 *
 * CANN casts every per-channel tensor to float32 (so any of the three dtypes is accepted for
 * each, the documentation's "same dtype as gradOut on A2" is not enforced by its code) and then
 * copies its results into the outputs (l0op::ViewCopy): 561103 when gradInput's dtype is not
 * input's, or gradWeight/gradBias is not `[C]`. CANN never checks saveMean's and saveInvstd's
 * shapes, but its kernel reads C of each in training mode: 161002 unless they hold C elements.
 *
 * Without `out`, gradInput takes input's dtype, shape and layout, gradWeight/gradBias weight's
 * dtype (input's when weight is absent).
 *
 * @example
 * ```ts
 * import { fastBatchNormBackward, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([4, 3, 5], { seed: 1 });
 * const dy = Tensor.random([4, 3, 5], { seed: 2 });
 * const { gradInput, gradWeight } = fastBatchNormBackward({
 *   gradOut: dy,
 *   input: x,
 *   saveMean: Tensor.zeros([3]),
 *   saveInvstd: Tensor.ones([3]),
 *   training: true,
 *   version: 1,
 * });
 * console.log(gradInput?.shape, gradWeight?.shape); // [4, 3, 5] [3]
 * ```
 */
export function fastBatchNormBackward(
  args: FastBatchNormBackwardArgs,
): FastBatchNormBackwardResult {
  return call(args);
}

/** What validation established for one set of argument values. */
interface Validated extends BatchNormBackwardValidated<FastBatchNormBackwardPlan> {
  /** CANN's empty path: input or gradOut holds no element. */
  readonly empty: boolean;
}

const call = defineOperator<FastBatchNormBackwardArgs, BatchNormBackwardOutput, Validated>({
  op: OP,
  args: [...BATCH_NORM_BACKWARD_ARGS, "version"],
  outputs: batchNormBackwardOutputs,
  validate,
  run: (v, o) => {
    if (!v.empty) return v.backend.fastBatchNormBackward(v.plan, { ...v.tensors, ...o });
    for (const t of [o.gradWeight, o.gradBias]) {
      if (t && t.numel > 0) t.copy_(new Float64Array(t.numel));
    }
  },
});

function validate(args: FastBatchNormBackwardArgs): Validated {
  // CheckInputNotNull.
  const gradOut = check.requireTensor(OP, "gradOut", args.gradOut);
  const input = check.requireTensor(OP, "input", args.input);
  const weight = check.optionalTensor(OP, "weight", args.weight);
  const runningMean = check.optionalTensor(OP, "runningMean", args.runningMean);
  const runningVar = check.optionalTensor(OP, "runningVar", args.runningVar);
  const saveMean = check.optionalTensor(OP, "saveMean", args.saveMean);
  const saveInvstd = check.optionalTensor(OP, "saveInvstd", args.saveInvstd);
  if ((args as { outputMask?: unknown }).outputMask === null) check.missing(OP, "outputMask");
  const { training, eps, outputMask, version } = check.parseArguments(OP, scalarsSchema, args);
  const mask: [boolean, boolean, boolean] = [!!outputMask[0], !!outputMask[1], !!outputMask[2]];
  const stats = { weight, runningMean, runningVar, saveMean, saveInvstd };
  const empty = input.numel === 0 || gradOut.numel === 0;
  const channels = input.rank >= 2 ? input.shape[1] : 0;
  let given: { gradInput?: Tensor; gradWeight?: Tensor; gradBias?: Tensor };
  if (empty) {
    // input or gradOut empty: workspace 0, SUCCESS, before every other check.
    given = {
      gradInput: check.requestedOutput(OP, "gradInput", args.out, mask[0]),
      gradWeight: check.requestedOutput(OP, "gradWeight", args.out, mask[1]),
      gradBias: check.requestedOutput(OP, "gradBias", args.out, mask[2]),
    };
  } else {
    given = checkParams(args, gradOut, input, stats, outputMask, mask, training);
  }
  const { gradInput, gradWeight, gradBias } = given;
  check.checkWrites(OP, { gradInput, gradWeight, gradBias }, { gradOut, input, ...stats });
  const all = { gradOut, input, ...stats, gradInput, gradWeight, gradBias };
  const { device, backend } = check.placeCall(OP, all);
  const geometry = empty
    ? { outer: 0, channels, inner: 0, perChannel: 0 }
    : channelGeometry(input.shape);
  return {
    device,
    backend,
    plan: { geometry, training, eps, mask, version },
    tensors: { ...stats, gradOut, input },
    given,
    channels,
    gradDType: weight?.dtype ?? input.dtype,
    empty,
  };
}

/** CheckParams (CheckMaskNotNull, the dtype, format and shape checks), then what the run needs. */
function checkParams(
  args: FastBatchNormBackwardArgs,
  gradOut: Tensor,
  input: Tensor,
  stats: Record<string, Tensor | undefined>,
  outputMask: readonly boolean[],
  mask: readonly [boolean, boolean, boolean],
  training: boolean,
): { gradInput?: Tensor; gradWeight?: Tensor; gradBias?: Tensor } {
  // CheckMaskNotNull: every failure is ACLNN_ERR_PARAM_NULLPTR.
  if (outputMask.length < 3) {
    const why = outputMask.length === 0
      ? "size should not be less than 1, and"
      : `has ${outputMask.length} entries, but CANN reads outputMask[1] and [2] regardless, so it`;
    check.missing(OP, "outputMask", `${why} needs 3 entries (gradInput, gradWeight, gradBias)`);
  }
  const gradInput = check.requestedOutput(OP, "gradInput", args.out, mask[0]);
  const gradWeight = check.requestedOutput(OP, "gradWeight", args.out, mask[1]);
  const gradBias = check.requestedOutput(OP, "gradBias", args.out, mask[2]);
  // CheckDtypeValid, CheckGradDtypeValid, CheckOtherDtypeValid: list membership only.
  check.checkDType(OP, "gradOut", gradOut, FLOAT_DTYPES);
  check.checkDType(OP, "input", input, FLOAT_DTYPES);
  check.checkSameDType(OP, "input", input, "gradOut", gradOut);
  for (const [name, t] of Object.entries({ gradInput, gradWeight, gradBias, ...stats })) {
    if (t) check.checkDType(OP, name, t, FLOAT_DTYPES);
  }
  // CheckFormat has nothing to refuse here: this package labels formats by rank alone.
  // CheckShape.
  check.checkRank(OP, "input", input, 2, 8);
  check.checkRank(OP, "gradOut", gradOut, 2, 8);
  check.checkShape(OP, "gradOut", gradOut, input.shape, "input");
  if (gradInput) {
    check.checkRank(OP, "gradInput", gradInput, 2, 8);
    check.checkShape(OP, "gradInput", gradInput, gradOut.shape, "gradOut");
  }
  // CheckOtherShape: weight, runningMean, runningVar exactly [C].
  const channels = input.shape[1];
  for (const name of ["weight", "runningMean", "runningVar"]) {
    const t = stats[name];
    if (t) check.checkPerChannelShape(OP, name, t, channels, false);
  }
  // Not checked by CANN, read by its kernel (training): C saved statistics.
  if (training) {
    for (const name of ["saveMean", "saveInvstd"]) {
      const t = stats[name];
      if (t && t.numel !== channels) {
        check.invalid(OP, name, `must hold C = ${channels} elements (has ${t.numel})`);
      }
    }
  }
  // FastBatchNormPost / ...WeightAndBiasPost: l0op::ViewCopy of results of input's dtype and [C].
  if (gradInput && gradInput.dtype !== input.dtype) {
    tilingFailure(
      OP,
      INNER_NULLPTR,
      "gradInput",
      `dtype ${gradInput.dtype} must be input's ${input.dtype}: l0op::ViewCopy copies a ` +
        "gradient of input's dtype into it",
    );
  }
  if (gradWeight) checkViewCopy(OP, "gradWeight", gradWeight, [channels]);
  if (gradBias) checkViewCopy(OP, "gradBias", gradBias, [channels]);
  return { gradInput, gradWeight, gradBias };
}
