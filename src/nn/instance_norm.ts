/**
 * `InstanceNorm`: PyTorch's `nn.InstanceNorm1d/2d/3d` as one class for batched inputs
 * [N, C, L], [N, C, H, W], [N, C, D, H, W] (any rank 3-8, channel = dim 1) in any layout, built
 * on {@linkcode instanceNorm} (forward) and GroupNorm's backward with group = C
 * ({@linkcode groupNormGradients}); with running statistics in eval mode, on {@linkcode batchNorm} and
 * {@linkcode batchNormBackward} as BatchNorm's eval mode.
 *
 * @module
 */

import { instanceNorm } from "../ops/instance_norm.ts";
import { invalid } from "../ops/validate.ts";
import { formatShape } from "../tensor/layout.ts";
import { Tensor } from "../tensor/tensor.ts";
import { type AloneSaved, BatchNormModule } from "./batch_norm_module.ts";
import { groupNormGradients } from "./group_norm.ts";
import { instanceNormConfig, type InstanceNormOptions } from "./options.ts";
import type { MeanRstdSaved, NormGradients } from "./saved.ts";

/**
 * Instance normalization, as PyTorch's `nn.InstanceNorm1d/2d/3d(numFeatures)`: each (n, c)
 * plane of a batched input normalized by its own mean and biased variance. PyTorch's defaults:
 * eps 1e-5, momentum 0.1, no affine parameters, no running statistics.
 *
 * - `forward(input)` (rank 3-8, dim 1 = numFeatures) returns the output (yours to dispose) and
 *   keeps the input (by reference) and the per-(n, c) mean and rstd for the backward. The
 *   statistics come from aclnnInstanceNorm (mean and biased variance in input's dtype); rstd =
 *   1/sqrt(variance + eps) is formed on the host from them (a synchronisation on an NPU).
 * - With `trackRunningStats`, a training-mode forward updates `runningMean` and `runningVar`
 *   as torch does (`aten::instance_norm` runs batch_norm over the N * C planes, then averages
 *   the N updates per channel): r = (1 - momentum) * r + momentum * (the average over n of the
 *   planes' mean, or of their unbiased variance, sum((x - mean)^2) / (H*W - 1)); eval mode then
 *   normalizes with the running statistics. `numBatchesTracked` is in the state dict and stays
 *   0, as in torch (`_InstanceNorm` never counts).
 * - `backward(gradOut)` returns `{ gradInput, gradWeight, gradBias }`: GroupNorm's backward
 *   with group = C (aclnnGroupNormBackward), or BatchNorm's inference-mode backward through the
 *   running statistics.
 * - `stateDict()` keys as torch's: `weight`, `bias` (affine), `running_mean`, `running_var`,
 *   `num_batches_tracked` (trackRunningStats).
 *
 * Unbatched input ([C, L], [C, H, W], ... which torch's fixed-rank classes accept) is refused:
 * one class for every rank cannot tell [C, H, W] from [N, C, L]. Pass `x.reshape([1,
 * ...x.shape])`. As in torch, instance statistics need more than one element per plane.
 * On an NPU: aclnnInstanceNorm runs on the Atlas inference series (310P) only, so elsewhere the
 * forward on the planes' statistics is refused (161002 naming the SoC); and the 310P has no
 * aclnnGroupNormBackward, so there the backward through them is refused the same way. The CPU
 * backend runs both everywhere.
 *
 * @example
 * ```ts
 * import { InstanceNorm, Tensor } from "@aclnn/norm";
 * using norm = new InstanceNorm({ numFeatures: 3, affine: true });
 * const x = Tensor.random([2, 3, 4, 4], { seed: 1 });
 * using y = norm.forward(x);
 * using grads = norm.backward(Tensor.ones(y.shape));
 * console.log(grads.gradInput.shape, grads.gradBias?.toArray()); // [2, 3, 4, 4] [32, 32, 32]
 * ```
 */
export class InstanceNorm extends BatchNormModule {
  /** Makes the module: weight 1, bias 0, running mean 0, running variance 1 (PyTorch's). */
  constructor(options: InstanceNormOptions) {
    super("InstanceNorm", instanceNormConfig("InstanceNorm", options));
  }

