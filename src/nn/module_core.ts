/**
 * What every norm module shares (GroupNorm, LayerNorm, RMSNorm; BatchNormState builds on it): its
 * state-dict entries, the tensors it owns, what its last forward saved, its training flag, and
 * its lifecycle (a disposed module refuses every call, naming it).
 *
 * @module
 */

import type { AcceleratorDevice, Device } from "../tensor/device.ts";
import type { DType } from "../tensor/dtype.ts";
import { ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, AclnnError } from "../errors.ts";
import { keep } from "../tensor/scope.ts";
import { Tensor } from "../tensor/tensor.ts";
import type { ModuleState } from "./norm_module.ts";
import { disposedModule, SavedForward } from "./saved.ts";
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

/**
 * A module's parameters with PyTorch's initial values: weight all 1 and bias all 0, of
 * `shape` on `place`'s device and dtype, each made only where `weight` / `bias` ask for it.
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
 * A forward whose kernels are still queued on an accelerator: where, the mark of its work, and
 * how to put back the state the forwards since the last finished one changed.
 */
interface PendingForward {
  readonly device: AcceleratorDevice;
  readonly mark: number;
  readonly undo: () => void;
}

/** Whether `error` refused a call before it ran anything (an argument check: 161001/161002). */
function refused(error: unknown): boolean {
  return error instanceof AclnnError &&
    (error.code === ACLNN_ERR_PARAM_NULLPTR || error.code === ACLNN_ERR_PARAM_INVALID);
}

/** What failed, for the message of a refused backward: `AclError 507015`, or the error's name. */
function failureOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  return typeof code === "number" ? `${error.name} ${code}` : error.name;
}

/**
 * The shared state of one module named `name` (e.g. `GroupNorm`).
 *
 * A forward that fails leaves the module as before it: one that throws at once (undone then;
 * one its checks refused ran nothing and leaves the previous forward for its backward), and
 * one whose kernels fail on the device after it returned, found out when its output is
 * read (a kernel fault, AclError 507015 at the synchronisation): the module asks the device
 * what became of the forward's work at its next call, undoes the state the forward changed (the
 * batch count) and refuses the backward, naming the failure. The running statistics are
 * written by the failed kernels themselves, which the device lost.
 */
export class ModuleCore<S> implements ModuleState {
  /** Where the parameters live. */
  readonly device: Device;
  /** dtype of the parameters. */
  readonly dtype: DType;
  /** The scale (gamma), or null. */
  readonly weight: Tensor | null;
  /** The shift (beta), or null. */
  readonly bias: Tensor | null;
  /** What the last forward kept for its backward. */
  readonly saved: SavedForward<S> = new SavedForward<S>();
  /** true in training mode (the default). */
  training = true;
  readonly #name: string;
  readonly #entries: readonly StateEntry[];
  readonly #owned: readonly (Tensor | null)[];
  #disposed = false;
  #pending: PendingForward | undefined;

  /**
   * The state-dict entries are `weight` and `bias` (those present, PyTorch's order), then
   * `more.entries`; the module frees the parameters when disposed, and `more.owned` (the other
   * tensors it owns: buffers, helpers).
   */
  constructor(
    name: string,
    params: ModuleParameters,
    more: {
      readonly entries?: readonly StateEntry[];
      readonly owned?: readonly (Tensor | null)[];
    } = {},
  ) {
    this.device = params.device;
    this.dtype = params.dtype;
    this.weight = params.weight;
    this.bias = params.bias;
    this.#name = name;
    this.#entries = [...affineEntries(params.weight, params.bias), ...more.entries ?? []];
    this.#owned = [params.weight, params.bias, ...more.owned ?? []];
  }

