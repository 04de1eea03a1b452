/**
 * What LayerNorm and RMSNorm share on top of every norm module's members: the normalized
 * (trailing) dims, whether the module has learnable affine parameters, and the check of a
 * forward's input.
 *
 * @module
 */

import { requireTensor } from "../ops/validate.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { type ModuleBuffers, type ModuleParameters, NormModule } from "./norm_module.ts";
import { checkNormalizedInput, type LayerNormConfig } from "./row_norm_options.ts";

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
  readonly #shape: RowNormShape;

  /**
   * For the module classes: the module named `name` with `params` and `buffers` (as
   * {@linkcode NormModule}'s), over the trailing dims `shape.normalizedShape`.
   */
  protected constructor(
    name: string,
    shape: RowNormShape,
    params: ModuleParameters,
    buffers?: ModuleBuffers,
  ) {
    super(name, params, buffers);
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
   * For the module classes: the input of a forward (`op` the call), a Tensor whose last dims
   * are normalizedShape (161001/161002 naming `input`).
   */
  protected checkInput(op: string, input: unknown): Tensor {
    const x = requireTensor(op, "input", input);
    checkNormalizedInput(op, x, this.#shape.normalizedShape);
    return x;
  }
}
