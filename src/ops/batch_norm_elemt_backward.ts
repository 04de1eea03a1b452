/**
 * aclnnBatchNormElemtBackward: the element-wise half of the SyncBatchNorm backward pass. Given
 * the global statistics and the all-reduced sums of {@linkcode batchNormReduceBackward}, it
 * computes each rank's dL/dx. Per channel c, with M = sum(counter) the global element count:
 *
 * ```
 * gradInput = w * invstd * (dy - sumDy / M - (x - mean) * invstd^2 * sumDyXmu / M)
 * ```
 *
 * @example
 * ```ts
 * import { batchNormElemtBackward, Tensor } from "@aclnn/norm";
 * const g = batchNormElemtBackward({
 *   gradOut: Tensor.ones([2, 2]),
 *   input: Tensor.fromArray([0, 1, 2, 3], [2, 2]),
 *   mean: Tensor.fromArray([1, 2], [2]),
 *   invstd: Tensor.ones([2]),
 *   sumDy: Tensor.fromArray([2, 2], [2]),
 *   sumDyXmu: Tensor.zeros([2]),
 *   counter: Tensor.fromArray([2], [1], "int32"),
 * });
 * console.log(g.toArray()); // [0, 0, 0, 0]
 * ```
 *
 * @module
 */

import {
  type BatchNormElemtBackwardPlan,
  type BatchNormElemtBackwardTensors,
  channelGeometry,
} from "../backends/mod.ts";
import { type DType, FLOAT_DTYPES } from "../tensor/dtype.ts";
import { Tensor } from "../tensor/tensor.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnBatchNormElemtBackward";

/** The dtypes `counter` may have (aclnnBatchNormElemtBackward documentation). */
const COUNTER_DTYPES: readonly DType[] = ["int32", "float16", "float32"];

/** Preallocated output of {@linkcode batchNormElemtBackward}. */
export interface BatchNormElemtBackwardOut {
  /** Receives dL/dx: input's shape, float32/float16/bfloat16 (any strides). */
  gradInput?: Tensor | null;
}

/** Arguments of {@linkcode batchNormElemtBackward} (names as in CANN). */
export interface BatchNormElemtBackwardArgs {
  /** dL/dy: input's shape. */
  gradOut: check.MaybeTensor;
  /** x: rank 2-8, channel = dim 1 (must not be 0). */
  input: check.MaybeTensor;
  /** Global per-channel mean, C elements. */
  mean: check.MaybeTensor;
  /** Global per-channel 1/sqrt(var + eps), C elements. */
  invstd: check.MaybeTensor;
  /** gamma, C elements; all ones when absent. */
  weight?: check.MaybeTensor;
  /** All-reduced sum(dy) per channel, C elements. */
  sumDy: check.MaybeTensor;
  /** All-reduced sum(dy * (x - mean)) per channel, C elements. */
  sumDyXmu: check.MaybeTensor;
  /** Element counts (e.g. one per rank), int32/float16/float32; summed to M. */
  counter: check.MaybeTensor;
  /** Preallocated output (validated as aclnn does); allocated when missing. */
  out?: BatchNormElemtBackwardOut;
}

/**
 * Computes dL/dx from global statistics and all-reduced sums as aclnnBatchNormElemtBackward
 * does, on the CPU or on the NPU the tensors live on.
 *
 * Validation (aclnnBatchNormElemtBackward documentation): 161001 when gradOut, input, mean,
 * invstd, sumDy, sumDyXmu or counter is missing, or `out.gradInput` is `null`; 161002 when
 * a tensor is not float32/float16/bfloat16 (counter: int32/float16/float32), input's rank is
 * outside 2-8, counter's rank exceeds 8, C (input dim 1) is 0, gradOut or gradInput does not
 * have input's shape, or mean/invstd/weight/sumDy/sumDyXmu do not have C elements.
 *
 * Without `out`, gradInput has input's shape, dtype and memory layout.
 *
 * @example
 * ```ts
 * import { batchNormElemtBackward, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([4, 3, 5], { seed: 1 });
 * const dy = Tensor.random([4, 3, 5], { seed: 2 });
 * const gradInput = batchNormElemtBackward({
 *   gradOut: dy, input: x,
 *   mean: Tensor.zeros([3]), invstd: Tensor.ones([3]),
 *   sumDy: Tensor.zeros([3]), sumDyXmu: Tensor.zeros([3]),
 *   counter: Tensor.fromArray([10, 10], [2], "int32"),
 * });
 * console.log(gradInput.shape); // [4, 3, 5]
 * ```
 */
export function batchNormElemtBackward(args: BatchNormElemtBackwardArgs): Tensor {
  return call(args).gradInput;
}

/** What validation established for one set of argument values. */
type Validated = PlannedCall<
  "gradInput",
  BatchNormElemtBackwardPlan,
  BatchNormElemtBackwardTensors
>;

const call = defineOperator<
  BatchNormElemtBackwardArgs,
  "gradInput",
  Validated,
  { gradInput: Tensor } & Disposable
>({
  op: OP,
  args: ["gradOut", "input", "mean", "invstd", "weight", "sumDy", "sumDyXmu", "counter"],
  outputs: {
    gradInput: (v) => Tensor.emptyLike(v.tensors.input, v.tensors.input.dtype, v.device),
  },
  validate,
  run: (v, o) =>
    v.backend.batchNormElemtBackward(v.plan, { ...v.tensors, gradInput: o.gradInput! }),
});

function validate(args: BatchNormElemtBackwardArgs): Validated {
  const gradOut = check.requireTensor(OP, "gradOut", args.gradOut);
  const input = check.requireTensor(OP, "input", args.input);
  const mean = check.requireTensor(OP, "mean", args.mean);
  const invstd = check.requireTensor(OP, "invstd", args.invstd);
  const weight = check.optionalTensor(OP, "weight", args.weight);
  const sumDy = check.requireTensor(OP, "sumDy", args.sumDy);
  const sumDyXmu = check.requireTensor(OP, "sumDyXmu", args.sumDyXmu);
  const counter = check.requireTensor(OP, "counter", args.counter);
  const gradInput = check.requestedOutput(OP, "gradInput", args.out, true);

  const perChannel = { mean, invstd, weight, sumDy, sumDyXmu };
  const floats = { gradOut, input, ...perChannel, gradInput };
  for (const [name, t] of Object.entries(floats)) {
    if (t) check.checkDType(OP, name, t, FLOAT_DTYPES);
  }
  check.checkDType(OP, "counter", counter, COUNTER_DTYPES);
  check.checkRank(OP, "input", input, 2, 8);
  check.checkRank(OP, "gradOut", gradOut, 0, 8);
  if (gradInput) check.checkRank(OP, "gradInput", gradInput, 0, 8);
  check.checkRank(OP, "counter", counter, 0, 8);
  const channels = input.shape[1];
  check.checkChannelsNonZero(OP, channels);
  check.checkShape(OP, "gradOut", gradOut, input.shape, "input");
  if (gradInput) check.checkShape(OP, "gradInput", gradInput, input.shape, "input");
  for (const [name, t] of Object.entries(perChannel)) {
    if (t) check.checkPerChannelShape(OP, name, t, channels);
  }
  check.checkWrites(OP, { gradInput }, { gradOut, input, ...perChannel, counter });
  const { device, backend } = check.placeCall(OP, { ...floats, counter });

  return {
    device,
    backend,
    plan: { geometry: channelGeometry(input.shape) },
    tensors: { gradOut, input, mean, invstd, weight, sumDy, sumDyXmu, counter },
    given: { gradInput },
  };
}
