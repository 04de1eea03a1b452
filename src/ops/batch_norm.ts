/**
 * aclnnBatchNorm: the BatchNorm forward pass, in training mode (batch statistics, running
 * statistics updated in place) or evaluation mode (running statistics).
 *
 * Per channel c (view dim 1), with M = numel(input) / C:
 *
 * ```
 * training:  mean = sum(x) / M,  var = sum((x - mean)^2) / M          (biased)
 *            runningMean = (1 - momentum) * runningMean + momentum * mean
 *            runningVar  = (1 - momentum) * runningVar  + momentum * var * M / (M - 1)
 *            saveMean = mean, saveInvstd = 1 / sqrt(var + eps)
 * eval:      mean = runningMean (0 when absent), var = runningVar (1 when absent)
 * output = (x - mean) / sqrt(var + eps) * weight + bias
 * ```
 *
 * saveMean/saveInvstd are outputs of the training mode only: in evaluation mode they are not
 * validated or written, and without `out` they are empty `[0]` tensors (as torch_npu
 * allocates them). Note that real Atlas A2/A3 chips write the *variance* to saveInvstd
 * (documented per product); this package, like PyTorch and Ascend 950, defines it as
 * 1/sqrt(var + eps), which is what {@linkcode batchNormBackward} expects.
 *
 * @example
 * ```ts
 * import { batchNorm, Tensor } from "@aclnn/norm";
 * const r = batchNorm({
 *   input: Tensor.fromArray([1, 2, 3, 4], [2, 2]),
 *   training: true,
 * });
 * // eps (default 1e-5) keeps the outputs just inside ±1.
 * console.log(r.output.toArray(), r.saveMean.toArray()); // [-0.99999..., -0.99999..., 0.99999..., 0.99999...] [2, 3]
 * ```
 *
 * @module
 */

import { z } from "./zod.ts";
import { type BatchNormPlan, type BatchNormTensors, channelGeometry } from "../backends/mod.ts";
import { formatShape } from "../tensor/layout.ts";
import { Tensor } from "../tensor/tensor.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnBatchNorm";

/** Preallocated outputs of {@linkcode batchNorm}. */
export interface BatchNormOut {
  /** Receives y: input's shape and dtype (any strides). */
  output?: Tensor | null;
  /** Receives the batch mean (training mode): C elements. */
  saveMean?: Tensor | null;
  /** Receives the batch 1/sqrt(var + eps) (training mode): C elements. */
  saveInvstd?: Tensor | null;
}

/** Arguments of {@linkcode batchNorm} (names as in CANN). */
export interface BatchNormArgs {
  /** x: rank 2-8, channel = dim 1. */
  input: check.MaybeTensor;
  /** gamma, C elements; all ones when absent. */
  weight?: check.MaybeTensor;
  /** beta, C elements; zeros when absent. */
  bias?: check.MaybeTensor;
  /** Running mean, C elements: used in eval mode, updated in place in training mode. */
  runningMean?: check.MaybeTensor;
  /** Running variance, C elements: used in eval mode, updated in place (unbiased) in training. */
  runningVar?: check.MaybeTensor;
  /** true: normalize with the batch statistics; false: with the running statistics. */
  training: boolean;
  /** Weight of the batch statistics in the running update. Default 0.1. */
  momentum?: number;
  /** Added to the variance. Default 1e-5. */
  eps?: number;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: BatchNormOut;
}

/** Results of {@linkcode batchNorm}; `using` frees the outputs the call allocated. */
export interface BatchNormResult extends Disposable {
  /** y, input's shape and dtype. */
  output: Tensor;
  /** Batch mean per channel (training); an empty tensor in eval mode unless given in `out`. */
  saveMean: Tensor;
  /** Batch 1/sqrt(var + eps) per channel (training); empty in eval mode unless given. */
  saveInvstd: Tensor;
}

const scalarsSchema = z.object({
  training: check.trainingFlag,
  momentum: check.finiteNumber.default(0.1),
  eps: check.epsilon,
});

