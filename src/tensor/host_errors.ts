/**
 * The error of a host allocation that cannot be made: the code the NPU path gives for device
 * memory (207001, ACL_ERROR_RT_MEMORY_ALLOCATION), with the shape, dtype and bytes asked for.
 *
 * @module
 */

import { AclError } from "../errors.ts";

/** `n` bytes in the largest unit that keeps it at least 1 (B, KiB, MiB, GiB). */
export function formatHostBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (i < units.length - 1 && n >= 1024) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(2)} ${units[i]}`;
}

/**
 * AclError 207001 for host memory `what` needed: `bytes` bytes for a tensor of `shape` in
 * `dtype` (a DType's name; taken as a string so that dtype.ts, which throws it, stays the only
 * file of the pair that imports the other) that no buffer (the host heap, or one of its own)
 * can hold.
 */
export function hostAllocationError(
  what: string,
  shape: readonly number[],
  dtype: string,
  bytes: number,
): AclError {
  return new AclError(
    207001,
    `out of host memory: cannot allocate ${formatHostBytes(bytes)} for ${what} ` +
      `[${shape.join(", ")}] ${dtype}`,
  );
}
