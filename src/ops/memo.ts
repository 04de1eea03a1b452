/**
 * Memoised validation: an operator called again with the very same argument values (the same
 * Tensor objects, flags and scalars, as a training loop with preallocated outputs does) skips
 * its validation and planning and reuses the last outcome. A Tensor's dtype, shape, strides,
 * offset, storage and device never change, so equal identities give an equal outcome; what
 * can change (released device memory, a closed device) is checked again by the backend.
 *
 * @module
 */

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
    return this.#value;
  }

  /** Records a validated call; returns `value`. */
  set(keys: readonly unknown[], value: T): T {
    this.#keys = [...keys];
    this.#value = value;
    return value;
  }
}
