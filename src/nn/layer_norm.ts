/**
 * `LayerNorm`: PyTorch's `nn.LayerNorm` on the CPU or an NPU, built on {@linkcode layerNorm}
 * and {@linkcode layerNormBackward}.
 *
 * @module
 */

import { layerNorm } from "../ops/layer_norm.ts";
import { layerNormBackward } from "../ops/layer_norm_backward.ts";
import { disposable } from "../ops/results.ts";
import { Tensor } from "../tensor/tensor.ts";
import {
  type LayerNormConfig,
  layerNormConfig,
  type LayerNormOptions,
} from "./row_norm_options.ts";
import { initialParameters } from "./norm_module.ts";
import { RowNormModule } from "./row_norm_module.ts";
import type { MeanRstdSaved, NormGradients } from "./saved.ts";

/**
 * Layer normalization over the trailing `normalizedShape` dims with learnable elementwise
 * affine parameters, as PyTorch's `nn.LayerNorm(normalized_shape, eps, elementwise_affine,
 * bias)`. Inputs of any rank up to 8 whose last dims are normalizedShape, any strides, any
 * float dtype (float32 parameters with float16/bfloat16 data are mixed precision, as CANN
 * allows). LayerNorm has no running statistics: train and eval mode compute the same.
 *
 * - `forward(input)` returns the output (yours to dispose) and keeps the input (by reference)
 *   and the per-row mean and rstd (float32) for the backward.
 * - `backward(gradOut)` returns `{ gradInput, gradWeight, gradBias }` (the parameter gradients
 *   in the module's dtype, of shape normalizedShape; null without them); one backward per
 *   forward.
 * - `stateDict()` holds `weight` and `bias`, PyTorch's keys.
 *
 * @example
 * ```ts
 * import { LayerNorm, Tensor } from "@aclnn/norm";
 * using ln = new LayerNorm({ normalizedShape: 8 });
 * const x = Tensor.random([2, 3, 8], { seed: 1 });
 * using y = ln.forward(x);
 * using grads = ln.backward(Tensor.ones(y.shape));
 * console.log(y.shape, grads.gradBias?.toArray()); // [2, 3, 8] [6, 6, 6, 6, 6, 6, 6, 6]
 * ```
 */
export class LayerNorm extends RowNormModule {
  readonly #config: LayerNormConfig;

  /** Makes the module: weight 1, bias 0 (PyTorch's). */
  constructor(options: LayerNormOptions) {
    const c = layerNormConfig("LayerNorm", options);
    const affine = c.elementwiseAffine;
    super("LayerNorm", c, initialParameters(c, c.normalizedShape, affine, affine && c.bias));
    this.#config = c;
  }

  /** Added to the variance. */
  get eps(): number {
    return this.#config.eps;
  }

  /**
   * Normalizes `input` (its last dims normalizedShape, on the module's device) and keeps what
   * the backward needs. Returns the output, in input's shape, dtype and layout.
   */
  forward(input: Tensor): Tensor {
    const op = this.beginCall("forward");
    return this.runForward(() => {
      const x = this.checkInput(op, input);
      const r = layerNorm({
        input: x,
        normalizedShape: this.#config.normalizedShape,
        weight: this.weight,
        bias: this.bias,
        eps: this.#config.eps,
      });
      const { mean, rstd } = r;
      this.saveForBackward<MeanRstdSaved>({ input: x, mean, rstd }, [mean, rstd]);
      return r.output;
    });
  }

  /**
   * The gradients through the last forward: `gradOut` has that forward's input shape. Frees
   * what the forward kept (a refused gradOut leaves it for a corrected call).
   */
  backward(gradOut: Tensor): NormGradients {
    const { saved, dy } = this.beginBackward<MeanRstdSaved>(gradOut);
    const { normalizedShape, dtype, device } = this.#config;
    // The parameter gradients in the parameters' dtype (the operator casts to its outputs).
    const param = (p: Tensor | null) => p ? Tensor.empty(normalizedShape, dtype, device) : null;
    const gradWeight = param(this.weight);
    const gradBias = param(this.bias);
    try {
      const r = layerNormBackward({
        gradOut: dy,
        input: saved.input,
        normalizedShape,
        mean: saved.mean,
        rstd: saved.rstd,
        weight: this.weight,
        bias: this.bias,
        outputMask: [true, gradWeight !== null, gradBias !== null],
        out: { gradWeight, gradBias },
      });
      this.endBackward();
      const grads = { gradInput: r.gradInput as Tensor, gradWeight, gradBias };
      return disposable(grads, [grads.gradInput, gradWeight, gradBias]);
    } catch (e) {
      gradWeight?.dispose();
      gradBias?.dispose();
      throw e;
    }
  }
}
