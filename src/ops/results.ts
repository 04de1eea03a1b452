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

/** `made` when it was allocated by the call (not the caller's `given`), else undefined. */
export function allocatedBy(
  given: Tensor | undefined,
  made: Tensor | undefined,
): Tensor | undefined {
  return given === made ? undefined : made;
}
