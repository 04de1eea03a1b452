/**
 * A full garbage collection on demand, for the allocators that must know now which of their
 * blocks' owners are dead (host_heap.ts when the heap is full, src/ffi/reclaim.ts before a
 * device allocation fails): V8's `gc` function, exposed through `node:v8` / `node:vm` (the
 * flag only affects new contexts), without `--expose-gc` on the command line.
 *
 * @module
 */

import v8 from "node:v8";
import vm from "node:vm";

let gcFunction: (() => void) | null | undefined;

/**
 * Runs a full, synchronous garbage collection when V8 allows it; returns whether it ran. Its
 * time grows with the JavaScript heap (14-18 ms in bench:step's process).
 */
export function collectGarbage(): boolean {
  if (gcFunction === undefined) {
    try {
      v8.setFlagsFromString("--expose-gc");
      gcFunction = vm.runInNewContext("gc") as () => void;
    } catch {
      gcFunction = null;
    }
  }
  if (gcFunction === null) return false;
  gcFunction();
  return true;
}
