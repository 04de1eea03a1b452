/**
 * SyncBatchNorm: BatchNorm whose statistics span the batches of W ranks (processes or
 * devices), composed from the aclnn building blocks exactly as PyTorch's SyncBatchNorm does:
 *
 * - forward: {@linkcode batchNormStats} (local mean/invstd) -> all-gather of
 *   `[mean, invstd, count]` -> {@linkcode batchNormGatherStatsWithCounts} (global mean/invstd,
 *   running statistics) -> {@linkcode batchNormElemt} (normalize);
 * - backward: {@linkcode batchNormReduceBackward} (local sumDy, sumDyXmu, gradWeight,
 *   gradBias) -> all-reduce (sum) of `[sumDy, sumDyXmu]` -> {@linkcode batchNormElemtBackward}.
 *
 * The communication is the caller's: pass an `allGather` / `allReduce` callback that talks to
 * the other ranks (HCCL, MPI, WebSockets, ...). Each callback receives this rank's 1-D float32
 * tensor and returns, or resolves to, the combined tensor; both functions are therefore
 * `async`. Every rank must call them the same number of times in the same order.
 * {@linkcode createLocalProcessGroup} simulates W ranks inside one process (for tests and
 * demos).
 *
 * gradWeight/gradBias are this rank's local contributions, as in PyTorch (data-parallel
 * training all-reduces them with the other parameter gradients); their sum over the ranks is
 * the single-process gradient.
 *
 * @example
 * ```ts
 * import {
 *   createLocalProcessGroup, syncBatchNormBackward, syncBatchNormForward, Tensor,
 * } from "@aclnn/norm";
 * const x = Tensor.random([8, 3, 4], { seed: 1 });
 * const ranks = createLocalProcessGroup(2);
 * const results = await Promise.all(ranks.map(async (group, r) => {
 *   const input = x.slice(0, 4 * r, 4 * r + 4);  // this rank's share of the batch
 *   const fwd = await syncBatchNormForward({ input, allGather: group.allGather });
 *   const { mean, invstd, counts } = fwd; // the forward's statistics, for the backward
 *   const bwd = await syncBatchNormBackward({
 *     gradOut: Tensor.ones(input.shape), input, mean, invstd, counts, allReduce: group.allReduce,
 *   });
 *   return { fwd, bwd };
 * }));
 * console.log(results[0].fwd.output.shape, results[1].bwd.gradInput?.shape); // [4, 3, 4] [4, 3, 4]
 * ```
 *
 * @module
 */

import { z } from "./zod.ts";
import type { Device } from "../tensor/device.ts";
import { Tensor } from "../tensor/tensor.ts";
import { batchNormElemt } from "./batch_norm_elemt.ts";
import { batchNormElemtBackward } from "./batch_norm_elemt_backward.ts";
import { batchNormGatherStatsWithCounts } from "./batch_norm_gather_stats_with_counts.ts";
import { batchNormReduceBackward } from "./batch_norm_reduce_backward.ts";
import { batchNormStats } from "./batch_norm_stats.ts";
import { checkKnownNames, namesOf } from "./known_names.ts";
import { checkCollectiveResult, PassTensors, within } from "./sync_batch_norm_pass.ts";
import * as check from "./validate.ts";

const FWD = "syncBatchNormForward";
const BWD = "syncBatchNormBackward";

/**
 * What a composition says about the collective call it makes, so that a process group can
 * check that every rank is in the same step: the operator and what is exchanged.
 */
export interface CollectiveCall {
  /** `syncBatchNormForward` or `syncBatchNormBackward`. */
  readonly op: string;
  /** What is exchanged, e.g. `[mean, invstd, count]` or `[sumDy, sumDyXmu]`. */
  readonly payload: string;
  /**
   * Aborted when the composition stops waiting for the result (its `timeoutMs` passed): a
   * group may stop waiting too (the local group fails the round and ends its timer).
   */
  readonly signal?: AbortSignal;
}

/**
 * All-gather: receives this rank's 1-D tensor `[K]` and returns the tensors of all W ranks
 * stacked in rank order, `[W, K]`, on this rank's device (or a promise of it). The returned
 * tensor is handed over: the composition frees its device memory when done with it. The
 * second argument describes the call (a group may check it matches on every rank).
 */
export type AllGather = (local: Tensor, call: CollectiveCall) => Tensor | Promise<Tensor>;

