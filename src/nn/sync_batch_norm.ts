/**
 * `SyncBatchNorm`: PyTorch's `nn.SyncBatchNorm`, one module per rank, whose training-mode
 * statistics span the batches of every rank of a process group, built on
 * {@linkcode syncBatchNormForward} and {@linkcode syncBatchNormBackward}.
 *
 * @module
 */

import { batchNorm } from "../ops/batch_norm.ts";
import { batchNormBackward } from "../ops/batch_norm_backward.ts";
import { disposable } from "../ops/results.ts";
import {
  syncBatchNormBackward,
  type SyncBatchNormCollectives,
  syncBatchNormForward,
} from "../ops/sync_batch_norm.ts";
import { invalid } from "../ops/validate.ts";
import type { Device } from "../tensor/device.ts";
import type { DType } from "../tensor/dtype.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { BatchNormState } from "./batch_norm_state.ts";
import type { BatchNormOptions } from "./options.ts";
import { checkGradOut, type NormGradients, SavedForward } from "./saved.ts";
import type { LoadStateDictOptions, LoadStateDictResult, StateDict } from "./state_dict.ts";

/** Options of {@linkcode SyncBatchNorm}: BatchNorm's, and the process group. */
export interface SyncBatchNormOptions extends BatchNormOptions {
  /**
   * This rank's collectives: one element of `createLocalProcessGroup(W)`, or an
   * `HcclProcessGroup` (`createHcclProcessGroup`). Every rank's module must make the same calls
   * in the same order.
   */
  processGroup: SyncBatchNormCollectives;
  /** Milliseconds a collective may take before the call fails (361001). Default 60000. */
  timeoutMs?: number;
}

/** What a forward keeps for the backward. */
type Saved =
  | {
    readonly sync: true;
    readonly input: Tensor;
    readonly mean: Tensor;
    readonly invstd: Tensor;
    readonly counts: Tensor;
  }
  | {
    readonly sync: false;
    readonly input: Tensor;
    readonly batch: { readonly saveMean: Tensor; readonly saveInvstd: Tensor } | null;
  };

/**
 * BatchNorm across ranks, as PyTorch's `nn.SyncBatchNorm`: in training mode the mean and
 * variance are those of the batches of all ranks together (gathered with the process group's
 * all-gather), the running statistics are updated with them identically on every rank, and the
 * backward sums the per-channel gradient terms over the ranks (all-reduce). In eval mode (and
 * as PyTorch does) each rank normalizes alone with its running statistics, or with its own
 * batch statistics when the module tracks none; nothing is exchanged.
 *
 * `await forward(x)` and `await backward(dy)` are the same API as {@linkcode BatchNorm}'s, made
 * async by the collectives; every rank must call them in the same order.
 *
 * **gradWeight and gradBias are this rank's share**: the sums over this rank's batch only, in
 * both modes, as PyTorch's SyncBatchNorm returns them. The gradient of the whole batch is their
 * sum over the ranks: all-reduce them before the optimizer step, as DistributedDataParallel
 * does for every parameter (the example does it with the group's `allReduce`). gradInput needs
 * nothing more.
 *
 * @example
 * ```ts
 * import { createLocalProcessGroup, SyncBatchNorm, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([8, 3, 4, 4], { seed: 1 });
 * const dy = Tensor.random([8, 3, 4, 4], { seed: 2 });
 * const group = createLocalProcessGroup(2); // 2 ranks in this process
 * const lr = 0.1;
 * await Promise.all(group.map(async (processGroup, rank) => {
 *   using bn = new SyncBatchNorm({ numFeatures: 3, processGroup });
 *   const input = x.slice(0, 4 * rank, 4 * rank + 4); // this rank's half of the batch
 *   using y = await bn.forward(input);
 *   using grads = await bn.backward(dy.slice(0, 4 * rank, 4 * rank + 4));
 *   // As DDP does: sum the parameter gradients over the ranks, then step.
 *   const call = { op: "ddp", payload: "[gradWeight, gradBias]" };
 *   using gradWeight = await processGroup.allReduce(grads.gradWeight!, call);
 *   using gradBias = await processGroup.allReduce(grads.gradBias!, call);
 *   for (const [p, g] of [[bn.weight!, gradWeight], [bn.bias!, gradBias]]) {
 *     const gv = g.toFloat64Array();
 *     p.copy_(p.toFloat64Array().map((v, c) => v - lr * gv[c]));
 *   }
 *   console.log(rank, y.shape, bn.runningMean?.toArray()); // the same running mean on both
 * }));
 * ```
 */
