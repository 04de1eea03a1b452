/**
 * The base of the modules with running statistics (BatchNorm, SyncBatchNorm and InstanceNorm),
 * as PyTorch's `_NormBase` / `_BatchNorm` hold them: the options, the running statistics and the
 * batch counter in the state dict, resetting them, and the forward and backward over one rank's
 * batch (InstanceNorm's eval mode on running statistics). The modules add their forward and
 * backward on top; InstanceNorm's training forward updates the running statistics its own way
 * (torch's `_InstanceNorm`) and never counts a batch.
 *
 * PyTorch's rules (torch/nn/modules/batchnorm.py, `_BatchNorm.forward`), which the modules
 * follow:
 * - batch statistics normalize in training mode, and in eval mode too when the module tracks
 *   no running statistics; otherwise eval mode uses the running statistics;
 * - only a training-mode forward of a tracking module updates the running statistics (the
 *   variance with the unbiased batch variance, sum((x - mean)^2) / (M - 1), as CANN's kernels
 *   do: hicann/ops-nn e5c3fa9, norm/batch_norm/op_kernel/arch35/batch_norm_block_split_r.h
 *   46-47, unbiasedEstimationCoeff = R / (R - 1)) and counts the batch in numBatchesTracked;
 * - momentum `null` weighs the batch with 1 / numBatchesTracked (after counting it): a
 *   cumulative moving average.
 *
 * @module
 */

import { batchNorm } from "../ops/batch_norm.ts";
import { batchNormBackward } from "../ops/batch_norm_backward.ts";
import { checkRank, invalid, requireTensor } from "../ops/validate.ts";
import type { Device } from "../tensor/device.ts";
import { formatShape } from "../tensor/layout.ts";
import { keep } from "../tensor/scope.ts";
import { Tensor } from "../tensor/tensor.ts";
import { initialParameters, NormModule } from "./norm_module.ts";
import type { BatchNormConfig } from "./options.ts";
import type { NormGradients } from "./saved.ts";
import type { StateEntry } from "./state_dict.ts";

/** The batch statistics a training-mode forward normalized with (batchNorm's saveMean/saveInvstd). */
export interface BatchStatistics {
  /** Mean per channel. */
  readonly saveMean: Tensor;
  /** 1/sqrt(var + eps) per channel. */
  readonly saveInvstd: Tensor;
}

/**
 * What a forward over one rank's batch ({@linkcode BatchNormModule.forwardAlone}) keeps for its
 * backward: its input and the batch statistics it normalized with, or null when the running
 * statistics did.
 */
export interface AloneSaved {
  /** The forward's input (by reference). */
  readonly input: Tensor;
  /** The batch statistics (owned by the module until the backward), or null. */
  readonly batch: BatchStatistics | null;
}

/**
 * The members of `BatchNorm`, `SyncBatchNorm` and `InstanceNorm` beyond
 * {@linkcode NormModule}'s: the channel count, eps and momentum, whether the module has affine
 * parameters and running statistics, and those statistics. Not made directly: each of the three
 * classes extends it (with its own defaults: InstanceNorm's are PyTorch's `_InstanceNorm`'s).
 *
 * @example
 * ```ts
 * import { BatchNorm, type BatchNormModule } from "@aclnn/norm";
 * using bn: BatchNormModule = new BatchNorm({ numFeatures: 3 });
 * bn.runningMean?.copy_([1, 2, 3]);
 * bn.resetRunningStats();
 * console.log(bn.runningMean?.toArray(), bn.numBatchesTracked); // [0, 0, 0] 0
 * ```
 */
export abstract class BatchNormModule extends NormModule {
  readonly #config: BatchNormConfig;
  readonly #runningMean: Tensor | null;
  readonly #runningVar: Tensor | null;
  /** Training-mode batches seen (null without running statistics), as the state dict holds it. */
  readonly #batches: { count: number | null };

  /**
   * For the module classes: the module named `name` with `config` (its options, every default
   * applied): weight 1 and bias 0 with `affine`, running mean 0 and variance 1 and no batch
   * counted with `trackRunningStats` (PyTorch's initial values and state-dict keys).
   */
  protected constructor(name: string, config: BatchNormConfig) {
    const C = config.numFeatures;
    const params = initialParameters(config, [C], config.affine, config.affine);
    // Kept out of any tidy scope: the module frees them in dispose().
    const make = (value: number) => keep(Tensor.full([C], value, config.dtype, config.device));
    const runningMean = config.trackRunningStats ? make(0) : null;
    const runningVar = config.trackRunningStats ? make(1) : null;
    const batches = { count: config.trackRunningStats ? 0 : null };
    super(name, params, {
      entries: runningEntries(config.device, runningMean, runningVar, batches),
      owned: [runningMean, runningVar],
    });
    this.#config = config;
    this.#runningMean = runningMean;
    this.#runningVar = runningVar;
    this.#batches = batches;
  }

  /** C, the channel count. */
  get numFeatures(): number {
    return this.#config.numFeatures;
  }
  /** Added to the variance. */
  get eps(): number {
    return this.#config.eps;
  }
  /** Weight of the batch statistics in the running update; null: cumulative average. */
  get momentum(): number | null {
    return this.#config.momentum;
  }
  /** Whether the module has `weight` and `bias`. */
  get affine(): boolean {
    return this.#config.affine;
  }
  /** Whether the module keeps running statistics. */
  get trackRunningStats(): boolean {
    return this.#config.trackRunningStats;
  }
  /** Running mean, `[C]` (the same on every rank of a SyncBatchNorm); null without them. */
  get runningMean(): Tensor | null {
    return this.#runningMean;
  }
  /** Running (unbiased) variance, `[C]`; null without running statistics. */
  get runningVar(): Tensor | null {
    return this.#runningVar;
  }
  /**
   * Training-mode batches seen; null without running statistics. A forward whose kernels the
   * device lost is not counted (settled first).
   */
  get numBatchesTracked(): number | null {
    this.settleQueuedForward();
    return this.#batches.count;
  }