/**
 * Runs the BatchNorm forward pass as aclnnBatchNorm does, on the CPU or on the NPU the
 * tensors live on.
 *
 * Validation (aclnnBatchNorm documentation): 161001 when input is missing, or when
 * `out.output` is `null`, or (training) `out.saveMean`/`out.saveInvstd` is `null`; 161002
 * when a tensor is not float32/float16/bfloat16, output's dtype or shape differs from
 * input's, input's rank is outside 2-8, weight/bias/runningMean/runningVar (and, in
 * training, saveMean/saveInvstd) do not have C elements, or training/momentum/eps have the
 * wrong type.
 *
 * Without `out`: output has input's shape, dtype and memory layout (channels-last in,
 * channels-last out); in training, saveMean/saveInvstd are float32 `[C]` (as torch_npu
 * allocates them). An empty batch leaves the running statistics unchanged and gives saveMean 0
 * and saveInvstd NaN, as CANN writes them.
 *
 * @example
 * ```ts
 * import { batchNorm, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([8, 3, 4, 4], { seed: 1 });
 * const runningMean = Tensor.zeros([3]);
 * const runningVar = Tensor.ones([3]);
 * const { output, saveMean, saveInvstd } = batchNorm({
 *   input: x, runningMean, runningVar, training: true, momentum: 0.1, eps: 1e-5,
 * });
 * console.log(output.shape, saveMean.shape, runningMean.toArray()); // [8, 3, 4, 4] [3] [...]
 * ```
 */
export function batchNorm(args: BatchNormArgs): BatchNormResult {
  return call(args);
}

type Output = "output" | "saveMean" | "saveInvstd";

/** What validation established for one set of argument values. */
type Validated = PlannedCall<Output, BatchNormPlan, BatchNormTensors>;

/**
 * saveMean/saveInvstd in training: float32 [C] (as torch_npu allocates them; the kernels write
 * every element, so not zero-filled first). In evaluation they are not outputs: what the
 * caller gave, else empty tensors.
 */
function savedStatistic(v: Validated): Tensor {
  const input = v.tensors.input;
  return v.plan.training
    ? Tensor.empty([v.plan.geometry.channels], "float32", v.device)
    : Tensor.zeros([0], input.dtype, v.device);
}

const call = defineOperator<BatchNormArgs, Output, Validated, BatchNormResult>({
  op: OP,
  args: ["input", "weight", "bias", "runningMean", "runningVar", "training", "momentum", "eps"],
  outputs: {
    output: (v) => Tensor.emptyLike(v.tensors.input, v.tensors.input.dtype, v.device),
    saveMean: savedStatistic,
    saveInvstd: savedStatistic,
  },
  validate,
  run: (v, o) =>
    v.backend.batchNorm(v.plan, {
      ...v.tensors,
      output: o.output!,
      saveMean: o.saveMean!,
      saveInvstd: o.saveInvstd!,
    }),
});

function validate(args: BatchNormArgs): Validated {
  const input = check.requireTensor(OP, "input", args.input);
  const weight = check.optionalTensor(OP, "weight", args.weight);
  const bias = check.optionalTensor(OP, "bias", args.bias);
  const runningMean = check.optionalTensor(OP, "runningMean", args.runningMean);
  const runningVar = check.optionalTensor(OP, "runningVar", args.runningVar);
  const { training, momentum, eps } = check.parseArguments(OP, scalarsSchema, args);
  const output = check.requestedOutput(OP, "output", args.out, true);
  // Not outputs in eval mode: what the caller gave is kept (unwritten, unvalidated).
  const given = (v: unknown) => v instanceof Tensor ? v : undefined;
  const saveMean = training
    ? check.requestedOutput(OP, "saveMean", args.out, true)
    : given(args.out?.saveMean);
  const saveInvstd = training
    ? check.requestedOutput(OP, "saveInvstd", args.out, true)
    : given(args.out?.saveInvstd);

  const perChannel = {
    weight,
    bias,
    runningMean,
    runningVar,
    saveMean: training ? saveMean : undefined,
    saveInvstd: training ? saveInvstd : undefined,
  };
  const all = { input, ...perChannel, output };
  check.checkChannelData(OP, all, input, output);
  const channels = input.shape[1];
  const valuesPerChannel = channels === 0 ? 0 : input.numel / channels;
  if (training && valuesPerChannel === 1) {
    // PyTorch refuses it too: the running variance would divide by M - 1 = 0 and become NaN.
    check.invalid(
      OP,
      "input",
      `has 1 value per channel (shape ${formatShape(input.shape)}); training needs more than 1 ` +
        "value per channel, as PyTorch requires",
    );
  }
  for (const [name, t] of Object.entries(perChannel)) {
    if (t) check.checkPerChannelShape(OP, name, t, channels);
  }
  // Training writes the saved and (in place) the running statistics; evaluation reads them.
  check.checkWrites(
    OP,
    training ? { output, saveMean, saveInvstd, runningMean, runningVar } : { output },
    training ? { input, weight, bias } : { input, weight, bias, runningMean, runningVar },
  );
  const { device, backend } = check.placeCall(OP, all);

  return {
    device,
    backend,
    plan: { geometry: channelGeometry(input.shape), training, momentum, eps },
    tensors: { input, weight, bias, runningMean, runningVar },
    given: { output, saveMean, saveInvstd },
  };
}
