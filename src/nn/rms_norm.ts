/**
 * `RMSNorm`: PyTorch's `nn.RMSNorm` (torch >= 2.4) on the CPU or an NPU, built on
 * {@linkcode rmsNorm} and {@linkcode rmsNormGrad}.
 *
 * @module
 */

import { rmsNorm } from "../ops/rms_norm.ts";
import { rmsNormGrad } from "../ops/rms_norm_grad.ts";
import { disposable } from "../ops/results.ts";
import { keep } from "../tensor/scope.ts";
import { Tensor } from "../tensor/tensor.ts";
import {
  machineEpsilon,
  type RMSNormConfig,
  rmsNormConfig,
  type RMSNormOptions,
} from "./row_norm_options.ts";
import { RowNormModule } from "./row_norm_module.ts";

/** The gradients {@linkcode RMSNorm.backward} returns; `using` frees them. */
export interface RMSNormGradients extends Disposable {
  /** dL/dinput: the input's shape and dtype. */
  gradInput: Tensor;
  /** dL/dweight, shape normalizedShape in the module's dtype; null without affine weight. */
  gradWeight: Tensor | null;
}

/** What a forward keeps for the backward: its input and the per-row rstd. */
interface Saved {
  readonly input: Tensor;
  readonly rstd: Tensor;
}

/**
 * Root mean square normalization over the trailing `normalizedShape` dims with a learnable
 * elementwise weight, as PyTorch's `nn.RMSNorm(normalized_shape, eps, elementwise_affine)`:
 * y = x / sqrt(mean(x^2) + eps) * weight, no mean subtracted, no bias. eps defaults to the
 * machine epsilon of the input's dtype, as PyTorch's `eps=None`. Inputs of rank 1-8 whose
 * last dims are normalizedShape, any strides; float32 weights with float16/bfloat16 data are
 * mixed precision where CANN allows it (not on the Atlas inference series).
 *
 * - `forward(input)` returns the output (yours to dispose) and keeps the input (by reference)
 *   and the per-row rstd (float32) for the backward.
 * - `backward(gradOut)` returns `{ gradInput, gradWeight }`; one backward per forward.
 * - `stateDict()` holds `weight`, PyTorch's key.
 *
 * @example
 * ```ts
 * import { RMSNorm, Tensor } from "@aclnn/norm";
 * using norm = new RMSNorm({ normalizedShape: [16], eps: 1e-6 });
 * const x = Tensor.random([2, 4, 16], { seed: 1 });
 * using y = norm.forward(x);
 * using grads = norm.backward(Tensor.ones(y.shape));
 * console.log(y.shape, grads.gradWeight?.shape); // [2, 4, 16] [16]
 * ```
 */
export class RMSNorm extends RowNormModule {
  readonly #config: RMSNormConfig;
  /** Ones of the module's dtype: the operator's gamma without an affine weight. */
  readonly #ones: Tensor | null;

  /** Makes the module: weight 1 (PyTorch's). */
  constructor(options: RMSNormOptions) {
    const c = rmsNormConfig("RMSNorm", options);
    const ones = keep(Tensor.full(c.normalizedShape, 1, c.dtype, c.device));
    const weight = c.elementwiseAffine ? ones : null;
    const helper = c.elementwiseAffine ? null : ones;
    const params = { device: c.device, dtype: c.dtype, weight, bias: null };
    super("RMSNorm", c, params, { owned: [helper] });
    this.#config = c;
    this.#ones = helper;
  }

  /** Added to mean(x^2); null: the machine epsilon of the input's dtype. */
  get eps(): number | null {
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
      const r = rmsNorm({
        x,
        gamma: this.#gamma(),
        epsilon: this.#config.eps ?? machineEpsilon(x.dtype),
      });
      this.saveForBackward<Saved>({ input: x, rstd: r.rstd }, [r.rstd]);
      return r.y;
    });
  }

  /**
   * The gradients through the last forward: `gradOut` has that forward's input shape. Frees
   * what the forward kept (a refused gradOut leaves it for a corrected call).
   */
  backward(gradOut: Tensor): RMSNormGradients {
    const { saved, dy } = this.beginBackward<Saved>(gradOut);
    const r = rmsNormGrad({ dy, x: saved.input, rstd: saved.rstd, gamma: this.#gamma() });
    this.endBackward();
    // dgamma is float32 (the operator's rule): the module's gradient has the weight's dtype.
    let gradWeight: Tensor | null = null;
    if (this.weight && this.#config.dtype === "float32") {
      gradWeight = r.dgamma;
    } else {
      if (this.weight) {
        const { normalizedShape, dtype, device } = this.#config;
        gradWeight = Tensor.empty(normalizedShape, dtype, device).copy_(r.dgamma);
      }
      r.dgamma.dispose();
    }
    const grads = { gradInput: r.dx, gradWeight };
    return disposable(grads, [r.dx, gradWeight]);
  }

  #gamma(): Tensor {
    return (this.weight ?? this.#ones)!;
  }
}
