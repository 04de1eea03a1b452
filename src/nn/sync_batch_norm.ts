/**
 * `SyncBatchNorm`: PyTorch's `nn.SyncBatchNorm`, one module per rank, whose training-mode
 * statistics span the batches of every rank of a process group, built on
 * {@linkcode syncBatchNormForward} and {@linkcode syncBatchNormBackward}.
 *
 * @module
 */

import { disposable } from "../ops/results.ts";
import {
  syncBatchNormBackward,
  type SyncBatchNormCollectives,
  syncBatchNormForward,
} from "../ops/sync_batch_norm.ts";
import { invalid } from "../ops/validate.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { type AloneSaved, BatchNormModule } from "./batch_norm_module.ts";
import { batchNormConfig, type BatchNormOptions } from "./options.ts";
import type { NormGradients } from "./saved.ts";
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

/**
 * What a training-mode forward keeps for the backward: its input and the statistics of all
 * ranks' batches (an eval-mode forward keeps {@linkcode AloneSaved}).
 */
interface SyncedSaved {
  readonly input: Tensor;
  readonly mean: Tensor;
  readonly invstd: Tensor;
  readonly counts: Tensor;
}

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
 *   console.log(rank, y.shape, bn.runningMean?.toArray());
 *   // ... [4, 3, 4, 4] [-0.00697..., -0.00024..., -0.00190...]: the same on both ranks
 * }));
 * ```
 */
export class SyncBatchNorm extends BatchNormModule {
  readonly #group: SyncBatchNormCollectives;
  readonly #timeoutMs: number | undefined;
  /** The call in flight, if any: calls on one module must not overlap. */
  #busy: string | undefined;

  /** Makes the module: weight 1, bias 0, running mean 0, running variance 1 (PyTorch's). */
  constructor(options: SyncBatchNormOptions) {
    super("SyncBatchNorm", batchNormConfig("SyncBatchNorm", options, true));
    const group = options.processGroup as unknown;
    if (
      typeof group !== "object" || group === null ||
      typeof (group as SyncBatchNormCollectives).allGather !== "function" ||
      typeof (group as SyncBatchNormCollectives).allReduce !== "function"
    ) {
      this.dispose();
      invalid(
        "SyncBatchNorm",
        "processGroup",
        "must have allGather and allReduce functions (createLocalProcessGroup, " +
          "createHcclProcessGroup)",
      );
    }
    const timeoutMs = options.timeoutMs as unknown;
    if (timeoutMs !== undefined && !(typeof timeoutMs === "number" && timeoutMs > 0)) {
      this.dispose();
      invalid("SyncBatchNorm", "timeoutMs", `(${timeoutMs}) must be a number of milliseconds > 0`);
    }
    this.#group = options.processGroup;
    this.#timeoutMs = timeoutMs;
  }

  /** This rank's collectives. */
  get processGroup(): SyncBatchNormCollectives {
    return this.#group;
  }
  /**
   * Normalizes this rank's `input` (rank 2-8, dim 1 = numFeatures): in training mode with the
   * statistics of all ranks (one all-gather), else locally. Resolves to the output.
   */
  async forward(input: Tensor): Promise<Tensor> {
    const op = this.beginCall("forward");
    this.#enter(op);
    try {
      return await this.runForwardAsync(() => this.#forward(op, input));
    } finally {
      this.#busy = undefined;
    }
  }

  /** The forward's body (NormModule.runForwardAsync undoes it when it fails). */
  async #forward(op: string, input: Tensor): Promise<Tensor> {
    const x = this.checkInput(op, input);
    // Eval mode: this rank alone (running statistics, or batch ones without them).
    if (!this.training) return this.forwardAlone(x);
    const update = this.updatesRunningStats;
    const r = await syncBatchNormForward({
      input: x,
      weight: this.weight,
      bias: this.bias,
      runningMean: this.runningMean,
      runningVar: this.runningVar,
      momentum: update ? this.nextMomentum() : undefined,
      eps: this.eps,
      allGather: this.#group.allGather,
      timeoutMs: this.#timeoutMs,
    });
    if (update) this.countBatch();
    const { mean, invstd, counts } = r;
    this.saveForBackward<SyncedSaved>({ input: x, mean, invstd, counts }, [mean, invstd, counts]);
    return r.output;
  }

  /**
   * The gradients through the last forward (training mode: one all-reduce). gradWeight and
   * gradBias are this rank's share (see the class doc); null without affine parameters.
   */
  async backward(gradOut: Tensor): Promise<NormGradients> {
    const { op, saved, dy } = this.beginBackward<SyncedSaved | AloneSaved>(gradOut);
    this.#enter(op);
    try {
      let grads: NormGradients;
      if ("counts" in saved) {
        const { input, mean, invstd, counts } = saved;
        const g = await syncBatchNormBackward({
          gradOut: dy,
          input,
          weight: this.weight,
          mean,
          invstd,
          counts,
          outputMask: [true, this.affine, this.affine],
          allReduce: this.#group.allReduce,
          timeoutMs: this.#timeoutMs,
        });
        grads = disposable(g, [g.gradInput, g.gradWeight, g.gradBias]) as NormGradients;
      } else {
        grads = this.backwardAlone(dy, saved);
      }
      this.endBackward();
      return grads;
    } finally {
      this.#busy = undefined;
    }
  }

  /**
   * Copies a state dict into the module after checking all of it (see BatchNorm's). Ends the
   * pending forward. Load the same dict on every rank.
   */
  override loadStateDict(dict: StateDict, options?: LoadStateDictOptions): LoadStateDictResult {
    this.#enter("SyncBatchNorm.loadStateDict");
    try {
      return super.loadStateDict(dict, options);
    } finally {
      this.#busy = undefined;
    }
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
