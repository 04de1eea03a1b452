/**
 * Memoised validation: an operator called again with the very same argument values (the same
 * Tensor objects, flags and scalars, as a training loop with preallocated outputs does) skips
 * its validation and planning and reuses the last outcome. A Tensor's dtype, shape, strides,
 * offset, storage and device never change, so equal identities give an equal outcome; what
 * can change is checked on every call: a host tensor whose storage no longer holds its view
 * (its buffer was detached by `transfer()` or `postMessage`, or a resizable buffer shrank) or
 * was disposed misses the memo, and validation then refuses it as it refuses it on a first
 * call (161002); released device memory and a closed device are checked by the backend.
 *
 * @module
 */

import { heapFreed } from "../tensor/host_heap.ts";
import type { HostData } from "../tensor/dtype.ts";
import { viewSpan } from "../tensor/layout.ts";
import { Tensor } from "../tensor/tensor.ts";

/**
 * The host storages among the keys and the elements each must hold (the view's offset plus
 * its span; 0 for an empty view), flattened as [storage, needed, storage, needed, ...].
 */
function hostStorages(keys: readonly unknown[]): (HostData | number)[] {
  const found: (HostData | number)[] = [];
  for (const key of keys) {
    if (!(key instanceof Tensor) || !ArrayBuffer.isView(key.storage)) continue;
    const span = viewSpan(key.shape, key.strides);
    found.push(key.storage, span === 0 ? 0 : key.offset + span);
  }
  return found;
}

/**
 * Appends the memo keys of one argument value to `keys`: an array by its length and elements,
 * never by identity (a loop that writes its mask as a literal makes a new array per call, and
 * must still meet the memo), anything else as itself.
 */
export function pushValueKeys(keys: unknown[], value: unknown): void {
  if (Array.isArray(value)) keys.push(Array, value.length, ...value);
  else keys.push(value);
}

/** The last validated call of one operator: its argument values and what validation made. */
export class ValidationMemo<T> {
  #keys: unknown[] | undefined;
  #value: T | undefined;
  #storages: (HostData | number)[] = [];

  /**
   * The value validated for exactly these argument values, if it is the last call's and every
   * host tensor among them still has its storage (the length of a typed array over a detached
   * or shrunk buffer drops, which one comparison per tensor sees).
   */
  get(keys: readonly unknown[]): T | undefined {
    const last = this.#keys;
    if (last === undefined || last.length !== keys.length) return undefined;
    for (let i = 0; i < keys.length; i++) {
      if (!Object.is(last[i], keys[i])) return undefined;
    }
    const storages = this.#storages;
    for (let i = 0; i < storages.length; i += 2) {
      const storage = storages[i] as HostData;
      if (storage.length < (storages[i + 1] as number) || heapFreed(storage)) return undefined;
    }
    return this.#value;
  }

  /** Records a validated call; returns `value`. */
  set(keys: readonly unknown[], value: T): T {
    this.#keys = [...keys];
    this.#storages = hostStorages(keys);
    this.#value = value;
    return value;
  }
}
