/**
 * aclnnBatchNormGatherStatsWithCounts: combines the per-rank statistics of SyncBatchNorm
 * (`mean`/`invstd` of shape `[W, C]` from {@linkcode batchNormStats} on each of W ranks, and
 * the element count per channel of each rank, `counts` `[W]`) into the global mean and
 * invstd, and updates the running statistics in place.
 *
 * Per channel, with n_w = counts[w], var_w = 1/invstd[w]^2 - eps and n = sum(n_w):
 *
 * ```
 * mean   = sum(n_w * mean_w) / n
 * var    = sum(n_w * (var_w + (mean_w - mean)^2)) / n          (biased)
 * invstd = 1 / sqrt(var + eps)
 * runningMean = (1 - momentum) * runningMean + momentum * mean
 * runningVar  = (1 - momentum) * runningVar  + momentum * var * n / (n - 1)   (unbiased)
 * ```
 *
 * This is PyTorch's `batch_norm_gather_stats_with_counts`; the aclnn documentation writes
 * the running update with Var[x], the unbiased estimate.
 *
 * @example
 * ```ts
 * import { batchNormGatherStatsWithCounts, Tensor } from "@aclnn/norm";
 * const r = batchNormGatherStatsWithCounts({
 *   input: Tensor.zeros([2, 2]),
 *   mean: Tensor.fromArray([0, 1, 2, 3], [2, 2]),
 *   invstd: Tensor.fromArray([1, 1, 1, 1], [2, 2]),
 *   counts: Tensor.fromArray([1, 3], [2]),
 *   momentum: 0.1,
 * });
 * console.log(r.mean.toArray()); // [1.5, 2.5]
 * ```
 *
 * @module
 */

import { z } from "./zod.ts";
import type { BatchNormGatherStatsPlan, BatchNormGatherStatsTensors } from "../backends/mod.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import { formatShape } from "../tensor/layout.ts";
import { Tensor } from "../tensor/tensor.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnBatchNormGatherStatsWithCounts";

/** Preallocated outputs of {@linkcode batchNormGatherStatsWithCounts} (CANN meanAll/invstdAll). */
export interface BatchNormGatherStatsWithCountsOut {
  /** Receives the global mean: C elements, float32/float16/bfloat16. */
  mean?: Tensor | null;
  /** Receives the global 1/sqrt(biased variance + eps): C elements. */
  invstd?: Tensor | null;
}

/** Arguments of {@linkcode batchNormGatherStatsWithCounts} (names as in CANN). */
export interface BatchNormGatherStatsWithCountsArgs {
  /** This rank's x: rank 2-8, channel = dim 1. Only its shape (C) is used. */
  input: check.MaybeTensor;
  /** Per-rank means, `[W, C]`. */
  mean: check.MaybeTensor;
  /** Per-rank 1/sqrt(biased variance + eps), `[W, C]`. */
  invstd: check.MaybeTensor;
  /** Running mean, C elements; updated in place when given. */
  runningMean?: check.MaybeTensor;
  /** Running (unbiased) variance, C elements; updated in place when given. */
  runningVar?: check.MaybeTensor;
  /** Weight of the new statistics in the running update. Default 0.1. */
  momentum?: number;
  /** The eps the per-rank invstd were computed with (also used for the global one). Default 1e-5. */
  eps?: number;
  /** Elements per channel on each rank, `[W]` (float32/float16/bfloat16). */
  counts: check.MaybeTensor;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: BatchNormGatherStatsWithCountsOut;
}

/**
 * Results of {@linkcode batchNormGatherStatsWithCounts}; `using` frees the outputs the call
 * allocated.
 */
export interface BatchNormGatherStatsWithCountsResult extends Disposable {
  /** Global per-channel mean, `[C]` in `mean`'s dtype unless given in `out`. */
  mean: Tensor;
  /** Global per-channel invstd, `[C]` in `mean`'s dtype unless given in `out`. */
  invstd: Tensor;
}

const scalarsSchema = z.object({
  momentum: check.finiteNumber.default(0.1),
  eps: check.epsilon,
});

/**
 * Combines per-rank BatchNorm statistics into global ones as aclnnBatchNormGatherStatsWithCounts
 * does, on the CPU or on the NPU the tensors live on, updating runningMean/runningVar in place.
 *
 * Validation (aclnnBatchNormGatherStatsWithCounts documentation): 161001 when input, mean,
 * invstd or counts is missing, or an output is given as `null` in `out`; 161002 when a
 * tensor is not float32/float16/bfloat16, input's rank is outside 2-8, mean or invstd is not
 * rank 2, counts is not rank 1, the first dims of mean, invstd and counts differ, dim 1 of
 * mean or invstd is not C, runningMean/runningVar/outputs do not have C elements, or
 * momentum/eps are not finite numbers.
 *
 * @example
 * ```ts
 * import { batchNormGatherStatsWithCounts, Tensor } from "@aclnn/norm";
 * const runningMean = Tensor.zeros([3]);
 * const runningVar = Tensor.ones([3]);
 * const { mean, invstd } = batchNormGatherStatsWithCounts({
 *   input: Tensor.zeros([4, 3]),
 *   mean: Tensor.random([2, 3], { seed: 1 }),
 *   invstd: Tensor.full([2, 3], 2),
 *   counts: Tensor.fromArray([4, 4], [2]),
 *   runningMean,
 *   runningVar,
 *   momentum: 0.1,
 *   eps: 1e-5,
 * });
 * console.log(mean.shape, invstd.shape, runningMean.toArray()); // [3] [3] [...]
 * ```
 */