  /**
   * Running mean 0, running variance 1, numBatchesTracked 0 (PyTorch's
   * `reset_running_stats`). Ends the pending forward.
   */
  resetRunningStats(): void {
    this.beginCall("resetRunningStats");
    this.#runningMean?.copy_(new Array(this.#config.numFeatures).fill(0));
    this.#runningVar?.copy_(new Array(this.#config.numFeatures).fill(1));
    if (this.#batches.count !== null) this.#batches.count = 0;
    this.stateReplaced();
  }

  /** The batch count as it is now, put back when a forward fails. */
  protected override undoPoint(): () => void {
    const batches = this.#batches;
    const count = batches.count;
    return () => {
      batches.count = count;
    };
  }

  /**
   * For the module classes: whether a forward now normalizes with batch statistics
   * (PyTorch's `bn_training`): in training mode, or without running statistics.
   */
  protected get usesBatchStatistics(): boolean {
    return this.training || !this.#config.trackRunningStats;
  }

  /** For the module classes: whether a forward now updates the running statistics. */
  protected get updatesRunningStats(): boolean {
    return this.training && this.#config.trackRunningStats;
  }

  /** For the module classes: the momentum of the next running update (before counting it). */
  protected nextMomentum(): number {
    return this.#config.momentum ?? 1 / ((this.numBatchesTracked ?? 0) + 1);
  }

  /** For the module classes: counts a batch whose running update happened. */
  protected countBatch(): void {
    if (this.#batches.count !== null) this.#batches.count++;
  }

  /**
   * For the module classes: the input of a forward (`op` the call), a Tensor of rank 2-8 whose
   * dim 1 is numFeatures (161001/161002 naming `input`).
   */
  protected checkInput(op: string, input: unknown): Tensor {
    const x = requireTensor(op, "input", input);
    checkRank(op, "input", x, 2, 8);
    if (x.shape[1] !== this.#config.numFeatures) {
      invalid(
        op,
        "input",
        `dim 1 of shape ${formatShape(x.shape)} must be numFeatures (${this.#config.numFeatures})`,
      );
    }
    return x;
  }

  /**
   * For the module classes, in a forward's body: the forward over this rank's batch alone
   * (BatchNorm's; SyncBatchNorm's in eval mode): batchNorm with the module's parameters, on
   * batch or running statistics as the mode says, with the running update (its batch counted)
   * when the mode makes one. Saves {@linkcode AloneSaved} for the backward
   * ({@linkcode BatchNormModule.backwardAlone}) and returns the output.
   */
  protected forwardAlone(x: Tensor): Tensor {
    const update = this.updatesRunningStats;
    const useBatch = this.usesBatchStatistics;
    const r = batchNorm({
      input: x,
      weight: this.weight,
      bias: this.bias,
      runningMean: this.#runningMean,
      runningVar: this.#runningVar,
      training: useBatch,
      momentum: update ? this.nextMomentum() : undefined,
      eps: this.#config.eps,
    });
    if (update) this.countBatch();
    if (useBatch) {
      const batch = { saveMean: r.saveMean, saveInvstd: r.saveInvstd };
      this.saveForBackward<AloneSaved>({ input: x, batch }, [r.saveMean, r.saveInvstd]);
    } else {
      // The running statistics normalized: the operator's empty save tensors are not needed.
      r.saveMean.dispose();
      r.saveInvstd.dispose();
      this.saveForBackward<AloneSaved>({ input: x, batch: null }, []);
    }
    return r.output;
  }

  /**
   * For the module classes: the backward of a {@linkcode BatchNormModule.forwardAlone} (`saved`
   * what it kept, `gradOut` checked): batchNormBackward through the statistics that forward
   * normalized with, the parameter gradients as the module's affine flag asks. Does not free
   * the saved forward ({@linkcode NormModule.endBackward} does).
   */
  protected backwardAlone(
    gradOut: Tensor,
    saved: {
      readonly input: Tensor;
      readonly batch: { readonly saveMean: Tensor; readonly saveInvstd: Tensor } | null;
    },
  ): NormGradients {
    const affine = this.#config.affine;
    const r = batchNormBackward({
      gradOut,
      input: saved.input,
      weight: this.weight,
      ...(saved.batch ?? { runningMean: this.#runningMean, runningVar: this.#runningVar }),
      training: saved.batch !== null,
      eps: this.#config.eps,
      outputMask: [true, affine, affine],
    });
    return r as NormGradients;
  }
}

/** The state-dict entries of the running statistics and the batch counter (none without them). */
function runningEntries(
  device: Device,
  runningMean: Tensor | null,
  runningVar: Tensor | null,
  batches: { count: number | null },
): StateEntry[] {
  if (!runningMean || !runningVar) return [];
  return [
    { key: "running_mean", tensor: runningMean },
    { key: "running_var", tensor: runningVar },
    {
      key: "num_batches_tracked",
      device,
      counter: {
        get: () => batches.count ?? 0,
        set: (n: number) => batches.count = n,
      },
    },
  ];
}
