/**
 * A stream synchronisation that the calling thread can stop waiting for. aclrtSynchronizeStream
 * blocks its thread until the stream's work has run, and a collective whose peer stopped runs
 * until HCCL's exec timeout, which CANN rounds up to 68 s steps off Atlas A2/A3. So the
 * synchronisation runs on a thread of its own (a `node:worker_threads` Worker evaluating the
 * script below: no file to read, no permission to ask for beyond `--allow-ffi`), with the
 * device's context made current there (aclrtSetCurrentContext: contexts are process-wide), and
 * the calling thread waits for it with `Atomics.wait` and a deadline. The worker is unref'd: it
 * never keeps the process alive, even while a synchronisation is still running in it.
 *
 * Shared memory: control words (request number, done number, status, text length, ready), the
 * context and stream addresses, and the aclGetRecentErrMsg text read on the worker's thread
 * right after a failing synchronisation.
 *
 * @module
 */

import { Worker } from "node:worker_threads";

/** Control words. */
const REQUEST = 0;
const DONE = 1;
const STATUS = 2;
const LENGTH = 3;
const READY = 4;
/** Bytes kept of a native error text. */
const TEXT_BYTES = 64 * 1024;
/** How long the worker may take to start (load the runtime) before waiting falls back. */
const START_MS = 10_000;

const SOURCE = `
const { workerData } = require("node:worker_threads");
const { path, symbols, buffer } = workerData;
const ctl = new Int32Array(buffer, 0, 8);
const words = new BigInt64Array(buffer, 32, 2);
const text = new Uint8Array(buffer, 48);
let rt = null;
try {
  rt = Deno.dlopen(path, symbols).symbols;
  Atomics.store(ctl, ${READY}, 1);
} catch {
  Atomics.store(ctl, ${READY}, -1);
}
Atomics.notify(ctl, ${READY});
const encoder = new TextEncoder();
let seen = 0;
let context = 0n;
while (rt !== null) {
  Atomics.wait(ctl, ${REQUEST}, seen);
  seen = Atomics.load(ctl, ${REQUEST});
  let status = 0;
  if (words[0] !== context) {
    status = rt.aclrtSetCurrentContext(Deno.UnsafePointer.create(words[0]));
    if (status === 0) context = words[0];
  }
  if (status === 0) status = rt.aclrtSynchronizeStream(Deno.UnsafePointer.create(words[1]));
  let length = 0;
  if (status !== 0) {
    const p = rt.aclGetRecentErrMsg();
    if (p !== null) {
      const bytes = encoder.encode(Deno.UnsafePointerView.getCString(p));
      length = Math.min(bytes.length, text.length);
      text.set(bytes.subarray(0, length));
    }
  }
  Atomics.store(ctl, ${STATUS}, status);
  Atomics.store(ctl, ${LENGTH}, length);
  Atomics.store(ctl, ${DONE}, seen);
  Atomics.notify(ctl, ${DONE});
}
`;

/** The end of a synchronisation: its status and, when it failed, the runtime's text. */
export interface WaitOutcome {
  /** aclrtSynchronizeStream's status (or aclrtSetCurrentContext's, when that failed). */
  readonly status: number;
  /** aclGetRecentErrMsg read on the waiting thread right after a failure. */
  readonly nativeMessage: string | undefined;
}

/** The three runtime functions the waiting thread calls, as Deno.dlopen takes them. */
export interface WaiterSymbols {
  /** `aclError aclrtSetCurrentContext(aclrtContext context)`. */
  readonly aclrtSetCurrentContext: Deno.ForeignFunction;
  /** `aclError aclrtSynchronizeStream(aclrtStream stream)`. */
  readonly aclrtSynchronizeStream: Deno.ForeignFunction;
  /** `const char *aclGetRecentErrMsg(void)`. */
  readonly aclGetRecentErrMsg: Deno.ForeignFunction;
}

/** A thread that runs one stream synchronisation at a time for its device. */
export class StreamWaiter {
  readonly #worker: Worker;
  readonly #ctl: Int32Array;
  readonly #words: BigInt64Array;
  readonly #text: Uint8Array;
  #request = 0;

  private constructor(worker: Worker, buffer: SharedArrayBuffer) {
    this.#worker = worker;
    this.#ctl = new Int32Array(buffer, 0, 8);
    this.#words = new BigInt64Array(buffer, 32, 2);
    this.#text = new Uint8Array(buffer, 48);
  }

  /**
   * Starts a waiting thread that opens the runtime library at `path` (already loaded by this
   * process, so the same handle) with `symbols`; null when no thread can be started or it
   * cannot open the library (the caller then waits on its own thread).
   */
  static start(path: string, symbols: WaiterSymbols): StreamWaiter | null {
    const buffer = new SharedArrayBuffer(48 + TEXT_BYTES);
    let worker: Worker;
    try {
      worker = new Worker(SOURCE, { eval: true, workerData: { path, symbols, buffer } });
      worker.unref();
    } catch {
      return null;
    }
    const waiter = new StreamWaiter(worker, buffer);
    Atomics.wait(waiter.#ctl, READY, 0, START_MS);
    if (Atomics.load(waiter.#ctl, READY) !== 1) {
      void worker.terminate();
      return null;
    }
    return waiter;
  }

  /** Whether the last synchronisation begun has not returned yet. */
  get busy(): boolean {
    return Atomics.load(this.#ctl, DONE) !== this.#request;
  }

  /** Begins synchronising `stream` with `context` current on the waiting thread. */
  begin(context: Deno.PointerValue, stream: Deno.PointerValue): void {
    if (this.busy) throw new Error("StreamWaiter: a synchronisation is still running");
    this.#words[0] = context === null ? 0n : BigInt(Deno.UnsafePointer.value(context));
    this.#words[1] = stream === null ? 0n : BigInt(Deno.UnsafePointer.value(stream));
    Atomics.store(this.#ctl, REQUEST, ++this.#request);
    Atomics.notify(this.#ctl, REQUEST);
  }

  /**
   * Waits at most `ms` milliseconds for the synchronisation begun last; its outcome, or
   * undefined when it is still running.
   */
  wait(ms: number): WaitOutcome | undefined {
    const end = performance.now() + ms;
    for (;;) {
      const done = Atomics.load(this.#ctl, DONE);
      if (done === this.#request) break;
      const left = end - performance.now();
      if (left <= 0) return undefined;
      Atomics.wait(this.#ctl, DONE, done, left);
    }
    const status = Atomics.load(this.#ctl, STATUS);
    const length = Atomics.load(this.#ctl, LENGTH);
    const text = length > 0 ? new TextDecoder().decode(this.#text.slice(0, length)).trim() : "";
    return { status, nativeMessage: text.length > 0 ? text : undefined };
  }

  /** Ends the thread (one still inside a synchronisation ends with the process). */
  close(): void {
    void this.#worker.terminate();
  }
}
