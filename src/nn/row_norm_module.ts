/**
 * What LayerNorm and RMSNorm share on top of every norm module's members: the normalized
 * (trailing) dims, whether the module has learnable affine parameters, and a forward's and a
 * backward's bookkeeping (the checks of their inputs, what the forward keeps for the backward).
 *
 * @module
 */

import { requireTensor } from "../ops/validate.ts";
import type { Tensor } from "../tensor/tensor.ts";
import type { ModuleCore } from "./module_core.ts";
import { NormModule } from "./norm_module.ts";
import { checkNormalizedInput, type LayerNormConfig } from "./row_norm_options.ts";
import { checkGradOut } from "./saved.ts";

/** What a forward saves for its backward: at least its input (each module adds its own). */
interface Saved {
  readonly input: Tensor;
}

/** The options the shared members read. */
type RowNormShape = Pick<LayerNormConfig, "normalizedShape" | "elementwiseAffine">;

/**
 * The members of `LayerNorm` and `RMSNorm` beyond {@linkcode NormModule}'s: the normalized
 * (trailing) dims and whether the module has learnable affine parameters. Not made directly:
 * each of the two classes extends it.
 *
 * @example
 * ```ts
 * import { LayerNorm, RMSNorm, type RowNormModule } from "@aclnn/norm";
 * const modules: RowNormModule[] = [
 *   new LayerNorm({ normalizedShape: [2, 3] }),
 *   new RMSNorm({ normalizedShape: 3, elementwiseAffine: false }),
 * ];
 * console.log(modules.map((m) => [m.normalizedShape, m.elementwiseAffine]));
 * // [[[2, 3], true], [[3], false]]
 * for (const m of modules) m.dispose();
 * ```
 */
export abstract class RowNormModule extends NormModule {
  readonly #core: ModuleCore<Saved>;
  readonly #shape: RowNormShape;

  /**
   * For the module classes: the core the shared members keep the module's state and what a
   * forward saves in, and their options.
   */
  protected constructor(core: ModuleCore<Saved>, shape: RowNormShape) {
    super(core);
    this.#core = core;
    this.#shape = shape;
  }

  /** The normalized (trailing) dims. */
  get normalizedShape(): readonly number[] {
    return this.#shape.normalizedShape;
  }
  /** Whether the module has learnable parameters (LayerNorm: weight and bias; RMSNorm: weight). */
  get elementwiseAffine(): boolean {
    return this.#shape.elementwiseAffine;
  }

  /**
   * For the module classes: `input` after a forward's checks, in order: the module is not
   * disposed, `input` is a Tensor, its last dims are normalizedShape (161002 naming `input`).
   */
  protected forwardInput(input: Tensor): Tensor {
    const op = this.#core.check("forward");
    const x = requireTensor(op, "input", input);
    checkNormalizedInput(op, x, this.#shape.normalizedShape);
    return x;
  }

  /**
   * For the module classes: runs a forward's `body` (from {@linkcode RowNormModule.forwardInput}
   * to saving; it returns the output) so that a forward that fails, at once or later on the
   * device, leaves nothing for a backward (ModuleCore.runForward).
   */
  protected runForward(body: () => Tensor): Tensor {
    return this.#core.runForward(body);
  }

  /** For the module classes: keeps `saved` (owning `owned`) for the next backward. */
  protected saveForBackward<T extends { readonly input: Tensor }>(
    saved: T,
    owned: readonly Tensor[],
  ): void {
    this.#core.saved.save(saved, owned);
  }

  /**
   * For the module classes: what the last forward saved (`T`, the type the module's forward
   * gave {@linkcode RowNormModule.saveForBackward}), and `gradOut` checked against its input,
   * after a backward's checks in order: the module is not disposed, a forward was made,
   * gradOut is a Tensor of that forward's input shape.
   */
  protected backwardInput<T extends { readonly input: Tensor }>(
    gradOut: Tensor,
  ): { saved: T; dy: Tensor } {
    const op = this.#core.check("backward");
    const saved = this.#core.saved.use(op) as T;
    return { saved, dy: checkGradOut(op, gradOut, saved.input) };
  }

  /** For the module classes: frees what the forward saved, once its backward has succeeded. */
  protected endBackward(): void {
    this.#core.saved.clear("used");
  }
}
