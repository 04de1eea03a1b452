/**
 * aclnnBatchNormStats: the per-channel mean and 1/sqrt(biased variance + eps) of one rank's
 * data, the first step of the SyncBatchNorm forward pass.
 *
 * Per channel c (view dim 1) with M = numel(input) / C elements:
 *
 * ```
 * mean[c]   = sum(x) / M
 * invstd[c] = 1 / sqrt(sum((x - mean)^2) / M + eps)
 * ```
 *
 * Both outputs are float32 `[C]` whatever the input dtype (the documented rule). An empty
 * batch (M = 0) gives zero-filled statistics.
 *
 * @example
 * ```ts
 * import { batchNormStats, Tensor } from "@aclnn/norm";
 * const { mean, invstd } = batchNormStats({ input: Tensor.fromArray([1, 2, 3, 4, 5, 6], [2, 3]) });
 * console.log(mean.toArray(), invstd.toArray()); // [2.5, 3.5, 4.5] [0.66666..., 0.66666..., 0.66666...]
 * ```
 *
 * @module
 */

import { z } from "./zod.ts";
import { type BatchNormStatsPlan, channelGeometry } from "../backends/mod.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import { Tensor } from "../tensor/tensor.ts";
import { defineOperator, type ValidatedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnBatchNormStats";

/** Preallocated outputs of {@linkcode batchNormStats}: float32, C elements, rank 1. */
export interface BatchNormStatsOut {
  /** Receives the per-channel mean. */
  mean?: Tensor | null;
  /** Receives the per-channel 1/sqrt(biased variance + eps). */
  invstd?: Tensor | null;
}

/** Arguments of {@linkcode batchNormStats} (names as in CANN). */
export interface BatchNormStatsArgs {
  /** x: rank 2-8, float32/float16/bfloat16, channel = dim 1 (must not be 0). */
  input: check.MaybeTensor;
  /** Added to the biased variance. Default 1e-5. */
  eps?: number;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: BatchNormStatsOut;
}

/** Results of {@linkcode batchNormStats}; `using` frees the outputs the call allocated. */
export interface BatchNormStatsResult extends Disposable {
  /** Per-channel mean, float32 `[C]`. */
  mean: Tensor;
  /** Per-channel 1/sqrt(biased variance + eps), float32 `[C]`. */
  invstd: Tensor;
}

const scalarsSchema = z.object({ eps: check.epsilon });

/**
 * Computes one rank's per-channel mean and invstd as aclnnBatchNormStats does, on the CPU or
 * on the NPU the input lives on.
 *
 * Validation (aclnnBatchNormStats documentation): 161001 when input is missing or an output
 * is given as `null` in `out`; 161002 when input is not float32/float16/bfloat16, when
 * mean/invstd are not float32, when input's rank is outside 2-8, when mean/invstd are not
 * rank 1 with C elements, when C (input dim 1) is 0, or when eps is not a finite number.
 *
 * @example
 * ```ts
 * import { batchNormStats, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([8, 4, 5, 5], { seed: 1, dtype: "float16" });
 * const { mean, invstd } = batchNormStats({ input: x, eps: 1e-5 });
 * console.log(mean.dtype, mean.shape, invstd.shape); // float32 [4] [4]
 * ```
 */
export function batchNormStats(args: BatchNormStatsArgs): BatchNormStatsResult {
  return call(args);
}

type Output = "mean" | "invstd";

/** What validation established for one set of argument values. */
interface Validated extends ValidatedCall<Output> {
  readonly plan: BatchNormStatsPlan;
  readonly input: Tensor;
}

const call = defineOperator<BatchNormStatsArgs, Output, Validated, BatchNormStatsResult>({
  op: OP,
  args: ["input", "eps"],
  outputs: {
    mean: (v) => Tensor.empty([v.plan.geometry.channels], "float32", v.device),
    invstd: (v) => Tensor.empty([v.plan.geometry.channels], "float32", v.device),
  },
  validate,
  run: (v, o) =>
    v.backend.batchNormStats(v.plan, { input: v.input, mean: o.mean!, invstd: o.invstd! }),
});

function validate(args: BatchNormStatsArgs): Validated {
  const input = check.requireTensor(OP, "input", args.input);
  const { eps } = check.parseScalars(OP, scalarsSchema, { eps: args.eps });
  const mean = check.requestedOutput(OP, "mean", args.out, true);
  const invstd = check.requestedOutput(OP, "invstd", args.out, true);

  check.checkDType(OP, "input", input, FLOAT_DTYPES);
  if (mean) check.checkDType(OP, "mean", mean, ["float32"]);
  if (invstd) check.checkDType(OP, "invstd", invstd, ["float32"]);
  check.checkRank(OP, "input", input, 2, 8);
  const channels = input.shape[1];
  for (const [name, t] of Object.entries({ mean, invstd })) {
    if (!t) continue;
    check.checkPerChannelShape(OP, name, t, channels);
  }
  check.checkChannelsNonZero(OP, channels);
  check.checkWrites(OP, { mean, invstd }, { input });
  const { device, backend } = check.placeCall(OP, { input, mean, invstd });
  return {
    device,
    backend,
    plan: { geometry: channelGeometry(input.shape), eps },
    input,
    given: { mean, invstd },
  };
}
