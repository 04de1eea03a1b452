/**
 * `GroupNorm`: PyTorch's `nn.GroupNorm` for inputs of rank 2-8 (channel = dim 1) in any
 * layout, on the CPU or an NPU, built on {@linkcode groupNorm} and {@linkcode groupNormBackward}.
 *
 * @module
 */

import { groupNorm } from "../ops/group_norm.ts";
import { groupNormBackward } from "../ops/group_norm_backward.ts";
import { disposable } from "../ops/results.ts";
import { checkRank, invalid, requireTensor } from "../ops/validate.ts";
import { formatShape } from "../tensor/layout.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { initialParameters, NormModule } from "./norm_module.ts";
import { type GroupNormConfig, groupNormConfig, type GroupNormOptions } from "./options.ts";
import type { MeanRstdSaved, NormGradients } from "./saved.ts";

/**
 * Group normalization with learnable per-channel affine parameters, as PyTorch's
 * `nn.GroupNorm(numGroups, numChannels)`: the C channels of each sample are split into
 * numGroups groups, each normalized by its own mean and biased variance. Inputs of rank 2-8
 * (channel = dim 1), any strides. GroupNorm has no running statistics: train and eval mode
 * compute the same (`train()`/`eval()` exist for a uniform module API).
 *
 * - `forward(input)` returns the output (yours to dispose) and keeps the input (by reference)
 *   and the per-(n, group) mean and rstd for the backward.
 * - `backward(gradOut)` returns `{ gradInput, gradWeight, gradBias }`; one backward per
 *   forward, and a backward without a forward, or after a failed one (see BatchNorm), is an
 *   error (161002).
 * - `stateDict()` holds `weight` and `bias` (none without affine parameters).
 *
 * The statistics have input's dtype, as aclnnGroupNorm writes them; the parameters must have
 * input's dtype too (the operator's rule), so make the module with the dtype of its data.
 *
 * @example
 * ```ts
 * import { GroupNorm, Tensor } from "@aclnn/norm";
 * using gn = new GroupNorm({ numGroups: 2, numChannels: 4 });
 * const x = Tensor.random([2, 4, 3, 3], { seed: 1 });
 * using y = gn.forward(x);
 * using grads = gn.backward(Tensor.ones(y.shape));
 * console.log(grads.gradInput.shape, grads.gradBias?.toArray()); // [2, 4, 3, 3] [18, 18, 18, 18]
 * ```
 */
export class GroupNorm extends NormModule {
  readonly #config: GroupNormConfig;

  /** Makes the module: weight 1, bias 0 (PyTorch's). */
  constructor(options: GroupNormOptions) {
    const c = groupNormConfig("GroupNorm", options);
    super("GroupNorm", initialParameters(c, [c.numChannels], c.affine, c.affine));
    this.#config = c;
  }

  /** Number of groups. */
  get numGroups(): number {
    return this.#config.numGroups;
  }
  /** C, the channel count. */
  get numChannels(): number {
    return this.#config.numChannels;
  }
  /** Added to the variance. */
  get eps(): number {
    return this.#config.eps;
  }
  /** Whether the module has `weight` and `bias`. */
  get affine(): boolean {
    return this.#config.affine;
  }

  /**
   * Normalizes `input` (rank 2-8, dim 1 = numChannels, the module's device and dtype) and
   * keeps what the backward needs. Returns the output, in input's shape, dtype and layout.
   */
  forward(input: Tensor): Tensor {
    const op = this.beginCall("forward");
    return this.runForward(() => {
      const x = requireTensor(op, "input", input);
      checkRank(op, "input", x, 2, 8);
      const C = this.#config.numChannels;
      if (x.shape[1] !== C) {
        invalid(op, "input", `dim 1 of shape ${formatShape(x.shape)} must be numChannels (${C})`);
      }
      // aclnnGroupNorm's rule (gamma in input's dtype) in the module's terms: its dtype option.
      const own = this.dtype;
      if (this.affine && x.dtype !== own) {
        invalid(
          op,
          "input",
          `dtype ${x.dtype} differs from the module's dtype ${own} (its weight and bias): ` +
            `make the module with { dtype: "${x.dtype}" }, or pass input in ${own}`,
        );
      }
      const r = groupNorm({
        input: x,
        gamma: this.weight,
        beta: this.bias,
        group: this.#config.numGroups,
        eps: this.#config.eps,
      });
      const { mean, rstd } = r;
      this.saveForBackward<MeanRstdSaved>({ input: x, mean, rstd }, [mean, rstd]);
      return r.output;
    });
  }

  /**
   * The gradients through the last forward: `gradOut` has that forward's input shape. Frees
   * what the forward kept (a refused gradOut leaves it for a corrected call);
   * gradWeight/gradBias are null without affine parameters.
   */
  backward(gradOut: Tensor): NormGradients {
    const { saved, dy } = this.beginBackward<MeanRstdSaved>(gradOut);
    const grads = groupNormGradients(dy, saved, this.weight, this.#config.numGroups);
    this.endBackward();
    return grads;
  }
}

/**
 * The gradients of a GroupNorm forward (`group` groups; InstanceNorm's with group = C) through
 * its saved input, mean and rstd: groupNormBackward, with gradWeight/gradBias (null) only when
 * there is a `weight`.
 */
export function groupNormGradients(
  gradOut: Tensor,
  saved: MeanRstdSaved,
  weight: Tensor | null,
  group: number,
): NormGradients {
  const affine = weight !== null;
  const r = groupNormBackward({
    gradOut,
    input: saved.input,
    mean: saved.mean,
    rstd: saved.rstd,
    gamma: weight,
    group,
    outputMask: [true, affine, affine],
  });
  const grads = {
    gradInput: r.gradInput as Tensor,
    gradWeight: r.gradGamma,
    gradBias: r.gradBeta,
  };
  return disposable(grads, [grads.gradInput, grads.gradWeight, grads.gradBias]);
}
