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
 *   const bwd = await syncBatchNormBackward({
 *     gradOut: Tensor.ones(input.shape), input, ...fwd, allReduce: group.allReduce,
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
import type { DType } from "../tensor/dtype.ts";
import { formatShape } from "../tensor/layout.ts";
import { Tensor } from "../tensor/tensor.ts";
import { batchNormElemt } from "./batch_norm_elemt.ts";
import { batchNormElemtBackward } from "./batch_norm_elemt_backward.ts";
import { batchNormGatherStatsWithCounts } from "./batch_norm_gather_stats_with_counts.ts";
import { batchNormReduceBackward } from "./batch_norm_reduce_backward.ts";
import { batchNormStats } from "./batch_norm_stats.ts";
import {
  checkRank,
  finiteNumber,
  invalid,
  type MaybeTensor,
  optionalTensor,
  outputMask as outputMaskSchema,
  parseScalars,
  requireTensor,
  sameShape,
} from "./validate.ts";

const FWD = "syncBatchNormForward";
const BWD = "syncBatchNormBackward";

/**
 * All-gather: receives this rank's 1-D tensor `[K]` and returns the tensors of all W ranks
 * stacked in rank order, `[W, K]`, on this rank's device (or a promise of it). The returned
 * tensor is handed over: the composition frees its device memory when done with it.
 */
export type AllGather = (local: Tensor) => Tensor | Promise<Tensor>;

/**
 * All-reduce (sum): receives this rank's 1-D tensor `[K]` and returns the element-wise sum
 * over all ranks, `[K]`, on this rank's device (or a promise of it). The returned tensor is
 * handed over: the composition frees its device memory when done with it.
 */
export type AllReduceSum = (local: Tensor) => Tensor | Promise<Tensor>;

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
  input: MaybeTensor;
  /** gamma, C elements; all ones when absent. */
  weight?: MaybeTensor;
  /** beta, C elements; zeros when absent. */
  bias?: MaybeTensor;
  /** Running mean, C elements; updated in place (identically on every rank). */
  runningMean?: MaybeTensor;
  /** Running (unbiased) variance, C elements; updated in place. */
  runningVar?: MaybeTensor;
  /** Weight of the batch statistics in the running update. Default 0.1. */
  momentum?: number;
  /** Added to the variance. Default 1e-5. */
  eps?: number;
  /** Gathers `[mean (C), invstd (C), count (1)]` float32 from every rank into `[W, 2C + 1]`. */
  allGather: AllGather;
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
  gradOut: MaybeTensor;
  /** This rank's x. */
  input: MaybeTensor;
  /** gamma, C elements; all ones when absent. */
  weight?: MaybeTensor;
  /** Global mean from the forward. */
  mean: MaybeTensor;
  /** Global invstd from the forward. */
  invstd: MaybeTensor;
  /** Per-rank counts from the forward, `[W]`. */
  counts: MaybeTensor;
  /** Which of gradInput, gradWeight, gradBias to compute. Default [true, true, true]. */
  outputMask?: readonly boolean[];
  /** Sums `[sumDy (C), sumDyXmu (C)]` float32 over every rank. Called only for gradInput. */
  allReduce: AllReduceSum;
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

const forwardSchema = z.object({
  momentum: finiteNumber.default(0.1),
  eps: finiteNumber.default(1e-5),
  allGather: z.custom<AllGather>((v) => typeof v === "function", {
    message: "must be a function (the all-gather collective)",
  }),
});

const backwardSchema = z.object({
  outputMask: outputMaskSchema("gradInput, gradWeight, gradBias"),
  allReduce: z.custom<AllReduceSum>((v) => typeof v === "function", {
    message: "must be a function (the all-reduce collective)",
  }),
});

/** `t` itself when it already has `dtype`, else a converted copy on the same device. */
function withDType(t: Tensor, dtype: DType): Tensor {
  if (t.dtype === dtype) return t;
  const host = Tensor.fromArray(t.toFloat64Array(), t.shape, dtype);
  return t.device === "cpu" ? host : host.to(t.device);
}

function checkCollectiveResult(
  op: string,
  name: string,
  value: unknown,
  check: (t: Tensor) => boolean,
  expected: string,
): Tensor {
  if (!(value instanceof Tensor)) {
    invalid(op, name, `must return a Tensor (got ${typeof value})`);
  }
  if (!check(value)) {
    invalid(op, name, `returned shape ${formatShape(value.shape)}, expected ${expected}`);
  }
  return value;
}

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
  const input = requireTensor(FWD, "input", args.input);
  let weight = optionalTensor(FWD, "weight", args.weight);
  let bias = optionalTensor(FWD, "bias", args.bias);
  const { momentum, eps } = parseScalars(FWD, forwardSchema, {
    momentum: args.momentum,
    eps: args.eps,
    allGather: args.allGather,
  });
  checkRank(FWD, "input", input, 2, 8);
  const C = input.shape[1];
  const device: Device = input.device;

  // [mean | invstd | count] in one buffer, so one collective call moves everything.
  const packed = Tensor.zeros([2 * C + 1], "float32", device);
  packed.slice(0, 2 * C, 2 * C + 1).copy_([C === 0 ? 0 : input.numel / C]);
  batchNormStats({
    input,
    eps,
    out: { mean: packed.slice(0, 0, C), invstd: packed.slice(0, C, 2 * C) },
  });

  const gathered = checkCollectiveResult(
    FWD,
    "allGather",
    await args.allGather(packed),
    (t) => t.rank === 2 && t.shape[0] >= 1 && t.shape[1] === 2 * C + 1,
    `[W, ${2 * C + 1}]`,
  );
  const W = gathered.shape[0];
  // Its own storage: counts outlives `gathered`, which is freed below.
  const counts = gathered.slice(1, 2 * C, 2 * C + 1).reshape([W]).clone();
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
  // After the queued work that reads them (the device defers the free). A single-rank
  // collective may return a view of `packed` itself: releasing twice is harmless.
  gathered.dispose();
  packed.dispose();

  // aclnnBatchNormElemt wants every per-channel tensor in input's dtype; the converted copies
  // are temporaries.
  const converted: Tensor[] = [];
  const inInputDType = (t: Tensor) => {
    const c = withDType(t, input.dtype);
    if (c !== t) converted.push(c);
    return c;
  };
  if (weight) weight = inInputDType(weight);
  if (bias) bias = inInputDType(bias);
  const output = batchNormElemt({
    input,
    weight,
    bias,
    mean: inInputDType(global.mean),
    invstd: inInputDType(global.invstd),
    eps,
  });
  for (const t of converted) t.dispose();
  return { output, mean: global.mean, invstd: global.invstd, counts };
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
  const gradOut = requireTensor(BWD, "gradOut", args.gradOut);
  const input = requireTensor(BWD, "input", args.input);
  const mean = requireTensor(BWD, "mean", args.mean);
  const invstd = requireTensor(BWD, "invstd", args.invstd);
  const counts = requireTensor(BWD, "counts", args.counts);
  const weight = optionalTensor(BWD, "weight", args.weight);
  const { outputMask } = parseScalars(BWD, backwardSchema, {
    outputMask: args.outputMask,
    allReduce: args.allReduce,
  });
  const [inputG, weightG, biasG] = outputMask;
  checkRank(BWD, "input", input, 2, 8);
  const C = input.shape[1];

  const packed = inputG ? Tensor.zeros([2 * C], "float32", input.device) : undefined;
  const local = batchNormReduceBackward({
    gradOut,
    input,
    mean,
    invstd,
    weight,
    inputG,
    weightG,
    biasG,
    out: packed ? { sumDy: packed.slice(0, 0, C), sumDyXmu: packed.slice(0, C, 2 * C) } : undefined,
  });
  if (!packed) return { gradInput: null, gradWeight: local.gradWeight, gradBias: local.gradBias };

  const reduced = checkCollectiveResult(
    BWD,
    "allReduce",
    await args.allReduce(packed),
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
  // After the queued work that reads them (the device defers the free); `reduced` may be
  // `packed` itself for a single rank.
  reduced.dispose();
  packed.dispose();
  return { gradInput, gradWeight: local.gradWeight, gradBias: local.gradBias };
}

/** Combines the ranks' values (each of `shape`) into the result every rank receives. */
type Combine = (parts: Float64Array[], shape: readonly number[]) => {
  values: Float64Array;
  shape: number[];
};

interface Round {
  parts: (Tensor | undefined)[];
  arrived: number;
  done: PromiseWithResolvers<Tensor[]>;
}

/** Collects one contribution per rank per round, then combines them for everyone. */
class Rendezvous {
  readonly #worldSize: number;
  readonly #name: string;
  readonly #combine: Combine;
  readonly #rounds = new Map<number, Round>();
  readonly #next: number[];

  constructor(worldSize: number, name: string, combine: Combine) {
    this.#worldSize = worldSize;
    this.#name = name;
    this.#combine = combine;
    this.#next = new Array(worldSize).fill(0);
  }

  async contribute(rank: number, local: Tensor): Promise<Tensor> {
    const index = this.#next[rank]++;
    let round = this.#rounds.get(index);
    if (!round) {
      round = {
        parts: new Array(this.#worldSize),
        arrived: 0,
        done: Promise.withResolvers<Tensor[]>(),
      };
      this.#rounds.set(index, round);
    }
    round.parts[rank] = local;
    round.arrived++;
    if (round.arrived === this.#worldSize) {
      this.#rounds.delete(index);
      try {
        round.done.resolve(this.#finish(round.parts as Tensor[]));
      } catch (e) {
        round.done.reject(e);
      }
    }
    return (await round.done.promise)[rank];
  }

  #finish(parts: Tensor[]): Tensor[] {
    const shape = parts[0].shape;
    for (let r = 1; r < parts.length; r++) {
      if (!sameShape(parts[r].shape, shape)) {
        throw new RangeError(
          `${this.#name}: rank ${r} sent shape ${formatShape(parts[r].shape)}, rank 0 sent ${
            formatShape(shape)
          }`,
        );
      }
    }
    const combined = this.#combine(parts.map((t) => t.toFloat64Array()), shape);
    return parts.map((t) => {
      const host = Tensor.fromArray(combined.values, combined.shape, t.dtype);
      return t.device === "cpu" ? host : host.to(t.device);
    });
  }
}

/**
 * Simulates a process group of `worldSize` ranks inside one process: returns one
 * {@linkcode SyncBatchNormCollectives} per rank, where `allGather` stacks the ranks'
 * tensors (`[W, ...shape]`) and `allReduce` sums them. A call resolves once every rank has
 * made its matching call, so run the ranks concurrently (e.g. `Promise.all`); a rank that
 * never calls leaves the others waiting. Each rank receives its own copy, on its device.
 *
 * @example
 * ```ts
 * import { createLocalProcessGroup, Tensor } from "@aclnn/norm";
 * const [a, b] = createLocalProcessGroup(2);
 * const [sa, sb] = await Promise.all([
 *   a.allReduce(Tensor.fromArray([1, 2], [2])),
 *   b.allReduce(Tensor.fromArray([10, 20], [2])),
 * ]);
 * console.log(sa.toArray(), sb.toArray()); // [11, 22] [11, 22]
 * ```
 */
export function createLocalProcessGroup(worldSize: number): SyncBatchNormCollectives[] {
  if (!Number.isSafeInteger(worldSize) || worldSize < 1) {
    throw new RangeError(`createLocalProcessGroup: worldSize ${worldSize} must be an integer >= 1`);
  }
  const gather = new Rendezvous(worldSize, "allGather", (parts, shape) => {
    const size = parts[0].length;
    const values = new Float64Array(size * parts.length);
    parts.forEach((p, r) => values.set(p, r * size));
    return { values, shape: [parts.length, ...shape] };
  });
  const reduce = new Rendezvous(worldSize, "allReduce", (parts, shape) => {
    const values = new Float64Array(parts[0].length);
    for (const p of parts) for (let i = 0; i < p.length; i++) values[i] += p[i];
    return { values, shape: [...shape] };
  });
  return Array.from({ length: worldSize }, (_, rank) => ({
    allGather: (local: Tensor) => gather.contribute(rank, local),
    allReduce: (local: Tensor) => reduce.contribute(rank, local),
  }));
}
