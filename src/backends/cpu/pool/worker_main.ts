/**
 * The body of a pool worker: it receives the control buffer once, counts itself ready, and
 * then takes part in each job: described ones in its wait loop (serve.ts), posted ones when
 * their message comes, after which it goes back to the loop.
 *
 * The worker script's entry point: worker_entry.ts calls it (see scripts/build_worker.ts).
 *
 * @module
 */

import { createThreadState, type ThreadState } from "../kernels/stages.ts";
import { serveJobs } from "./serve.ts";
import { CONTROL_JOB, CONTROL_READY, type JobMessage, runJob, signal } from "./sync.ts";

/**
 * The messages a worker receives: the control buffer (and the WebAssembly kernels' bytes
 * and the host heap, when threads use them) first, then jobs.
 */
export type WorkerMessage =
  | {
    readonly control: SharedArrayBuffer;
    /** The job words (see job_words.ts). */
    readonly words: SharedArrayBuffer;
    readonly wasm: Uint8Array | undefined;
    /** The host heap's memory, when there is a heap. */
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
  let scratch: ThreadState | undefined;
  let control: Int32Array | undefined;
  let words: Float64Array | undefined;
  const scope = globalThis as unknown as WorkerScope;
  scope.onmessage = (event) => {
    const message = event.data;
    if ("control" in message) {
      control = new Int32Array(message.control);
      words = new Float64Array(message.words);
      scratch = createThreadState(message.wasm);
      scratch.heapMemory = message.heap;
      scratch.heapRegion = message.region;
      // The job number before this worker counts as ready: any later job is new to it.
      const seen = Atomics.load(control, CONTROL_JOB);
      signal(control, CONTROL_READY);
      serveJobs(control, words, scratch, seen);
      return;
    }
    if (!control || !words || !scratch) return;
    runJob(message, control, scratch);
    serveJobs(control, words, scratch, message.job);
  };
}