/**
 * All-reduce (sum): receives this rank's 1-D tensor `[K]` and returns the element-wise sum
 * over all ranks, `[K]`, on this rank's device (or a promise of it). The returned tensor is
 * handed over: the composition frees its device memory when done with it.
 */
export type AllReduceSum = (local: Tensor, call: CollectiveCall) => Tensor | Promise<Tensor>;

/** The two collectives SyncBatchNorm needs, for one rank. */
export interface SyncBatchNormCollectives {
  /** Used by {@linkcode syncBatchNormForward}. */
  allGather: AllGather;
  /** Used by {@linkcode syncBatchNormBackward}. */
  allReduce: AllReduceSum;
}

/** Arguments of {@linkcode syncBatchNormForward}. */
export interface SyncBatchNormForwardArgs {
  /** This rank's x: rank 2-8, channel = dim 1 (must not be 0). */
  input: check.MaybeTensor;
  /** gamma, C elements; all ones when absent. */
  weight?: check.MaybeTensor;
  /** beta, C elements; zeros when absent. */
  bias?: check.MaybeTensor;
  /** Running mean, C elements; updated in place (identically on every rank). */
  runningMean?: check.MaybeTensor;
  /** Running (unbiased) variance, C elements; updated in place. */
  runningVar?: check.MaybeTensor;
  /** Weight of the batch statistics in the running update. Default 0.1. */
  momentum?: number;
  /** Added to the variance. Default 1e-5. */
  eps?: number;
  /** Gathers `[mean (C), invstd (C), count (1)]` float32 from every rank into `[W, 2C + 1]`. */
  allGather: AllGather;
  /** Milliseconds to wait for the collective before failing (361001). Default 60000. */
  timeoutMs?: number;
}

/** Results of {@linkcode syncBatchNormForward}; pass mean, invstd and counts to the backward. */
export interface SyncBatchNormForwardResult {
  /** y for this rank's input: its shape and dtype. */
  output: Tensor;
  /** Global per-channel mean, float32 `[C]`. */
  mean: Tensor;
  /** Global per-channel 1/sqrt(biased var + eps), float32 `[C]`. */
  invstd: Tensor;
  /** Elements per channel on each rank, float32 `[W]`. */
  counts: Tensor;
}

/** Arguments of {@linkcode syncBatchNormBackward}. */
export interface SyncBatchNormBackwardArgs {
  /** dL/dy for this rank: input's shape and dtype. */
  gradOut: check.MaybeTensor;
  /** This rank's x. */
  input: check.MaybeTensor;
  /** gamma, C elements; all ones when absent. */
  weight?: check.MaybeTensor;
  /** Global mean from the forward. */
  mean: check.MaybeTensor;
  /** Global invstd from the forward. */
  invstd: check.MaybeTensor;
  /** Per-rank counts from the forward, `[W]`. */
  counts: check.MaybeTensor;
  /** Which of gradInput, gradWeight, gradBias to compute. Default [true, true, true]. */
  outputMask?: readonly boolean[];
  /** Sums `[sumDy (C), sumDyXmu (C)]` float32 over every rank. Called only for gradInput. */
  allReduce: AllReduceSum;
  /** Milliseconds to wait for the collective before failing (361001). Default 60000. */
  timeoutMs?: number;
}

/** Results of {@linkcode syncBatchNormBackward}; null where the mask is false. */
export interface SyncBatchNormBackwardResult {
  /** dL/dx for this rank's input. */
  gradInput: Tensor | null;
  /** This rank's contribution to dL/dweight (sum over ranks = the full gradient). */
  gradWeight: Tensor | null;
  /** This rank's contribution to dL/dbias (sum over ranks = the full gradient). */
  gradBias: Tensor | null;
}

/** Milliseconds a composition waits for a collective by default. */
const DEFAULT_TIMEOUT_MS = 60_000;

const timeout = z.number({ invalid_type_error: "must be a number of milliseconds" })
  .positive("must be greater than 0").default(DEFAULT_TIMEOUT_MS);

/** Every argument of {@linkcode syncBatchNormForward}; any other field is refused. */
const FORWARD_ARGS = namesOf<SyncBatchNormForwardArgs>({
  input: true,
  weight: true,
  bias: true,
  runningMean: true,
  runningVar: true,
  momentum: true,
  eps: true,
  allGather: true,
  timeoutMs: true,
});

