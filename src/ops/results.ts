/**
 * Result objects that support `using`: disposing one frees the memory of the tensors
 * the call allocated (outputs passed in `out` stay the caller's). The dispose method is on the
 * prototype, so spreading a result (`{ ...forward }`) or `Object.values(result)` sees only
 * the tensors.
 *
 * @module
 */

import type { Tensor } from "../tensor/tensor.ts";

/**
 * `result`'s properties on a {@linkcode DisposableResult} that frees the tensors in
 * `allocated` (for results built as objects first: the modules' gradients).
 */
export function disposable<T extends object>(
  result: T,
  allocated: readonly (Tensor | undefined | null)[],
): T & Disposable {
  return Object.assign(new DisposableResult(allocated), result);
}

/**
 * An operator's result object: its outputs as own enumerable properties (the caller sets
 * them), and `[Symbol.dispose]` on the prototype, which frees the tensors the call allocated:
 * no property defined per call (defineProperty took a fifth of a microsecond, and the object
 * left V8's fast mode).
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
