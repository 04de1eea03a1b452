/**
 * How the pool's workers are made. They are Deno's `node:worker_threads` Workers:
 *
 * - the class is taken when this module loads, from a module import, never read from
 *   `globalThis.Worker` at call time: a library that replaces the global `Worker` (as
 *   onnxruntime-web does, with one that refuses `data:` URLs) cannot break the pool;
 * - the worker script is given as source text (`eval`): no file to read, no `data:` URL, no
 *   permission to ask for;
 * - every worker is unref'd: an idle worker (asleep in `Atomics.wait`) never keeps the process
 *   alive, so the pool can stay warm across pauses and a script still exits when its work is
 *   done. A web `Worker` cannot be unref'd in Deno: a live one holds the process open.
 *
 * A worker that cannot be made throws here; the pool then runs its calls on the calling
 * thread (pool.ts).
 *
 * @module
 */

import { Worker as NodeWorker } from "node:worker_threads";

/** What the pool needs of one worker. */
export interface PoolWorker {
  /** Posts a message (structured clone; shared memory is shared). */
  postMessage(message: unknown): void;
  /** Ends the worker. */
  terminate(): void;
  /** Calls `listener` if the worker fails outside a job (its script throws, it cannot start). */
  onError(listener: (error: unknown) => void): void;
}

/** Makes a worker that runs the script `source`. */
export type WorkerFactory = (source: string) => PoolWorker;

/** The Worker class this module loaded with. */
const WorkerClass = NodeWorker;

/** The default factory: an unref'd `node:worker_threads` Worker evaluating `source`. */
function nodeWorker(source: string): PoolWorker {
  const worker = new WorkerClass(source, { eval: true });
  worker.unref();
  return {
    postMessage: (message) => worker.postMessage(message),
    terminate: () => void worker.terminate(),
    onError: (listener) => void worker.on("error", listener),
  };
}

let factory: WorkerFactory = nodeWorker;

/** A new worker running `source` (throws when none can be made). */
export function spawnWorker(source: string): PoolWorker {
  return factory(source);
}

/**
 * Replaces how workers are made (undefined: back to the default). For tests: a factory that
 * throws shows the calls falling back to the calling thread.
 */
export function setWorkerFactory(replacement: WorkerFactory | undefined): void {
  factory = replacement ?? nodeWorker;
}
