/**
 * `BatchNorm`: PyTorch's `nn.BatchNorm1d/2d/3d` as one class for inputs of rank 2-8 (channel =
 * dim 1) in any layout, on the CPU or an NPU, built on {@linkcode batchNorm} and
 * {@linkcode batchNormBackward}.
 *
 * @module
 */

import type { Tensor } from "../tensor/tensor.ts";
import { type AloneSaved, BatchNormModule } from "./batch_norm_module.ts";
import { batchNormConfig, type BatchNormOptions } from "./options.ts";
import type { NormGradients } from "./saved.ts";

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
 *   One backward per forward; a backward without a forward is an error (161002), and so is a
 *   backward after a failed forward: one that threw, or one whose kernels failed on the NPU
 *   (AclError 507015 when its output was read), which also leaves `numBatchesTracked` as it
 *   was.
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
export class BatchNorm extends BatchNormModule {
  /** Makes the module: weight 1, bias 0, running mean 0, running variance 1 (PyTorch's). */
  constructor(options: BatchNormOptions) {
    super("BatchNorm", batchNormConfig("BatchNorm", options));
  }

  /**
   * Normalizes `input` (rank 2-8, dim 1 = numFeatures, the module's device) and keeps what the
   * backward needs. Returns the output, in input's shape, dtype and layout.
   */
  forward(input: Tensor): Tensor {
    const op = this.beginCall("forward");
    return this.runForward(() => this.forwardAlone(this.checkInput(op, input)));
  }

  /**
   * The gradients through the last forward: `gradOut` has that forward's input shape. Frees
   * what the forward kept (a refused gradOut leaves it for a corrected call);
   * gradWeight/gradBias are null without affine parameters.
   */
  backward(gradOut: Tensor): NormGradients {
    const { saved, dy } = this.beginBackward<AloneSaved>(gradOut);
    const grads = this.backwardAlone(dy, saved);
    this.endBackward();
    return grads;
  }
}