/** Every argument of {@linkcode syncBatchNormBackward}; any other field is refused. */
const BACKWARD_ARGS = namesOf<SyncBatchNormBackwardArgs>({
  gradOut: true,
  input: true,
  weight: true,
  mean: true,
  invstd: true,
  counts: true,
  outputMask: true,
  allReduce: true,
  timeoutMs: true,
});

const forwardSchema = z.object({
  momentum: check.finiteNumber.default(0.1),
  eps: check.epsilon,
  timeoutMs: timeout,
  allGather: z.custom<AllGather>((v) => typeof v === "function", {
    message: "must be a function (the all-gather collective)",
  }),
});

const backwardSchema = z.object({
  outputMask: check.outputMask("gradInput, gradWeight, gradBias"),
  timeoutMs: timeout,
  allReduce: z.custom<AllReduceSum>((v) => typeof v === "function", {
    message: "must be a function (the all-reduce collective)",
  }),
});

/**
 * The SyncBatchNorm forward pass (training mode) for one rank: normalizes this rank's input
 * with the statistics of all ranks' inputs, and updates the running statistics.
 *
 * Errors come from the composed operators (aclnnBatchNormStats, ...GatherStatsWithCounts,
 * aclnnBatchNormElemt) with their codes; a missing input is 161001, a non-function
 * `allGather` or a result that is not `[W, 2C + 1]` is 161002.
 *
 * @example
 * ```ts
 * import { syncBatchNormForward, Tensor } from "@aclnn/norm";
 * // One rank alone: all-gather is "stack my own tensor".
 * const input = Tensor.random([4, 3, 5], { seed: 1 });
 * const { output, mean } = await syncBatchNormForward({
 *   input,
 *   allGather: (local) => local.reshape([1, -1]),
 * });
 * console.log(output.shape, mean.shape); // [4, 3, 5] [3]
 * ```
 */
export async function syncBatchNormForward(
  args: SyncBatchNormForwardArgs,
): Promise<SyncBatchNormForwardResult> {
  args = check.argumentsOf(FWD, args);
  checkKnownNames(FWD, args, FORWARD_ARGS);
  const input = check.requireTensor(FWD, "input", args.input);
  const weight = check.optionalTensor(FWD, "weight", args.weight);
  const bias = check.optionalTensor(FWD, "bias", args.bias);
  const { momentum, eps, timeoutMs } = check.parseArguments(FWD, forwardSchema, args);
  check.checkRank(FWD, "input", input, 2, 8);
  const C = input.shape[1];
  const device: Device = input.device;

  // [mean | invstd | count] in one buffer, so one collective call moves everything.
  const owned = new PassTensors();
  const packed = owned.scratch(Tensor.zeros([2 * C + 1], "float32", device));
  try {
    const count = C === 0 ? 0 : input.numel / C;
    if (count === 0) {
      // An empty batch has no statistics (batchNormStats would give invstd NaN). PyTorch drops
      // such ranks (count < 1) before merging, by masking the gathered rows, which reads them
      // back to the host. Here the empty rank sends mean 0, invstd 1 and count 0 instead: every
      // term of the merge is weighted by the count, so the row adds exactly nothing, and no
      // rank has to wait for the gathered statistics on the host.
      packed.slice(0, C, 2 * C).copy_(new Array(C).fill(1));
    } else {
      packed.slice(0, 2 * C, 2 * C + 1).copy_([count]);
      batchNormStats({
        input,
        eps,
        out: { mean: packed.slice(0, 0, C), invstd: packed.slice(0, C, 2 * C) },
      });
    }

    const call = { op: FWD, payload: "[mean, invstd, count]" };
    const gathered = checkCollectiveResult(
      FWD,
      "allGather",
      owned.handedOver(
        await within(
          FWD,
          "allGather",
          timeoutMs,
          (signal) => args.allGather(packed, { ...call, signal }),
        ),
      ),
      (t) => t.rank === 2 && t.shape[0] >= 1 && t.shape[1] === 2 * C + 1,
      `[W, ${2 * C + 1}]`,
    );
    const W = gathered.shape[0];
    // Its own storage: counts outlives `gathered`, which is freed when the pass ends.
    const counts = owned.result(gathered.slice(1, 2 * C, 2 * C + 1).reshape([W]).clone());
    const global = batchNormGatherStatsWithCounts({
      input,
      mean: gathered.slice(1, 0, C),
      invstd: gathered.slice(1, C, 2 * C),
      runningMean: args.runningMean,
      runningVar: args.runningVar,
      momentum,
      eps,
      counts,
    });
    owned.result(global.mean);
    owned.result(global.invstd);

    // The float32 global statistics go to aclnnBatchNormElemt as they are (CANN checks each
    // tensor against its dtype list on its own, ops-nn aclnn_batch_norm_elemt.cpp
    // CheckDtypeValid), as torch_npu passes them: a float16 invstd would make the chip rebuild
    // the variance as 1/invstd^2 - eps in float16, which overflows for quiet channels.
    const output = batchNormElemt({
      input,
      weight,
      bias,
      mean: global.mean,
      invstd: global.invstd,
      eps,
    });
    owned.succeeded();
    return { output, mean: global.mean, invstd: global.invstd, counts };
  } finally {
    owned.end();
  }
}

