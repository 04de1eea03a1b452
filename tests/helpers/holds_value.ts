/**
 * Whether a host tensor holds one value everywhere, read in place from its storage: the heap's
 * child scripts check tensors of millions of elements with it (`toArray()` of 48 tensors of 4
 * MiB took most of such a script's seconds).
 *
 * @module
 */

import type { Tensor } from "../../mod.ts";

/** Whether every element of `t` is `value` (a float32 contiguous tensor read in place). */
export function holds(t: Tensor, value: number): boolean {
  if (!(t.storage instanceof Float32Array) || !t.isContiguous()) {
    return t.toArray().every((v) => v === value);
  }
  const s = t.storage;
  for (let i = t.offset; i < t.offset + t.numel; i++) if (s[i] !== value) return false;
  return true;
}
