/**
 * `BatchNorm`: PyTorch's `nn.BatchNorm1d/2d/3d` as one class for inputs of rank 2-8 (channel =
 * dim 1) in any layout, on the CPU or an NPU, built on {@linkcode batchNorm} and
 * {@linkcode batchNormBackward}.
 *
 * @module
 */

import { batchNorm } from "../ops/batch_norm.ts";
import { batchNormBackward } from "../ops/batch_norm_backward.ts";
import type { Device } from "../tensor/device.ts";
import type { DType } from "../tensor/dtype.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { BatchNormState } from "./batch_norm_state.ts";
import type { BatchNormOptions } from "./options.ts";
import { checkGradOut, type NormGradients, SavedForward } from "./saved.ts";
import type { LoadStateDictOptions, LoadStateDictResult, StateDict } from "./state_dict.ts";

/** What a forward keeps for the backward: its input and the statistics it normalized with. */
interface Saved {
  readonly input: Tensor;
  /** Batch statistics (training): saveMean/saveInvstd; else the running statistics. */
  readonly batch: { readonly saveMean: Tensor; readonly saveInvstd: Tensor } | null;
}

/**
 * Batch normalization with learnable affine parameters and running statistics, as PyTorch's
 * `nn.BatchNorm2d` (and 1d/3d: any rank 2-8, channel = dim 1, any strides).
 *
 * - `forward(input)` returns the output (yours to dispose) and keeps what `backward` needs:
 *   the input (by reference: do not change or dispose it before the backward) and, in
 *   training mode, the batch statistics. In training mode it also updates `runningMean` and
 *   `runningVar` in place (momentum, unbiased variance) and counts the batch in
 *   `numBatchesTracked`.
 * - `backward(gradOut)` returns `{ gradInput, gradWeight, gradBias }` through the statistics
 *   the last forward used (eval mode: the running statistics, the inference-mode gradient).
 *   One backward per forward; a backward without a forward is an error (161002).
 * - `train()` / `eval()` switch the mode (`training`); without running statistics
 *   (`trackRunningStats: false`) batch statistics are used in both.
 * - `stateDict()` / `loadStateDict()` use PyTorch's names; `using` or `dispose()` frees the
 *   module's tensors.
 *
 * The parameters are plain tensors updated in place by your optimizer
 * (`bn.weight.copy_(...)`). The backward reads the weight as it is then, so update parameters
 * after the backward, as an optimizer step does.
 *
 * Errors: bad options 161002 at construction; an input that is not rank 2-8 or whose dim 1 is
 * not numFeatures 161002; the operators' own checks (dtypes, devices, 1 value per channel in
 * training) with their codes.
 *
 * @example
 * ```ts
 * import { BatchNorm, Tensor } from "@aclnn/norm";
 * using bn = new BatchNorm({ numFeatures: 3 });
 * const x = Tensor.random([8, 3, 4, 4], { seed: 1 });
 * using y = bn.forward(x);                           // training mode: batch statistics
 * using grads = bn.backward(Tensor.ones(y.shape));
 * console.log(grads.gradBias?.toArray(), bn.numBatchesTracked); // [128, 128, 128] 1
 * bn.eval();
 * using z = bn.forward(x);                           // eval mode: running statistics
 * console.log(Object.keys(bn.stateDict()));
 * // ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
 * ```
 */
export class BatchNorm implements Disposable {
  readonly #state: BatchNormState;
  readonly #saved = new SavedForward<Saved>();

  /** Makes the module: weight 1, bias 0, running mean 0, running variance 1 (PyTorch's). */
  constructor(options: BatchNormOptions) {
    this.#state = new BatchNormState("BatchNorm", options);
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
  /** gamma, `[C]`; null without affine parameters. */
  get weight(): Tensor | null {
    return this.#state.weight;
  }
  /** beta, `[C]`; null without affine parameters. */
  get bias(): Tensor | null {
    return this.#state.bias;
  }
  /** Running mean, `[C]`; null without running statistics. */
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
   * Normalizes `input` (rank 2-8, dim 1 = numFeatures, the module's device) and keeps what the
   * backward needs. Returns the output, in input's shape, dtype and layout.
   */
  forward(input: Tensor): Tensor {
    const op = "BatchNorm.forward";
    const s = this.#state;
    s.check(op);
    const x = s.checkInput(op, input);
    const update = s.updatesRunningStats;
    const batch = s.batchStatistics;
    const r = batchNorm({
      input: x,
      weight: s.weight,
      bias: s.bias,
      runningMean: s.runningMean,
      runningVar: s.runningVar,
      training: batch,
      momentum: update ? s.nextMomentum() : undefined,
      eps: s.config.eps,
    });
    if (update) s.countBatch();
    if (batch) {
      const { saveMean, saveInvstd } = r;
      this.#saved.save({ input: x, batch: { saveMean, saveInvstd } }, [saveMean, saveInvstd]);
    } else {
      // Eval mode: the empty save tensors are not outputs.
      r.saveMean.dispose();
      r.saveInvstd.dispose();
      this.#saved.save({ input: x, batch: null }, []);
    }
    return r.output;
  }

  /**
   * The gradients through the last forward: `gradOut` has that forward's input shape. Frees
   * what the forward kept (a refused gradOut leaves it for a corrected call);
   * gradWeight/gradBias are null without affine parameters.
   */
  backward(gradOut: Tensor): NormGradients {
    const op = "BatchNorm.backward";
    const s = this.#state;
    s.check(op);
    const saved = this.#saved.use(op);
    const dy = checkGradOut(op, gradOut, saved.input);
    const affine = s.config.affine;
    const r = batchNormBackward({
      gradOut: dy,
      input: saved.input,
      weight: s.weight,
      ...(saved.batch ?? { runningMean: s.runningMean, runningVar: s.runningVar }),
      training: saved.batch !== null,
      eps: s.config.eps,
      outputMask: [true, affine, affine],
    });
    // A refused gradOut leaves the forward's state for a corrected call.
    this.#saved.clear("used");
    return r as NormGradients;
  }

  /** Snapshots (copies) of the parameters and buffers by PyTorch's names (see StateDict). */
  stateDict(): StateDict {
    return this.#state.stateDict("BatchNorm.stateDict");
  }

  /**
   * Copies a state dict into the module (values converted to its dtype and device), after
   * checking all of it: with `strict` (default) exactly the module's keys, and always the
   * module's shapes. Ends the pending forward (call forward again before a backward).
   */
  loadStateDict(dict: StateDict, options?: LoadStateDictOptions): LoadStateDictResult {
    const result = this.#state.loadStateDict("BatchNorm.loadStateDict", dict, options);
    this.#saved.clear("reset");
    return result;
  }

  /** Running mean 0, running variance 1, numBatchesTracked 0. */
  resetRunningStats(): void {
    this.#state.resetRunningStats("BatchNorm.resetRunningStats");
    this.#saved.clear("reset");
  }

  /** Frees the parameters, running statistics and saved statistics. Idempotent. */
  dispose(): void {
    this.#saved.clear("reset");
    this.#state.dispose();
  }

  /** Same as {@linkcode BatchNorm.dispose}, for `using`. */
  [Symbol.dispose](): void {
    this.dispose();
  }
}
