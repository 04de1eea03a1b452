/**
 * The base of every norm module, as PyTorch's `nn.Module` holds it: where its parameters live,
 * the parameters themselves, the train/eval flag, the state dict, the tensors it owns, what its
 * last forward saved, and its lifecycle (a disposed module refuses every call, naming it). The
 * modules (`BatchNorm`, `SyncBatchNorm`, `GroupNorm`, `LayerNorm`, `RMSNorm`) add their options,
 * forward and backward, each directly or through a family base (`BatchNormModule`,
 * `RowNormModule`).
 *
 * A forward that fails leaves the module as before it: one that throws at once (undone then;
 * one its checks refused ran nothing and leaves the previous forward for its backward), and
 * one whose kernels fail on the device after it returned, found out when its output is
 * read (a kernel fault, AclError 507015 at the synchronisation): the module asks the device
 * what became of the forward's work at its next call, undoes the state the forward changed (the
 * batch count) and refuses the backward, naming the failure. The running statistics are
 * written by the failed kernels themselves, which the device lost.
 *
 * @module
 */

import type { Device } from "../tensor/device.ts";
import type { DType } from "../tensor/dtype.ts";
import { keep } from "../tensor/scope.ts";
import { Tensor } from "../tensor/tensor.ts";
import { failureOf, QueuedForward, refusedByChecks } from "./queued_forward.ts";
import { checkGradOut, disposedModule, SavedForward } from "./saved.ts";
import {
  loadState,
  type LoadStateDictOptions,
  type LoadStateDictResult,
  snapshot,
  type StateDict,
  type StateEntry,
} from "./state_dict.ts";

/** Where a module's parameters live, and the parameters (null where it has none). */
export interface ModuleParameters {
  /** Where the parameters live. */
  readonly device: Device;
  /** dtype of the parameters. */
  readonly dtype: DType;
  /** The scale (gamma), or null. */
  readonly weight: Tensor | null;
  /** The shift (beta), or null. */
  readonly bias: Tensor | null;
}

/** What a module owns beyond its parameters: its other state-dict entries and tensors. */
export interface ModuleBuffers {
  /** State-dict entries after `weight` and `bias` (PyTorch's order: buffers follow). */
  readonly entries?: readonly StateEntry[];
  /** Other tensors the module frees when disposed (buffers, helpers). */
  readonly owned?: readonly (Tensor | null)[];
}

/**
 * A module's parameters with PyTorch's initial values: weight all 1 and bias all 0, of
 * `shape` on `place`'s device and dtype, each made only where `weight` / `bias` ask for it.
 * They are kept out of any tidy scope: the module frees them in dispose().
 */
export function initialParameters(
  place: { readonly device: Device; readonly dtype: DType },
  shape: readonly number[],
  weight: boolean,
  bias: boolean,
): ModuleParameters {
  const make = (value: number) => keep(Tensor.full(shape, value, place.dtype, place.device));
  return {
    device: place.device,
    dtype: place.dtype,
    weight: weight ? make(1) : null,
    bias: bias ? make(0) : null,
  };
}