export class SyncBatchNorm implements Disposable {
  readonly #state: BatchNormState;
  readonly #group: SyncBatchNormCollectives;
  readonly #timeoutMs: number | undefined;
  readonly #saved = new SavedForward<Saved>();
  /** The call in flight, if any: calls on one module must not overlap. */
  #busy: string | undefined;

  /** Makes the module: weight 1, bias 0, running mean 0, running variance 1 (PyTorch's). */
  constructor(options: SyncBatchNormOptions) {
    this.#state = new BatchNormState("SyncBatchNorm", options);
    const group = options.processGroup as unknown;
    if (
      typeof group !== "object" || group === null ||
      typeof (group as SyncBatchNormCollectives).allGather !== "function" ||
      typeof (group as SyncBatchNormCollectives).allReduce !== "function"
    ) {
      this.#state.dispose();
      invalid(
        "SyncBatchNorm",
        "processGroup",
        "must have allGather and allReduce functions (createLocalProcessGroup, " +
          "createHcclProcessGroup)",
      );
    }
    const timeoutMs = options.timeoutMs as unknown;
    if (timeoutMs !== undefined && !(typeof timeoutMs === "number" && timeoutMs > 0)) {
      this.#state.dispose();
      invalid("SyncBatchNorm", "timeoutMs", `(${timeoutMs}) must be a number of milliseconds > 0`);
    }
    this.#group = options.processGroup;
    this.#timeoutMs = timeoutMs;
  }

  /** C, the channel count. */
  get numFeatures(): number {
    return this.#state.config.numFeatures;
  }
  /** Added to the variance. */
  get eps(): number {
    return this.#state.config.eps;
  }
  /** Weight of the batch statistics in the running update; null: cumulative average. */
  get momentum(): number | null {
    return this.#state.config.momentum;
  }
  /** Whether the module has `weight` and `bias`. */
  get affine(): boolean {
    return this.#state.config.affine;
  }
  /** Whether the module keeps running statistics. */
  get trackRunningStats(): boolean {
    return this.#state.config.trackRunningStats;
  }
  /** Where the parameters and statistics live. */
  get device(): Device {
    return this.#state.config.device;
  }
  /** dtype of the parameters and statistics. */
  get dtype(): DType {
    return this.#state.config.dtype;
  }
  /** This rank's collectives. */
  get processGroup(): SyncBatchNormCollectives {
    return this.#group;
  }
  /** gamma, `[C]`; null without affine parameters. */
  get weight(): Tensor | null {
    return this.#state.weight;
  }
  /** beta, `[C]`; null without affine parameters. */
  get bias(): Tensor | null {
    return this.#state.bias;
  }
  /** Running mean, `[C]` (the same on every rank); null without running statistics. */
  get runningMean(): Tensor | null {
    return this.#state.runningMean;
  }
  /** Running (unbiased) variance, `[C]`; null without running statistics. */
  get runningVar(): Tensor | null {
    return this.#state.runningVar;
  }
  /** Training-mode batches seen; null without running statistics. */
  get numBatchesTracked(): number | null {
    return this.#state.numBatchesTracked;
  }
  /** true in training mode (the default), false in eval mode. */
  get training(): boolean {
    return this.#state.training;
  }

  /** Sets training mode (or eval mode with `false`). Returns the module. */
  train(mode = true): this {
    this.#state.training = Boolean(mode);
    return this;
  }

  /** Sets eval mode. Returns the module. */
  eval(): this {
    return this.train(false);
  }

