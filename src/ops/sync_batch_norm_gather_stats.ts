/**
 * aclnnSyncBatchNormGatherStats: the global batch statistics of SyncBatchNorm from every
 * device's per-channel sums (`totalSum`, `totalSquareSum`, `[devices, C]`, e.g. from
 * {@linkcode batchNormReduce} gathered over the devices) and element counts (`sampleCount`,
 * `[devices]`), updating the running statistics `mean` and `variance` IN PLACE.
 *
 * Per channel, with n = Σ sampleCount and m = momentum:
 *
 * ```
 * batchMean   = Σ totalSum / n
 * batchVar    = Σ totalSquareSum / n - batchMean²           (biased)
 * batchInvstd = 1 / sqrt(batchVar + eps)
 * mean        ← mean · (1 - m) + batchMean · m
 * variance    ← variance · (1 - m) + batchVar · n / (n - 1) · m
 * ```
 *
 * A total count n of 0 or 1 has no unbiased variance, and the chips differ there (hicann/ops-nn
 * norm/sync_batch_norm_gather_stats: the Ascend 950 kernel, op_kernel/arch35, has no guard; the
 * kernel registered for Atlas A2 and 310P, experimental/.../sync_batch_norm_gather_stats_kernel.h,
 * takes 1/n as 0 when n = 0 and n / (n - 1) · m as m when n ≤ 1). The CPU backend computes as
 * the 950 does: with n = 0 batchMean is ±Inf or NaN, batchInvstd NaN, and the running statistics
 * take them; with n = 1 the running variance becomes Inf (NaN where batchVar is 0). Training
 * needs n ≥ 2 anyway (`batchNorm` refuses one value per channel, as PyTorch does).
 *
 * @example
 * ```ts
 * import { syncBatchNormGatherStats, Tensor } from "@aclnn/norm";
 * const mean = Tensor.zeros([2]);
 * const variance = Tensor.ones([2]);
 * const r = syncBatchNormGatherStats({
 *   totalSum: Tensor.fromArray([4, 8, 6, 4], [2, 2]),
 *   totalSquareSum: Tensor.fromArray([10, 40, 20, 10], [2, 2]),
 *   sampleCount: Tensor.fromArray([2, 2], [2]),
 *   mean,
 *   variance,
 *   momentum: 0.1,
 *   eps: 1e-5,
 * });
 * console.log(r.batchMean.toArray(), mean.toArray()); // [2.5, 3] [0.25, 0.3000...]: float32
 * ```
 *
 * @module
 */

import { z } from "./zod.ts";
import type {
  SyncBatchNormGatherStatsPlan,
  SyncBatchNormGatherStatsTensors,
} from "../backends/mod.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import { Tensor } from "../tensor/tensor.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnSyncBatchNormGatherStats";

/** Preallocated outputs of {@linkcode syncBatchNormGatherStats}: rank 1, C elements. */
export interface SyncBatchNormGatherStatsOut {
  /** Receives the batch mean. */
  batchMean?: Tensor | null;
  /** Receives the batch 1/sqrt(biased variance + eps); batchMean's dtype. */
  batchInvstd?: Tensor | null;
}

/** Arguments of {@linkcode syncBatchNormGatherStats} (names as in CANN). */
export interface SyncBatchNormGatherStatsArgs {
  /** Per-device per-channel Σx, `[devices, C]`. */
  totalSum: check.MaybeTensor;
  /** Per-device per-channel Σx², `[devices, C]`, totalSum's dtype. */
  totalSquareSum: check.MaybeTensor;
  /** Elements per channel on each device, `[devices]` (CANN casts them to int32: truncated). */
  sampleCount: check.MaybeTensor;
  /** Running mean `[C]`, totalSum's dtype: updated in place. */
  mean: check.MaybeTensor;
  /** Running (unbiased) variance `[C]`, totalSum's dtype: updated in place. */
  variance: check.MaybeTensor;
  /** Weight of the batch statistics in the running update (a C float). Default 0.1. */
  momentum?: number;
  /** Added to the batch variance (a C float, > 0). Default 1e-5. */
  eps?: number;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: SyncBatchNormGatherStatsOut;
}

/** Results of {@linkcode syncBatchNormGatherStats}; `using` frees what the call allocated. */
export interface SyncBatchNormGatherStatsResult extends Disposable {
  /** Batch mean `[C]`, totalSum's dtype unless given in `out`. */
  batchMean: Tensor;
  /** Batch invstd `[C]`, totalSum's dtype unless given in `out`. */
  batchInvstd: Tensor;
}

const scalarsSchema = z.object({
  momentum: check.finiteNumber.default(0.1),
  eps: check.epsilon,
});

/**
 * Combines per-device sums into the batch mean and invstd as aclnnSyncBatchNormGatherStats
 * does, on the CPU or on the NPU the tensors live on, updating `mean` and `variance` in place.
 *
 * Validation, in the order of hicann/ops-nn `norm/sync_batch_norm_gather_stats/op_api/
 * aclnn_sync_batch_norm_gather_stats.cpp` (e5c3fa9) CheckParams: 161001 when a tensor is missing
 * or an output is given as `null`; 161002 when a tensor is not float32/float16/bfloat16, when
 * totalSquareSum, mean or variance do not share totalSum's dtype or batchInvstd batchMean's;
 * when totalSum/totalSquareSum are not rank 2 or the others rank 1; when totalSquareSum's
 * dims, sampleCount's length (devices) or the length of mean, variance, batchMean,
 * batchInvstd (C) disagree with totalSum's; then when there is no device (totalSum dim 0 is
 * 0). No channel (C = 0) succeeds and writes nothing. momentum and eps must be finite, eps > 0.
 *
 * @example
 * ```ts
 * import { syncBatchNormGatherStats, Tensor } from "@aclnn/norm";
 * const mean = Tensor.zeros([3]);
 * const variance = Tensor.ones([3]);
 * const { batchMean, batchInvstd } = syncBatchNormGatherStats({
 *   totalSum: Tensor.random([4, 3], { seed: 1 }),
 *   totalSquareSum: Tensor.full([4, 3], 8),
 *   sampleCount: Tensor.full([4], 16),
 *   mean,
 *   variance,
 * });
 * console.log(batchMean.shape, batchInvstd.shape); // [3] [3]
 * ```
 */
