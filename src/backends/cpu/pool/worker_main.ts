/**
 * The body of a pool worker: it receives the control buffer once, counts itself ready, and
 * then takes part in each job it is sent (see sync.ts).
 *
 * Worker-safe: serialised into the worker script (see worker_source.ts).
 *
 * @module
 */

import { createThreadScratch } from "../fast/kernels/codecs.ts";
import { CONTROL_READY, type JobMessage, runJob, signal } from "./sync.ts";

/**
 * The messages a worker receives: the control buffer (and the WebAssembly kernels' bytes
 * and the host heap, when threads use them) first, then jobs.
 */
export type WorkerMessage =
  | {
    readonly control: SharedArrayBuffer;
    readonly wasm: Uint8Array | undefined;
    /** The host heap's memory, when this worker has a region of it. */
    readonly heap: WebAssembly.Memory | undefined;
    /** Byte address of this worker's heap region (0: none). */
    readonly region: number;
  }
  | JobMessage;

/** The global scope of a worker, as far as this module needs it. */
interface WorkerScope {
  onmessage: ((event: MessageEvent<WorkerMessage>) => void) | null;
}

/** Installs the worker's message handler (called once at the top of the worker script). */
export function workerMain(): void {
  const scratch = createThreadScratch();
  let control: Int32Array | undefined;
  const scope = globalThis as unknown as WorkerScope;
  scope.onmessage = (event) => {
    const message = event.data;
    if ("control" in message) {
      control = new Int32Array(message.control);
      scratch.wasmBytes = message.wasm;
      scratch.heapMemory = message.heap;
      scratch.heapRegion = message.region;
      signal(control, CONTROL_READY);
      return;
    }
    if (control) runJob(message, control, scratch);
  };
}
