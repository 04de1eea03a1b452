/**
 * What every norm module shares (GroupNorm, LayerNorm, RMSNorm; BatchNormState builds on it): its
 * state-dict entries, the tensors it owns, what its last forward saved, its training flag, and
 * its lifecycle (a disposed module refuses every call, naming it).
 *
 * @module
 */

import type { Device } from "../tensor/device.ts";
import type { DType } from "../tensor/dtype.ts";
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

/** The shared state of one module named `name` (e.g. `GroupNorm`). */
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

  /** `<name>.<method>`, after refusing a call on a disposed module. */
  check(method: string): string {
    const op = `${this.#name}.${method}`;
    if (this.#disposed) disposedModule(op);
    return op;
  }

  /** Snapshots (copies) of the state-dict entries. */
  stateDict(): StateDict {
    this.check("stateDict");
    return snapshot(this.#entries);
  }

  /** Copies `dict` into the entries after checking all of it; ends the pending forward. */
  loadStateDict(dict: StateDict, options?: LoadStateDictOptions): LoadStateDictResult {
    const op = this.check("loadStateDict");
    const result = loadState(op, this.#entries, dict, options);
    this.saved.clear("reset");
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
