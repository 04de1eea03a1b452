/**
 * Memoised validation: an operator called again with the very same argument values (the same
 * Tensor objects, flags and scalars, as a training loop with preallocated outputs does) skips
 * its validation and planning and reuses the last outcome. A Tensor's dtype, shape, strides,
 * offset, storage and device never change, so equal identities give an equal outcome; what
 * can change is checked on every call: a disposed host tensor misses the memo (validation then
 * refuses it), released device memory and a closed device are checked by the backend.
 *
 * @module
 */

import { heapFreed } from "../tensor/host_heap.ts";
import { Tensor } from "../tensor/tensor.ts";

/** Whether `value` is a host tensor whose storage `dispose()` (or `tidy`) released. */
function disposedHostTensor(value: unknown): boolean {
  return value instanceof Tensor && ArrayBuffer.isView(value.storage) && heapFreed(value.storage);
}

/** The last validated call of one operator: its argument values and what validation made. */
export class ValidationMemo<T> {
  #keys: unknown[] | undefined;
  #value: T | undefined;

  /** The value validated for exactly these argument values, if it is the last call's. */
  get(keys: readonly unknown[]): T | undefined {
    const last = this.#keys;
    if (last === undefined || last.length !== keys.length) return undefined;
    for (let i = 0; i < keys.length; i++) {
      if (!Object.is(last[i], keys[i])) return undefined;
    }
    for (let i = 0; i < keys.length; i++) if (disposedHostTensor(keys[i])) return undefined;
    return this.#value;
  }

  /** Records a validated call; returns `value`. */
  set(keys: readonly unknown[], value: T): T {
    this.#keys = [...keys];
    this.#value = value;
    return value;
  }
}