export function batchNormGatherStatsWithCounts(
  args: BatchNormGatherStatsWithCountsArgs,
): BatchNormGatherStatsWithCountsResult {
  return call(args);
}

/** What validation established for one set of argument values. */
type Validated = PlannedCall<
  "mean" | "invstd",
  BatchNormGatherStatsPlan,
  BatchNormGatherStatsTensors,
  Omit<BatchNormGatherStatsTensors, "meanAll" | "invstdAll">
>;

const call = defineOperator<
  BatchNormGatherStatsWithCountsArgs,
  "mean" | "invstd",
  Validated,
  BatchNormGatherStatsWithCountsResult
>({
  op: OP,
  args: ["input", "mean", "invstd", "runningMean", "runningVar", "momentum", "eps", "counts"],
  outputs: {
    mean: (v) => Tensor.empty([v.plan.channels], v.tensors.mean.dtype, v.device),
    invstd: (v) => Tensor.empty([v.plan.channels], v.tensors.mean.dtype, v.device),
  },
  validate,
  run: (v, o) => {
    checkCounts(v.tensors.counts);
    v.backend.batchNormGatherStatsWithCounts(v.plan, {
      ...v.tensors,
      meanAll: o.mean!,
      invstdAll: o.invstd!,
    });
  },
});

/**
 * counts are element counts: finite and >= 0 (a negative count gives silently wrong global
 * statistics). Their values can change between calls with the same tensor, so this runs on
 * every call; on an NPU it reads the W values back (a synchronisation).
 */
function checkCounts(counts: Tensor): void {
  const values = counts.toFloat64Array();
  for (let w = 0; w < values.length; w++) {
    if (!(values[w] >= 0) || !Number.isFinite(values[w])) {
      check.invalid(OP, "counts", `[${w}] is ${values[w]}; counts must be finite and >= 0`);
    }
  }
}

function validate(args: BatchNormGatherStatsWithCountsArgs): Validated {
  const input = check.requireTensor(OP, "input", args.input);
  const mean = check.requireTensor(OP, "mean", args.mean);
  const invstd = check.requireTensor(OP, "invstd", args.invstd);
  const counts = check.requireTensor(OP, "counts", args.counts);
  const runningMean = check.optionalTensor(OP, "runningMean", args.runningMean);
  const runningVar = check.optionalTensor(OP, "runningVar", args.runningVar);
  const { momentum, eps } = check.parseArguments(OP, scalarsSchema, args);
  // The outputs are named out.mean / out.invstd so that messages tell them from the inputs.
  const meanAll = check.requestedOutput(OP, "out.mean", { "out.mean": args.out?.mean }, true);
  const invstdAll = check.requestedOutput(
    OP,
    "out.invstd",
    { "out.invstd": args.out?.invstd },
    true,
  );

  const all = {
    input,
    mean,
    invstd,
    runningMean,
    runningVar,
    counts,
    "out.mean": meanAll,
    "out.invstd": invstdAll,
  };
  for (const [name, t] of Object.entries(all)) if (t) check.checkDType(OP, name, t, FLOAT_DTYPES);
  check.checkRank(OP, "input", input, 2, 8);
  check.checkRank(OP, "mean", mean, 2, 2);
  check.checkRank(OP, "invstd", invstd, 2, 2);
  check.checkRank(OP, "counts", counts, 1, 1);
  const W = mean.shape[0];
  if (invstd.shape[0] !== W) {
    check.invalid(OP, "invstd", `dim 0 (${invstd.shape[0]}) must equal mean dim 0 (${W})`);
  }
  if (counts.shape[0] !== W) {
    check.invalid(OP, "counts", `dim 0 (${counts.shape[0]}) must equal mean dim 0 (${W})`);
  }
  const channels = input.shape[1];
  for (const [name, t] of Object.entries({ mean, invstd })) {
    if (t.shape[1] !== channels) {
      check.invalid(
        OP,
        name,
        `dim 1 of shape ${formatShape(t.shape)} must equal C = ${channels} (input dim 1)`,
      );
    }
  }
  for (const [name, t] of Object.entries({ runningMean, runningVar })) {
    if (t) check.checkPerChannelShape(OP, name, t, channels);
  }
  if (meanAll) check.checkPerChannelShape(OP, "out.mean", meanAll, channels);
  if (invstdAll) check.checkPerChannelShape(OP, "out.invstd", invstdAll, channels);
  // The running statistics are written in place: nothing else may share their memory.
  check.checkWrites(
    OP,
    { "out.mean": meanAll, "out.invstd": invstdAll, runningMean, runningVar },
    { input, mean, invstd, counts },
  );
  const { device, backend } = check.placeCall(OP, all);

  return {
    device,
    backend,
    plan: { channels, ranks: W, momentum, eps },
    tensors: { input, mean, invstd, runningMean, runningVar, counts },
    given: { mean: meanAll, invstd: invstdAll },
  };
}