  /**
   * Normalizes `input` (rank 3-8, dim 1 = numFeatures, the module's device) and keeps what the
   * backward needs. Returns the output, in input's shape, dtype and layout.
   */
  forward(input: Tensor): Tensor {
    const op = this.beginCall("forward");
    return this.runForward(() => {
      if (input instanceof Tensor && input.rank < 3) {
        invalid(
          op,
          "input",
          `shape ${
            formatShape(input.shape)
          } must be batched, [N, C, ...] of rank 3-8 (an unbatched ` +
            "[C, L] input: pass input.reshape([1, ...input.shape]))",
        );
      }
      const x = this.checkInput(op, input);
      return this.usesBatchStatistics ? this.#forwardInstances(op, x) : this.forwardAlone(x);
    });
  }

  /** The forward on the planes' own statistics (training mode, or no running statistics). */
  #forwardInstances(op: string, x: Tensor): Tensor {
    const [N, C] = x.shape;
    const S = x.shape.slice(2).reduce((a, b) => a * b, 1);
    if (S <= 1) {
      invalid(
        op,
        "input",
        `shape ${
          formatShape(x.shape)
        }: expected more than 1 spatial element when training (torch's rule)`,
      );
    }
    if (this.affine && x.dtype !== this.dtype) {
      invalid(
        op,
        "input",
        `dtype ${x.dtype} differs from the module's dtype ${this.dtype} (its weight and bias): ` +
          `make the module with { dtype: "${x.dtype}" }, or pass input in ${this.dtype}`,
      );
    }
    // aclnnInstanceNorm takes 4-D x and requires gamma and beta (in x's dtype).
    const view = x.rank === 4 ? x : x.reshape([N, C, S, 1]);
    const copied = view.storage !== x.storage;
    const gamma = this.weight ?? Tensor.ones([C], x.dtype, x.device);
    const beta = this.bias ?? Tensor.zeros([C], x.dtype, x.device);
    let r;
    try {
      r = instanceNorm({ x: view, gamma, beta, dataFormat: "NCHW", eps: this.eps });
    } finally {
      if (gamma !== this.weight) gamma.dispose();
      if (beta !== this.bias) beta.dispose();
      if (copied) view.dispose();
    }
    const mean = r.mean.view([N, C]);
    const variance = r.variance.toFloat64Array();
    r.variance.dispose();
    const eps = Math.fround(this.eps); // the kernels' eps, a C float
    const rstd = Tensor.fromArray(variance.map((v) => 1 / Math.sqrt(v + eps)), [N, C], x.dtype);
    const owned = rstd.to(x.device);
    if (owned !== rstd) rstd.dispose();
    this.saveForBackward<MeanRstdSaved>({ input: x, mean, rstd: owned }, [mean, owned]);
    if (this.updatesRunningStats) this.#updateRunning(mean.toFloat64Array(), variance, N, C, S);
    if (!copied) return x.rank === 4 ? r.y : r.y.view(x.shape);
    // x's spatial dims do not merge into one (a permuted rank-5 input): the kernel ran on a
    // contiguous copy, and the output takes x's layout back, as every module's output does.
    const y = Tensor.emptyLike(x).copy_(r.y.view(x.shape));
    r.y.dispose();
    return y;
  }

  /** The running update of `aten::instance_norm` from the planes' mean and biased variance. */
  #updateRunning(mean: Float64Array, variance: Float64Array, N: number, C: number, S: number) {
    const m = this.momentum ?? 0.1;
    const rm = this.runningMean!.toFloat64Array();
    const rv = this.runningVar!.toFloat64Array();
    for (let c = 0; c < C; c++) {
      let sm = 0;
      let sv = 0;
      for (let n = 0; n < N; n++) {
        sm += (1 - m) * rm[c] + m * mean[n * C + c];
        sv += (1 - m) * rv[c] + m * variance[n * C + c] * S / (S - 1);
      }
      rm[c] = sm / N;
      rv[c] = sv / N;
    }
    this.runningMean!.copy_(rm);
    this.runningVar!.copy_(rv);
  }

  /**
   * The gradients through the last forward: `gradOut` has that forward's input shape. Frees
   * what the forward kept (a refused gradOut leaves it for a corrected call);
   * gradWeight/gradBias are null without affine parameters.
   */
  backward(gradOut: Tensor): NormGradients {
    const { saved, dy } = this.beginBackward<MeanRstdSaved | AloneSaved>(gradOut);
    if (!("rstd" in saved)) {
      const grads = this.backwardAlone(dy, saved);
      this.endBackward();
      return grads;
    }
    const grads = groupNormGradients(dy, saved, this.weight, this.numFeatures);
    this.endBackward();
    return grads;
  }
}
