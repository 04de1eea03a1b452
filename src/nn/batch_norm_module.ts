/**
 * What BatchNorm and SyncBatchNorm share on top of every norm module's members: their options
 * and running statistics, and resetting those.
 *
 * @module
 */

import type { Tensor } from "../tensor/tensor.ts";
import type { BatchNormState } from "./batch_norm_state.ts";
import { NormModule } from "./norm_module.ts";

/**
 * The members of `BatchNorm` and `SyncBatchNorm` beyond {@linkcode NormModule}'s: the channel
 * count, eps and momentum, whether the module has affine parameters and running statistics,
 * and those statistics. Not made directly: each of the two classes extends it.
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
  readonly #state: BatchNormState;

  /** For the module classes: the state the shared members read. */
  protected constructor(state: BatchNormState) {
    super(state);
    this.#state = state;
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
  /** Running mean, `[C]` (the same on every rank of a SyncBatchNorm); null without them. */
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

  /** Running mean 0, running variance 1, numBatchesTracked 0. Ends the pending forward. */
  resetRunningStats(): void {
    this.#state.resetRunningStats();
  }
}
