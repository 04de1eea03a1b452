/**
 * Reclaiming device memory of tensors nobody references any more, sooner than V8 would on its
 * own. V8 cannot see device memory: a loop that forgets large results may fill the device long
 * before the JavaScript heap asks for a garbage collection, and the FinalizationRegistry
 * backstop only runs after one. So, when a device has allocated a lot since the last
 * collection, the next turn of the event loop runs one (`collectGarbage`), and the buffers it
 * found dead are released at once (their WeakRefs are empty).
 *
 * A synchronous loop that never yields cannot be helped this way: objects created in the
 * current job stay alive until it ends (the WeakRef "KeepDuringJob" rule). There the allocator
 * fails with an out-of-memory error that gives its figures.
 *
 * The collection uses V8's `gc` function, exposed through `node:v8` / `node:vm` (the flag only
 * affects new contexts). Where that is unavailable, reclaiming falls back to V8's own schedule.
 *
 * @module
 */

import v8 from "node:v8";
import vm from "node:vm";

let gcFunction: (() => void) | null | undefined;

/** Runs a full garbage collection when V8 allows it; returns whether it ran. */
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

/** Bytes a device may allocate between two collections it asks for. */
export const RECLAIM_AFTER_BYTES = 256 * 1024 * 1024;

/** Runs `fn` on the next turn of the event loop without keeping the process alive for it. */
export function onNextTurn(fn: () => void): void {
  const id = setTimeout(fn, 0);
  Deno.unrefTimer(id);
}