/**
 * The SyncBatchNorm backward pass for one rank: dL/dx through the global statistics, and
 * this rank's share of dL/dweight and dL/dbias.
 *
 * Errors come from the composed operators (aclnnBatchNormReduceBackward,
 * aclnnBatchNormElemtBackward) with their codes; a non-function `allReduce` or a result
 * without 2C elements is 161002.
 *
 * @example
 * ```ts
 * import { syncBatchNormBackward, syncBatchNormForward, Tensor } from "@aclnn/norm";
 * const input = Tensor.random([4, 3, 5], { seed: 1 });
 * const fwd = await syncBatchNormForward({ input, allGather: (t) => t.reshape([1, -1]) });
 * const { gradInput, gradWeight } = await syncBatchNormBackward({
 *   gradOut: Tensor.random([4, 3, 5], { seed: 2 }),
 *   input,
 *   mean: fwd.mean,
 *   invstd: fwd.invstd,
 *   counts: fwd.counts,
 *   allReduce: (t) => t, // a single rank: the sum is the tensor itself
 * });
 * console.log(gradInput?.shape, gradWeight?.shape); // [4, 3, 5] [3]
 * ```
 */
export async function syncBatchNormBackward(
  args: SyncBatchNormBackwardArgs,
): Promise<SyncBatchNormBackwardResult> {
  args = check.argumentsOf(BWD, args);
  checkKnownNames(BWD, args, BACKWARD_ARGS);
  const gradOut = check.requireTensor(BWD, "gradOut", args.gradOut);
  const input = check.requireTensor(BWD, "input", args.input);
  const mean = check.requireTensor(BWD, "mean", args.mean);
  const invstd = check.requireTensor(BWD, "invstd", args.invstd);
  const counts = check.requireTensor(BWD, "counts", args.counts);
  const weight = check.optionalTensor(BWD, "weight", args.weight);
  const { outputMask, timeoutMs } = check.parseArguments(BWD, backwardSchema, args);
  const [inputG, weightG, biasG] = outputMask;
  check.checkRank(BWD, "input", input, 2, 8);
  const C = input.shape[1];

  const owned = new PassTensors();
  const packed = inputG ? owned.scratch(Tensor.zeros([2 * C], "float32", input.device)) : undefined;
  try {
    const local = batchNormReduceBackward({
      gradOut,
      input,
      mean,
      invstd,
      weight,
      inputG,
      weightG,
      biasG,
      out: packed
        ? { sumDy: packed.slice(0, 0, C), sumDyXmu: packed.slice(0, C, 2 * C) }
        : undefined,
    });
    if (local.gradWeight) owned.result(local.gradWeight);
    if (local.gradBias) owned.result(local.gradBias);
    if (!packed) {
      owned.succeeded();
      return { gradInput: null, gradWeight: local.gradWeight, gradBias: local.gradBias };
    }

    const reduced = checkCollectiveResult(
      BWD,
      "allReduce",
      owned.handedOver(
        await within(
          BWD,
          "allReduce",
          timeoutMs,
          (signal) => args.allReduce(packed, { op: BWD, payload: "[sumDy, sumDyXmu]", signal }),
        ),
      ),
      (t) => t.numel === 2 * C,
      `${2 * C} elements`,
    ).reshape([2 * C]);
    const gradInput = batchNormElemtBackward({
      gradOut,
      input,
      mean,
      invstd,
      weight,
      sumDy: reduced.slice(0, 0, C),
      sumDyXmu: reduced.slice(0, C, 2 * C),
      counter: counts,
    });
    owned.succeeded();
    return { gradInput, gradWeight: local.gradWeight, gradBias: local.gradBias };
  } finally {
    owned.end();
  }
}
