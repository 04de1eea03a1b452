/**
 * The state BatchNorm and SyncBatchNorm share, as PyTorch's `_BatchNorm` holds it: the affine
 * parameters, the running statistics and the batch counter, the train/eval flag, the state
 * dict and disposal. The modules add forward and backward on top.
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
import { batchNormBackward, type BatchNormBackwardResult } from "../ops/batch_norm_backward.ts";
import { checkRank, invalid, requireTensor } from "../ops/validate.ts";
import type { Device } from "../tensor/device.ts";
import { formatShape } from "../tensor/layout.ts";
import { keep } from "../tensor/scope.ts";
import { Tensor } from "../tensor/tensor.ts";
import { ModuleCore } from "./module_core.ts";
import { type BatchNormConfig, batchNormConfig, type BatchNormOptions } from "./options.ts";
import type { StateEntry } from "./state_dict.ts";

/** The batch statistics a training-mode forward normalized with (batchNorm's saveMean/saveInvstd). */
export interface BatchStatistics {
  /** Mean per channel. */
  readonly saveMean: Tensor;
  /** 1/sqrt(var + eps) per channel. */
  readonly saveInvstd: Tensor;
}

/**
 * The shared state of BatchNorm and SyncBatchNorm (module doc): a {@linkcode ModuleCore}
 * whose state dict adds the running statistics and the batch counter; `S` is what a forward
 * keeps for the backward.
 */
export class BatchNormState<S = unknown> extends ModuleCore<S> {
  /** The module's options with every default applied. */
  readonly config: BatchNormConfig;
  /** Running mean, `[C]`, or null. */
  readonly runningMean: Tensor | null;
  /** Running variance, `[C]`, or null. */
  readonly runningVar: Tensor | null;
  /** Training-mode batches seen (null without running statistics), as the state dict holds it. */
  readonly #batches: { count: number | null };

  /**
   * The state of a module named `name` (messages), made from its options (SyncBatchNorm's,
   * which add processGroup and timeoutMs, with `sync`).
   */
  constructor(name: string, options: BatchNormOptions, sync = false) {
    const c = batchNormConfig(name, options, sync);
    const C = c.numFeatures;
    // Kept out of any tidy scope: the module frees them in dispose().
    const make = (value: number) => keep(Tensor.full([C], value, c.dtype, c.device));
    const weight = c.affine ? make(1) : null;
    const bias = c.affine ? make(0) : null;
    const runningMean = c.trackRunningStats ? make(0) : null;
    const runningVar = c.trackRunningStats ? make(1) : null;
    const batches = { count: c.trackRunningStats ? 0 : null };
    super(name, { device: c.device, dtype: c.dtype, weight, bias }, {
      entries: runningEntries(c.device, runningMean, runningVar, batches),
      owned: [runningMean, runningVar],
    });
    this.config = c;
    this.runningMean = runningMean;
    this.runningVar = runningVar;
    this.#batches = batches;
  }

  /**
   * Training-mode batches seen; null without running statistics. A forward whose kernels the
   * device lost is not counted (settled first).
   */
  get numBatchesTracked(): number | null {
    this.settle();
    return this.#batches.count;
  }

  /** The batch count as it is now, put back when a forward fails (ModuleCore). */
  protected override undoPoint(): () => void {
    const batches = this.#batches;
    const count = batches.count;
    return () => {
      batches.count = count;
    };
  }

  /** Whether a forward now normalizes with batch statistics (PyTorch's `bn_training`). */
  get batchStatistics(): boolean {
    return this.training || !this.config.trackRunningStats;
  }

  /** Whether a forward now updates the running statistics. */
  get updatesRunningStats(): boolean {
    return this.training && this.config.trackRunningStats;
  }

  /** The momentum of the next running update (before counting its batch). */
  nextMomentum(): number {
    return this.config.momentum ?? 1 / ((this.numBatchesTracked ?? 0) + 1);
  }

  /**
   * The forward over this rank's batch alone (BatchNorm's; SyncBatchNorm's in eval mode):
   * batchNorm with the module's parameters, on batch or running statistics as the mode says,
   * with the running update (its batch counted) when the mode makes one. Returns the output
   * and the batch statistics, or null when the running statistics normalized (the operator's
   * empty save tensors are freed then).
   */
  localForward(x: Tensor): { output: Tensor; batch: BatchStatistics | null } {
    const update = this.updatesRunningStats;
    const batch = this.batchStatistics;
    const r = batchNorm({
      input: x,
      weight: this.weight,
      bias: this.bias,
      runningMean: this.runningMean,
      runningVar: this.runningVar,
      training: batch,
      momentum: update ? this.nextMomentum() : undefined,
      eps: this.config.eps,
    });
    if (update) this.countBatch();
    if (batch) {
      return { output: r.output, batch: { saveMean: r.saveMean, saveInvstd: r.saveInvstd } };
    }
    r.saveMean.dispose();
    r.saveInvstd.dispose();
    return { output: r.output, batch: null };
  }

  /**
   * The backward of a {@linkcode localForward}: batchNormBackward through the statistics that
   * forward normalized with (`batch`, or the running statistics when it is null), the
   * parameter gradients as the module's affine flag asks.
   */
  localBackward(
    gradOut: Tensor,
    saved: { readonly input: Tensor; readonly batch: BatchStatistics | null },
  ): BatchNormBackwardResult {
    const affine = this.config.affine;
    return batchNormBackward({
      gradOut,
      input: saved.input,
      weight: this.weight,
      ...(saved.batch ?? { runningMean: this.runningMean, runningVar: this.runningVar }),
      training: saved.batch !== null,
      eps: this.config.eps,
      outputMask: [true, affine, affine],
    });
  }

  /** Counts a batch whose running update happened. */
  countBatch(): void {
    if (this.#batches.count !== null) this.#batches.count++;
  }

  /** The input of a forward: a Tensor of rank 2-8 whose dim 1 is numFeatures. */
  checkInput(op: string, input: unknown): Tensor {
    const x = requireTensor(op, "input", input);
    checkRank(op, "input", x, 2, 8);
    if (x.shape[1] !== this.config.numFeatures) {
      invalid(
        op,
        "input",
        `dim 1 of shape ${formatShape(x.shape)} must be numFeatures (${this.config.numFeatures})`,
      );
    }
    return x;
  }

  /**
   * Running mean 0, variance 1, no batch counted (PyTorch's `reset_running_stats`); ends the
   * pending forward.
   */
  resetRunningStats(): void {
    this.check("resetRunningStats");
    this.runningMean?.copy_(new Array(this.config.numFeatures).fill(0));
    this.runningVar?.copy_(new Array(this.config.numFeatures).fill(1));
    if (this.#batches.count !== null) this.#batches.count = 0;
    this.saved.clear("reset");
    this.forgetForwards();
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