export function syncBatchNormGatherStats(
  args: SyncBatchNormGatherStatsArgs,
): SyncBatchNormGatherStatsResult {
  return call(args);
}

type Output = "batchMean" | "batchInvstd";

/** What validation established for one set of argument values. */
type Validated = PlannedCall<Output, SyncBatchNormGatherStatsPlan, SyncBatchNormGatherStatsTensors>;

const call = defineOperator<
  SyncBatchNormGatherStatsArgs,
  Output,
  Validated,
  SyncBatchNormGatherStatsResult
>({
  op: OP,
  args: ["totalSum", "totalSquareSum", "sampleCount", "mean", "variance", "momentum", "eps"],
  outputs: {
    batchMean: (v) => Tensor.empty([v.plan.channels], v.tensors.totalSum.dtype, v.device),
    batchInvstd: (v) => Tensor.empty([v.plan.channels], v.tensors.totalSum.dtype, v.device),
  },
  validate,
  run: (v, o) =>
    v.backend.syncBatchNormGatherStats(v.plan, {
      ...v.tensors,
      batchMean: o.batchMean!,
      batchInvstd: o.batchInvstd!,
    }),
});

function validate(args: SyncBatchNormGatherStatsArgs): Validated {
  // CheckNotNull (:52-62).
  const totalSum = check.requireTensor(OP, "totalSum", args.totalSum);
  const totalSquareSum = check.requireTensor(OP, "totalSquareSum", args.totalSquareSum);
  const sampleCount = check.requireTensor(OP, "sampleCount", args.sampleCount);
  const mean = check.requireTensor(OP, "mean", args.mean);
  const variance = check.requireTensor(OP, "variance", args.variance);
  const batchMean = check.requestedOutput(OP, "batchMean", args.out, true);
  const batchInvstd = check.requestedOutput(OP, "batchInvstd", args.out, true);
  const { momentum, eps } = check.parseArguments(OP, scalarsSchema, args);

  // CheckDtypeValid (:64-90): each in the list (per SoC: the backend's rules), then equal dtypes.
  const all = { totalSum, totalSquareSum, mean, variance, batchMean, batchInvstd };
  for (const [name, t] of Object.entries(all)) if (t) check.checkDType(OP, name, t, FLOAT_DTYPES);
  // sampleCount's list has DT_INT32 too (aclnn_sync_batch_norm_gather_stats.cpp, both lists).
  check.checkDType(OP, "sampleCount", sampleCount, [...FLOAT_DTYPES, "int32"]);
  check.checkSameDType(OP, "totalSquareSum", totalSquareSum, "totalSum", totalSum);
  check.checkSameDType(OP, "mean", mean, "totalSum", totalSum);
  check.checkSameDType(OP, "variance", variance, "totalSum", totalSum);
  // Allocated, batchMean and batchInvstd take totalSum's dtype: equal to each other.
  const outDType = batchMean?.dtype ?? totalSum.dtype;
  if (batchInvstd && batchInvstd.dtype !== outDType) {
    check.invalid(
      OP,
      "batchInvstd",
      `dtype ${batchInvstd.dtype} must equal batchMean dtype ${outDType}`,
    );
  }
  // CheckShape (:122-190): ranks, then every dim against totalSum's.
  check.checkRank(OP, "totalSum", totalSum, 2, 2);
  check.checkRank(OP, "totalSquareSum", totalSquareSum, 2, 2);
  for (const [name, t] of Object.entries({ sampleCount, mean, variance, batchMean, batchInvstd })) {
    if (t) check.checkRank(OP, name, t, 1, 1);
  }
  const [devices, channels] = totalSum.shape;
  const dims: [string, number, number, string][] = [
    ["totalSquareSum", totalSquareSum.shape[0], devices, "dim 0"],
    ["totalSquareSum", totalSquareSum.shape[1], channels, "dim 1"],
    ["sampleCount", sampleCount.shape[0], devices, "dim 0"],
    ["mean", mean.shape[0], channels, "dim 1"],
    ["variance", variance.shape[0], channels, "dim 1"],
  ];
  if (batchMean) dims.push(["batchMean", batchMean.shape[0], channels, "dim 1"]);
  if (batchInvstd) dims.push(["batchInvstd", batchInvstd.shape[0], channels, "dim 1"]);
  for (const [name, got, want, which] of dims) {
    if (got !== want) check.invalid(OP, name, `size ${got} must equal totalSum ${which} (${want})`);
  }
  // :270-280: no device is an error, no channel a success that writes nothing.
  if (devices === 0) check.invalid(OP, "totalSum", "dim 0 (devices) is zero");
  check.checkWrites(
    OP,
    { batchMean, batchInvstd, mean, variance },
    { totalSum, totalSquareSum, sampleCount },
  );
  const { device, backend } = check.placeCall(OP, all);
  return {
    device,
    backend,
    plan: { channels, devices, momentum, eps },
    tensors: { totalSum, totalSquareSum, sampleCount, mean, variance },
    given: { batchMean, batchInvstd },
  };
}
