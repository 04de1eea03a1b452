/**
 * Result objects that support `using`: disposing one frees the memory of the tensors
 * the call allocated (outputs passed in `out` stay the caller's). The dispose method is not
 * enumerable, so spreading a result (`{ ...forward }`) or `Object.values(result)` sees only
 * the tensors.
 *
 * @module
 */

import type { Tensor } from "../tensor/tensor.ts";

/** Adds `[Symbol.dispose]` to `result`, freeing the tensors in `allocated`. */
export function disposable<T extends object>(
  result: T,
  allocated: readonly (Tensor | undefined | null)[],
): T & Disposable {
  Object.defineProperty(result, Symbol.dispose, {
    value: () => {
      for (const t of allocated) t?.dispose();
    },
    enumerable: false,
  });
  return result as T & Disposable;
}

/**
 * An operator's result object: its outputs as own enumerable properties (the caller sets
 * them), and `[Symbol.dispose]` on the prototype, which frees the tensors the call allocated.
 * What {@linkcode disposable} gives a plain object, made without redefining a property per
 * call (a fifth of a microsecond, and the object leaves V8's fast mode).
 */
export class DisposableResult implements Disposable {
  readonly #allocated: readonly (Tensor | undefined | null)[];

  /** A result that frees `allocated` when disposed. */
  constructor(allocated: readonly (Tensor | undefined | null)[]) {
    this.#allocated = allocated;
  }

  /** Frees the tensors the call allocated (the caller's `out` tensors stay). */
  [Symbol.dispose](): void {
    for (const t of this.#allocated) t?.dispose();
  }
}

/** `made` when it was allocated by the call (not the caller's `given`), else undefined. */
export function allocatedBy(
  given: Tensor | undefined,
  made: Tensor | undefined,
): Tensor | undefined {
  return given === made ? undefined : made;
}
