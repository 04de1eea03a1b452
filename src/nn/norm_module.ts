/**
 * What every norm module shares, as PyTorch's `nn.Module` holds it: where its parameters live,
 * the parameters themselves, the train/eval flag, the state dict and disposal. The modules
 * (`BatchNorm`, `SyncBatchNorm`, `GroupNorm`, `LayerNorm`, `RMSNorm`)
 * add their options, forward and backward.
 *
 * @module
 */

import type { Device } from "../tensor/device.ts";
import type { DType } from "../tensor/dtype.ts";
import type { Tensor } from "../tensor/tensor.ts";
import type { LoadStateDictOptions, LoadStateDictResult, StateDict } from "./state_dict.ts";

/** The state a module's shared members read and delegate to (ModuleCore, BatchNormState). */
export interface ModuleState {
  /** Where the parameters live. */
  readonly device: Device;
  /** dtype of the parameters. */
  readonly dtype: DType;
  /** The scale parameter (gamma), or null. */
  readonly weight: Tensor | null;
  /** The shift parameter (beta), or null. */
  readonly bias: Tensor | null;
  /** true in training mode. */
  training: boolean;
  /**
   * `<module>.<method>` after refusing a call on a disposed module (161002 naming the module).
   */
  check(method: string): string;
  /** Snapshots of the state-dict entries. */
  stateDict(): StateDict;
  /** Checks `dict` whole, then copies it into the entries. */
  loadStateDict(dict: StateDict, options?: LoadStateDictOptions): LoadStateDictResult;
  /** Frees what the module owns. Idempotent. */
  dispose(): void;
}

/**
 * The members every norm module has: its parameters and their placement, train/eval mode, the
 * state dict by PyTorch's names, and disposal (`using` frees the module). Not made directly:
 * each module class extends it.
 *
 * @example
 * ```ts
 * import { GroupNorm, LayerNorm, type NormModule } from "@aclnn/norm";
 * const modules: NormModule[] = [
 *   new GroupNorm({ numGroups: 2, numChannels: 4 }),
 *   new LayerNorm({ normalizedShape: 4 }),
 * ];
 * for (const m of modules) m.eval();
 * console.log(modules.map((m) => [m.training, Object.keys(m.stateDict())]));
 * // [[false, ["weight", "bias"]], [false, ["weight", "bias"]]]
 * for (const m of modules) m.dispose();
 * ```
 */
export abstract class NormModule implements Disposable {
  readonly #state: ModuleState;

  /** For the module classes: the state the shared members read. */
  protected constructor(state: ModuleState) {
    this.#state = state;
  }

  /** Where the parameters (and running statistics) live. */
  get device(): Device {
    return this.#state.device;
  }
  /** dtype of the parameters (and running statistics). */
  get dtype(): DType {
    return this.#state.dtype;
  }
  /** The learnable scale (gamma); null without one. */
  get weight(): Tensor | null {
    return this.#state.weight;
  }
  /** The learnable shift (beta); null without one (RMSNorm never has one). */
  get bias(): Tensor | null {
    return this.#state.bias;
  }
  /**
   * true in training mode (the default), false in eval mode; only the BatchNorm modules
   * compute differently in the two.
   */
  get training(): boolean {
    return this.#state.training;
  }

  /**
   * Sets training mode (or eval mode with `false`). Returns the module. A disposed module
   * refuses it (161002).
   */
  train(mode = true): this {
    this.#state.check("train");
    this.#state.training = Boolean(mode);
    return this;
  }

  /** Sets eval mode. Returns the module. A disposed module refuses it (161002). */
  eval(): this {
    this.#state.check("eval");
    this.#state.training = false;
    return this;
  }

  /** Snapshots (copies) of the parameters and buffers by PyTorch's names (see StateDict). */
  stateDict(): StateDict {
    return this.#state.stateDict();
  }

  /**
   * Copies a state dict into the module (values converted to its dtype and device), after
   * checking all of it: with `strict` (default) exactly the module's keys, and always the
   * module's shapes, float dtypes and tensors that are usable (not disposed, not on a closed
   * device); a refused dict leaves the module unchanged. Ends the pending forward (call forward
   * again before a backward).
   */
  loadStateDict(dict: StateDict, options?: LoadStateDictOptions): LoadStateDictResult {
    return this.#state.loadStateDict(dict, options);
  }

  /** Frees the parameters, running statistics and what the last forward saved. Idempotent. */
  dispose(): void {
    this.#state.dispose();
  }

  /** Same as `dispose()`, for `using`. */
  [Symbol.dispose](): void {
    this.dispose();
  }
}