/**
 * The members every norm module has: its parameters and their placement, train/eval mode, the
 * state dict by PyTorch's names, and disposal (`using` frees the module). Not made directly:
 * each module class extends it, and runs its forward and backward through the protected
 * members (module doc: a failed forward leaves nothing for a backward).
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
  readonly #name: string;
  readonly #params: ModuleParameters;
  readonly #entries: readonly StateEntry[];
  readonly #owned: readonly (Tensor | null)[];
  /** What the last forward saved for its backward: at least its input. */
  readonly #saved = new SavedForward<{ readonly input: Tensor }>();
  readonly #queued = new QueuedForward();
  #training = true;
  #disposed = false;

  /**
   * For the module classes: the module named `name` (in messages: `<name>.<method>`), with
   * `params`. Its state-dict entries are `weight` and `bias` (those present, PyTorch's order),
   * then `buffers.entries`; it frees the parameters when disposed, and `buffers.owned`.
   */
  protected constructor(name: string, params: ModuleParameters, buffers: ModuleBuffers = {}) {
    this.#name = name;
    this.#params = params;
    const affine: StateEntry[] = [];
    if (params.weight) affine.push({ key: "weight", tensor: params.weight });
    if (params.bias) affine.push({ key: "bias", tensor: params.bias });
    this.#entries = [...affine, ...buffers.entries ?? []];
    this.#owned = [params.weight, params.bias, ...buffers.owned ?? []];
  }

  /** Where the parameters (and running statistics) live. */
  get device(): Device {
    return this.#params.device;
  }
  /** dtype of the parameters (and running statistics). */
  get dtype(): DType {
    return this.#params.dtype;
  }
  /** The learnable scale (gamma); null without one. */
  get weight(): Tensor | null {
    return this.#params.weight;
  }
  /** The learnable shift (beta); null without one (RMSNorm never has one). */
  get bias(): Tensor | null {
    return this.#params.bias;
  }
  /**
   * true in training mode (the default), false in eval mode; only the BatchNorm modules
   * compute differently in the two.
   */
  get training(): boolean {
    return this.#training;
  }

  /**
   * Sets training mode (or eval mode with `false`). Returns the module. A disposed module
   * refuses it (161002).
   */
  train(mode = true): this {
    this.beginCall("train");
    this.#training = Boolean(mode);
    return this;
  }

  /** Sets eval mode. Returns the module. A disposed module refuses it (161002). */
  eval(): this {
    this.beginCall("eval");
    this.#training = false;
    return this;
  }

  /** Snapshots (copies) of the parameters and buffers by PyTorch's names (see StateDict). */
  stateDict(): StateDict {
    return snapshot(this.beginCall("stateDict"), this.#entries);
  }

  /**
   * Copies a state dict into the module (values converted to its dtype and device), after
   * checking all of it: with `strict` (default) exactly the module's keys, and always the
   * module's shapes, float dtypes and tensors that are usable (not disposed, not on a closed
   * device); a refused dict leaves the module unchanged. Ends the pending forward (call forward
   * again before a backward).
   */
  loadStateDict(dict: StateDict, options?: LoadStateDictOptions): LoadStateDictResult {
    const op = this.beginCall("loadStateDict");
    const result = loadState(op, this.#entries, dict, options);
    this.stateReplaced();
    return result;
  }

  /** Frees the parameters, running statistics and what the last forward saved. Idempotent. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#saved.clear("reset");
    for (const t of this.#owned) t?.dispose();
  }

  /** Same as `dispose()`, for `using`. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  /**
   * For the module classes: `<name>.<method>` (the `op` of messages), after refusing a call on
   * a disposed module (161002) and settling a forward whose work the device has finished or
   * lost since ({@linkcode NormModule.settleQueuedForward}).
   */
  protected beginCall(method: string): string {
    const op = `${this.#name}.${method}`;
    if (this.#disposed) disposedModule(op);
    this.settleQueuedForward();
    return op;
  }

  /**
   * For the module classes: runs a forward's `body` (its checks, kernels and saving; it
   * returns the output). When it throws, the state it changed is undone
   * ({@linkcode NormModule.undoPoint}) and, unless its checks refused it (161001/161002), what
   * the last forward saved is dropped ("failed"); when it returns with work still queued on
   * the device, that work is remembered until the device says what became of it.
   */
  protected runForward(body: () => Tensor): Tensor {
    const undo = this.#beginForward();
    try {
      const output = body();
      this.#forwardReturned(output.device, undo);
      return output;
    } catch (e) {
      this.#forwardFailed(e, undo);
      throw e;
    }
  }

  /** {@linkcode NormModule.runForward} for an asynchronous forward (SyncBatchNorm's). */
  protected async runForwardAsync(body: () => Promise<Tensor>): Promise<Tensor> {
    const undo = this.#beginForward();
    try {
      const output = await body();
      this.#forwardReturned(output.device, undo);
      return output;
    } catch (e) {
      this.#forwardFailed(e, undo);
      throw e;
    }
  }

  /**
   * For a module whose forward changes more than what it saves (the BatchNorm family's batch
   * count): a function that puts that state back as it is now. Nothing by default.
   */
  protected undoPoint(): () => void {
    return () => {};
  }

  /**
   * For the module classes: asks the device what became of the queued forwards' work. Done,
   * they are forgotten; lost to a fault, their state changes are undone and what they saved
   * dropped ("failed": the next backward names the failure).
   */
  protected settleQueuedForward(): void {
    const failure = this.#queued.settle();
    if (failure !== null) this.#saved.clear("failed", failure);
  }

  /**
   * For the module classes, after they replaced the module's state (loadStateDict,
   * resetRunningStats): frees what the last forward saved (its backward is refused, "reset")
   * and forgets the queued forwards, so that a fault found later undoes nothing.
   */
  protected stateReplaced(): void {
    this.#saved.clear("reset");
    this.#queued.forget();
  }

  /**
   * For the module classes, in a forward's body: keeps `saved` (its input and what else the
   * backward needs) for the next backward, replacing (and freeing) what the last forward kept;
   * `owned` become the module's, kept out of tidy scopes.
   */
  protected saveForBackward<T extends { readonly input: Tensor }>(
    saved: T,
    owned: readonly Tensor[],
  ): void {
    this.#saved.save(saved, owned);
  }

  /**
   * For the module classes: the start of a backward, its checks in order: the module is not
   * disposed, a forward was made and not used or failed since (161002 naming the rule),
   * `gradOut` is a Tensor of that forward's input shape. Returns the call's `op`, what the last
   * forward saved (`T`, the type the module's forward gave
   * {@linkcode NormModule.saveForBackward}) and the checked gradOut. A refused gradOut leaves
   * the saved forward for a corrected call.
   */
  protected beginBackward<T extends { readonly input: Tensor }>(
    gradOut: Tensor,
  ): { op: string; saved: T; dy: Tensor } {
    const op = this.beginCall("backward");
    const saved = this.#saved.use(op) as T;
    return { op, saved, dy: checkGradOut(op, gradOut, saved.input) };
  }

  /** For the module classes: frees what the forward saved, once its backward has succeeded. */
  protected endBackward(): void {
    this.#saved.clear("used");
  }

  #beginForward(): () => void {
    this.settleQueuedForward();
    return this.undoPoint();
  }

  #forwardReturned(device: Device, undo: () => void): void {
    this.settleQueuedForward();
    this.#queued.remember(device, undo);
  }

  #forwardFailed(error: unknown, undo: () => void): void {
    undo();
    // A forward refused by its checks ran nothing: the previous forward stays for its backward
    // (as a refused gradOut leaves the forward). Any other error is a failed forward.
    if (!refusedByChecks(error)) this.#saved.clear("failed", failureOf(error));
    this.settleQueuedForward();
  }
}
