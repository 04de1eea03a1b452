/**
 * What every norm module without running statistics shares (GroupNorm, LayerNorm, RMSNorm): its
 * state-dict entries, the tensors it owns, what its last forward saved, its training flag, and
 * its lifecycle (a disposed module refuses every call, naming it).
 *
 * @module
 */

import type { Tensor } from "../tensor/tensor.ts";
import { disposedModule, SavedForward } from "./saved.ts";
import {
  loadState,
  type LoadStateDictOptions,
  type LoadStateDictResult,
  snapshot,
  type StateDict,
  type StateEntry,
} from "./state_dict.ts";

/** The shared state of one module named `name` (e.g. `GroupNorm`). */
export class ModuleCore<S> {
  /** What the last forward kept for its backward. */
  readonly saved: SavedForward<S> = new SavedForward<S>();
  /** true in training mode (the default). */
  training = true;
  readonly #name: string;
  readonly #entries: readonly StateEntry[];
  readonly #owned: readonly (Tensor | null)[];
  #disposed = false;

  /**
   * `entries` are the state-dict entries in PyTorch's order; `owned` every tensor the module
   * frees when disposed (its parameters and helpers).
   */
  constructor(name: string, entries: readonly StateEntry[], owned: readonly (Tensor | null)[]) {
    this.#name = name;
    this.#entries = entries;
    this.#owned = owned;
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
export function affineEntries(weight: Tensor | null, bias: Tensor | null): StateEntry[] {
  const entries: StateEntry[] = [];
  if (weight) entries.push({ key: "weight", tensor: weight });
  if (bias) entries.push({ key: "bias", tensor: bias });
  return entries;
}