  /**
   * `<name>.<method>`, after refusing a call on a disposed module and settling a forward whose
   * work the device has finished or lost since ({@linkcode ModuleCore.settle}).
   */
  check(method: string): string {
    const op = `${this.#name}.${method}`;
    if (this.#disposed) disposedModule(op);
    this.settle();
    return op;
  }

  /**
   * Runs a forward's `body` (its checks, kernels and saving; it returns the output). When it
   * throws, the state it changed is undone and, unless its checks refused it (161001/161002),
   * the saved forward dropped ("failed"); when it
   * returns with work still queued on the device, that work is remembered until the device
   * says what became of it.
   */
  runForward(body: () => Tensor): Tensor {
    const undo = this.#beginForward();
    try {
      const output = body();
      this.#forwardQueued(output.device, undo);
      return output;
    } catch (e) {
      this.#forwardFailed(e, undo);
      throw e;
    }
  }

  /** {@linkcode ModuleCore.runForward} for an asynchronous forward (SyncBatchNorm). */
  async runForwardAsync(body: () => Promise<Tensor>): Promise<Tensor> {
    const undo = this.#beginForward();
    try {
      const output = await body();
      this.#forwardQueued(output.device, undo);
      return output;
    } catch (e) {
      this.#forwardFailed(e, undo);
      throw e;
    }
  }

  /**
   * Asks the device what became of the queued forwards' work: done, they are forgotten; lost
   * to a fault, their state changes are undone and their saved forward dropped ("failed").
   */
  settle(): void {
    const p = this.#pending;
    if (p === undefined) return;
    const outcome = p.device.workOutcome?.(p.mark) ?? { state: "done" };
    if (outcome.state === "queued") return;
    this.#pending = undefined;
    if (outcome.state === "failed") {
      p.undo();
      this.saved.clear(
        "failed",
        `its kernels failed on ${p.device.name}: the synchronisation returned ${outcome.code}`,
      );
    }
  }

  /**
   * Forgets the queued forwards (after their state was replaced: loadStateDict,
   * resetRunningStats), so that a fault found later undoes nothing.
   */
  forgetForwards(): void {
    this.#pending = undefined;
  }

  /**
   * For a module whose forward changes more than what it saves (BatchNorm's batch count): a
   * function that puts that state back as it is now. Nothing by default.
   */
  protected undoPoint(): () => void {
    return () => {};
  }

  #beginForward(): () => void {
    this.settle();
    return this.undoPoint();
  }

  #forwardQueued(device: Device, undo: () => void): void {
    this.settle();
    if (device === "cpu") return;
    const mark = device.workMark?.() ?? -1;
    // Forwards queued in one window share its fate: the first one's undo covers them all.
    if (mark >= 0) this.#pending ??= { device, mark, undo };
  }

  #forwardFailed(error: unknown, undo: () => void): void {
    undo();
    // A forward refused by its checks ran nothing: the previous forward stays for its backward
    // (as a refused gradOut leaves the forward). Any other error is a failed forward.
    if (!refused(error)) this.saved.clear("failed", failureOf(error));
    this.settle();
  }

  /** Snapshots (copies) of the state-dict entries. */
  stateDict(): StateDict {
    return snapshot(this.check("stateDict"), this.#entries);
  }

  /** Copies `dict` into the entries after checking all of it; ends the pending forward. */
  loadStateDict(dict: StateDict, options?: LoadStateDictOptions): LoadStateDictResult {
    const op = this.check("loadStateDict");
    const result = loadState(op, this.#entries, dict, options);
    this.saved.clear("reset");
    this.forgetForwards();
    return result;
  }

  /** Frees the owned tensors and what the forward saved. Idempotent. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.saved.clear("reset");
    for (const t of this.#owned) t?.dispose();
  }
}

/** The state-dict entries of optional `weight` and `bias` parameters (none when absent). */
function affineEntries(weight: Tensor | null, bias: Tensor | null): StateEntry[] {
  const entries: StateEntry[] = [];
  if (weight) entries.push({ key: "weight", tensor: weight });
  if (bias) entries.push({ key: "bias", tensor: bias });
  return entries;
}