  /**
   * Normalizes this rank's `input` (rank 2-8, dim 1 = numFeatures): in training mode with the
   * statistics of all ranks (one all-gather), else locally. Resolves to the output.
   */
  async forward(input: Tensor): Promise<Tensor> {
    const op = "SyncBatchNorm.forward";
    const s = this.#state;
    s.check(op);
    const x = s.checkInput(op, input);
    this.#enter(op);
    try {
      if (!s.training) return this.#localForward(x);
      const update = s.updatesRunningStats;
      const r = await syncBatchNormForward({
        input: x,
        weight: s.weight,
        bias: s.bias,
        runningMean: s.runningMean,
        runningVar: s.runningVar,
        momentum: update ? s.nextMomentum() : undefined,
        eps: s.config.eps,
        allGather: this.#group.allGather,
        timeoutMs: this.#timeoutMs,
      });
      if (update) s.countBatch();
      const { mean, invstd, counts } = r;
      this.#saved.save({ sync: true, input: x, mean, invstd, counts }, [mean, invstd, counts]);
      return r.output;
    } finally {
      this.#busy = undefined;
    }
  }

  /**
   * The gradients through the last forward (training mode: one all-reduce). gradWeight and
   * gradBias are this rank's share (see the class doc); null without affine parameters.
   */
  async backward(gradOut: Tensor): Promise<NormGradients> {
    const op = "SyncBatchNorm.backward";
    const s = this.#state;
    s.check(op);
    const saved = this.#saved.use(op);
    const dy = checkGradOut(op, gradOut, saved.input);
    this.#enter(op);
    try {
      const affine = s.config.affine;
      const mask = [true, affine, affine];
      let r;
      if (saved.sync) {
        const { input, mean, invstd, counts } = saved;
        const g = await syncBatchNormBackward({
          gradOut: dy,
          input,
          weight: s.weight,
          mean,
          invstd,
          counts,
          outputMask: mask,
          allReduce: this.#group.allReduce,
          timeoutMs: this.#timeoutMs,
        });
        r = disposable(g, [g.gradInput, g.gradWeight, g.gradBias]);
      } else {
        r = batchNormBackward({
          gradOut: dy,
          input: saved.input,
          weight: s.weight,
          ...(saved.batch ?? { runningMean: s.runningMean, runningVar: s.runningVar }),
          training: saved.batch !== null,
          eps: s.config.eps,
          outputMask: mask,
        });
      }
      this.#saved.clear("used");
      return r as NormGradients;
    } finally {
      this.#busy = undefined;
    }
  }

  /** Snapshots (copies) of the parameters and buffers by PyTorch's names (see StateDict). */
  stateDict(): StateDict {
    return this.#state.stateDict("SyncBatchNorm.stateDict");
  }

  /**
   * Copies a state dict into the module after checking all of it (see BatchNorm's). Ends the
   * pending forward. Load the same dict on every rank.
   */
  loadStateDict(dict: StateDict, options?: LoadStateDictOptions): LoadStateDictResult {
    const op = "SyncBatchNorm.loadStateDict";
    this.#enter(op);
    try {
      const result = this.#state.loadStateDict(op, dict, options);
      this.#saved.clear("reset");
      return result;
    } finally {
      this.#busy = undefined;
    }
  }

  /** Running mean 0, running variance 1, numBatchesTracked 0. */
  resetRunningStats(): void {
    this.#state.resetRunningStats("SyncBatchNorm.resetRunningStats");
    this.#saved.clear("reset");
  }

  /** Frees the parameters, running statistics and saved statistics. Idempotent. */
  dispose(): void {
    this.#saved.clear("reset");
    this.#state.dispose();
  }

  /** Same as {@linkcode SyncBatchNorm.dispose}, for `using`. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  /** Eval mode: this rank alone (running statistics, or batch ones without them). */
  #localForward(x: Tensor): Tensor {
    const s = this.#state;
    const batch = s.batchStatistics;
    const r = batchNorm({
      input: x,
      weight: s.weight,
      bias: s.bias,
      runningMean: s.runningMean,
      runningVar: s.runningVar,
      training: batch,
      eps: s.config.eps,
    });
    if (batch) {
      const { saveMean, saveInvstd } = r;
      this.#saved.save({ sync: false, input: x, batch: { saveMean, saveInvstd } }, [
        saveMean,
        saveInvstd,
      ]);
    } else {
      r.saveMean.dispose();
      r.saveInvstd.dispose();
      this.#saved.save({ sync: false, input: x, batch: null }, []);
    }
    return r.output;
  }

  #enter(op: string): void {
    if (this.#busy !== undefined) {
      invalid(
        op,
        "module",
        `is still running ${this.#busy}: await it first (calls on one module must not overlap)`,
      );
    }
    this.#busy = op;
  }
}
