/**
 * aclnnBatchNormReduce: the per-channel sum and sum of squares of a 4-D NCHW tensor, the
 * statistics step of a BatchNorm training pass split across kernels.
 *
 * Per channel c (x dim 1), over the N·H·W elements of the channel:
 *
 * ```
 * sum[c]       = Σ x
 * squareSum[c] = Σ x²
 * ```
 *
 * Both outputs are float32 `[C]` whatever x's dtype (float32, float16, bfloat16). An empty x
 * (or an empty given output) fills both outputs with 0 before any other check, as CANN does.
 *
 * @example
 * ```ts
 * import { batchNormReduce, Tensor } from "@aclnn/norm";
 * const x = Tensor.fromArray([1, 2, 3, 4, 5, 6, 7, 8], [2, 2, 1, 2]);
 * const { sum, squareSum } = batchNormReduce({ x });
 * console.log(sum.toArray(), squareSum.toArray()); // [14, 22] [66, 138]
 * ```
 *
 * @module
 */

import type { BatchNormReducePlan, BatchNormReduceTensors } from "../backends/mod.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import { formatShape } from "../tensor/layout.ts";
import { Tensor } from "../tensor/tensor.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnBatchNormReduce";

/** Preallocated outputs of {@linkcode batchNormReduce}: float32, rank 1, C elements. */
export interface BatchNormReduceOut {
  /** Receives the per-channel sum of x. */
  sum?: Tensor | null;
  /** Receives the per-channel sum of x². */
  squareSum?: Tensor | null;
}

/** Arguments of {@linkcode batchNormReduce} (names as in CANN). */
export interface BatchNormReduceArgs {
  /** x: 4-D `[N, C, H, W]`, float32/float16/bfloat16. */
  x: check.MaybeTensor;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: BatchNormReduceOut;
}

/** Results of {@linkcode batchNormReduce}; `using` frees the outputs the call allocated. */
export interface BatchNormReduceResult extends Disposable {
  /** Per-channel Σx, float32 `[C]`. */
  sum: Tensor;
  /** Per-channel Σx², float32 `[C]`. */
  squareSum: Tensor;
}

/**
 * Computes the per-channel sum and sum of squares of x as aclnnBatchNormReduce does, on the
 * CPU or on the NPU x lives on.
 *
 * Validation, in the order of hicann/ops-nn `norm/bn_training_reduce/op_api/
 * aclnn_batch_norm_reduce.cpp` (e5c3fa9): 161001 when x is missing or an output is given as
 * `null`; then, when x, sum or squareSum holds no element, both outputs are zero-filled and
 * nothing else is checked; 161002 when x is not float32/float16/bfloat16 or an output is not
 * float32, when x's format is not NCHW (this package labels a 4-D tensor NCHW and any other
 * rank otherwise, so x must be 4-D) or an output's is not ND (rank 3-5 is labelled NCL, NCHW,
 * NCDHW), when an output is not rank 1, and when an output's length is not C.
 *
 * @example
 * ```ts
 * import { batchNormReduce, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([4, 3, 5, 5], { seed: 1, dtype: "bfloat16" });
 * const { sum, squareSum } = batchNormReduce({ x });
 * console.log(sum.dtype, sum.shape, squareSum.shape); // float32 [3] [3]
 * ```
 */
export function batchNormReduce(args: BatchNormReduceArgs): BatchNormReduceResult {
  return call(args);
}

type Output = "sum" | "squareSum";

/** What validation established for one set of argument values. */
type Validated = PlannedCall<Output, BatchNormReducePlan, BatchNormReduceTensors>;

const call = defineOperator<BatchNormReduceArgs, Output, Validated, BatchNormReduceResult>({
  op: OP,
  args: ["x"],
  outputs: {
    sum: (v) => Tensor.empty([v.plan.channels], "float32", v.device),
    squareSum: (v) => Tensor.empty([v.plan.channels], "float32", v.device),
  },
  validate,
  run: (v, o) =>
    v.backend.batchNormReduce(v.plan, { ...v.tensors, sum: o.sum!, squareSum: o.squareSum! }),
});

/** ND is the only format of an output: this package labels ranks 3, 4 and 5 otherwise. */
function checkOutputFormat(name: string, t: Tensor): void {
  if (t.rank >= 3 && t.rank <= 5) {
    check.invalid(
      OP,
      name,
      `format must be ND (a rank-${t.rank} tensor is labelled NCL/NCHW/NCDHW)`,
    );
  }
}

function validate(args: BatchNormReduceArgs): Validated {
  // CheckNotNull (:46-52).
  const x = check.requireTensor(OP, "x", args.x);
  const sum = check.requestedOutput(OP, "sum", args.out, true);
  const squareSum = check.requestedOutput(OP, "squareSum", args.out, true);
  const channels = x.rank >= 2 ? x.shape[1] : 0;
  // Empty x, sum or squareSum (:186-194): zeros, SUCCESS, before every other check.
  const empty = x.numel === 0 || sum?.numel === 0 || squareSum?.numel === 0;
  if (!empty) {
    // CheckDtypeValid (:54-60).
    check.checkDType(OP, "x", x, FLOAT_DTYPES);
    if (sum) check.checkDType(OP, "sum", sum, ["float32"]);
    if (squareSum) check.checkDType(OP, "squareSum", squareSum, ["float32"]);
    // CheckFormat (:62-84): x NCHW or NHWC, sum and squareSum ND.
    if (x.rank !== 4) {
      check.invalid(
        OP,
        "x",
        `format must be NCHW or NHWC: x must be 4-D (shape ${formatShape(x.shape)})`,
      );
    }
    if (sum) checkOutputFormat("sum", sum);
    if (squareSum) checkOutputFormat("squareSum", squareSum);
    // CheckShape (:86-117): rank 1, then C elements.
    for (const [name, t] of Object.entries({ sum, squareSum })) {
      if (t && t.rank !== 1) check.invalid(OP, name, `rank ${t.rank} must be 1`);
    }
    for (const [name, t] of Object.entries({ sum, squareSum })) {
      if (t && t.shape[0] !== channels) {
        check.invalid(OP, name, `size ${t.shape[0]} must equal C = ${channels} (x dim 1)`);
      }
    }
  }
  check.checkWrites(OP, { sum, squareSum }, { x });
  const { device, backend } = check.placeCall(OP, { x, sum, squareSum });
  return {
    device,
    backend,
    plan: { channels, empty },
    tensors: { x },
    given: { sum, squareSum },
  };
}
