/**
 * The worker pool of the CPU backend: `threads - 1` Workers that share the calling thread's
 * work over SharedArrayBuffer memory. The API stays synchronous: the calling thread
 * publishes a job (in shared memory, where the workers wait for it: serve.ts), claims items
 * of it like every worker (sync.ts), and blocks in Atomics.wait (allowed on Deno's main
 * thread) until the items the workers claimed are done.
 *
 * The float64 temporaries of a pooled call (per-channel constants, partial sums) come from
 * the pool's arena, a block of the host heap, so that the workers can find them from the
 * job words alone; the next pooled call reuses it.
 *
 * Lifetime: workers start on the first call large enough to share, or when
 * {@linkcode startPool} is called (a call made before they are up runs on the calling thread
 * alone, so startup, about 35 ms, never stalls a call). They are terminated after
 * {@linkcode POOL_IDLE_MS} without work (or the idle time startPool was given), or by
 * {@linkcode retirePool}. Idle workers never keep the process alive (spawn.ts), so the idle
 * time only bounds how long they hold their memory.
 *
 * A worker that cannot be made (spawn.ts throws, or it fails while starting) leaves the
 * calls on the calling thread; they do not try again until {@linkcode startPool} is called
 * or the thread count changes.
 *
 * @module
 */

import { FLOAT32, type Stage } from "../kernels/stage_types.ts";
import { createThreadState, runStage, type ThreadState, wasmOf } from "../kernels/stages.ts";
import { type CpuPolicy, DEFAULT_CPU_POLICY } from "../policy.ts";
import {
  CONTROL_BUFFER_BYTES,
  CONTROL_DONE,
  CONTROL_ERROR_BYTES,
  CONTROL_ERROR_LENGTH,
  CONTROL_FAILED,
  CONTROL_JOB,
  CONTROL_READY,
  CONTROL_RELEASE,
  CONTROL_RETIRE,
  CONTROL_SLEEP,
  MAX_STAGES,
  nextJob,
  recordFailure,
  runClaimed,
  waitAtLeast,
} from "./sync.ts";
import type { WorkerMessage } from "./worker_main.ts";
import { JOB_WORDS } from "./job_words.ts";
import { publishJob } from "./serve.ts";
import { WORKER_SCRIPT } from "./worker_bundle.ts";
import { type PoolWorker, spawnWorker } from "./spawn.ts";
import { governor } from "./governor.ts";
import { Float64Arena } from "../arena.ts";
import { kernelsWasmBytes } from "../wasm/kernels_module.ts";
import { heapAddress, heapScratch, hostHeapMemory } from "../../../tensor/host_heap.ts";
import { WASM_REGION_BYTES, type WasmKernels } from "../kernels/wasm_instance.ts";

/**
 * Default idle time after which the workers are terminated: 30 s. Idle workers cost no
 * CPU time (they sleep in Atomics.wait) and never keep the process alive; what they hold is
 * memory (tens of MB of RSS per worker), while a cold start costs tens of milliseconds plus a
 * first large call on the calling thread alone (figures: bench/RESULTS.md). 30 s keeps the
 * pool warm across the pauses of a
 * training loop (data loading, logging, evaluation).
 */
export const POOL_IDLE_MS = 30_000;

/**
 * Bytes of the arena of a pool's calls (1 MiB: the partials of a channels-last call with
 * C = 1024 take 1 MiB; a call that needs more gets SharedArrayBuffers, and is posted).
 */
export const POOL_ARENA_BYTES = 1 << 20;

/** The policy calls run under: {@linkcode DEFAULT_CPU_POLICY} outside withCpuPolicy. */
let policy: CpuPolicy = DEFAULT_CPU_POLICY;

/** The calling thread's state (decode tables etc.) under `policy`, for inline and pooled runs. */
let caller: ThreadState = createThreadState(kernelsWasmBytes());

/** The policy calls run under now (see {@linkcode withCpuPolicy}). */
export function cpuPolicy(): CpuPolicy {
  return policy;
}

/** The calling thread's state (tests may look at, or instrument, its kernels). */
export function callerState(): ThreadState {
  return caller;
}

/**
 * Runs `body` with the CPU calls it makes under the current policy with `changes` (tests and
 * benchmarks: every policy gives the same bits, see ../policy.ts), then restores the policy
 * (when `body` returns a promise, once it settles).
 */
export function withCpuPolicy<T>(changes: Partial<CpuPolicy>, body: () => T): T {
  const outer = policy;
  policy = Object.freeze({ ...policy, ...changes });
  const leave = () => policy = outer;
  let result: T;
  try {
    result = body();
  } catch (error) {
    leave();
    throw error;
  }
  if (result instanceof Promise) return result.finally(leave) as T;
  leave();
  return result;
}

/**
 * Starts the CPU threads afresh: a new calling-thread state with the WebAssembly build that
 * kernels_module.ts gives now, and the pool retired, so that the next pooled call starts
 * workers with that build too (benchmarks and tests that switch builds).
 */
export function renewCpuThreads(): void {
  caller = createThreadState(kernelsWasmBytes());
  retirePool();
}

/** Workers plus their control block; replaced as a whole when resized or retired. */
export class WorkerPool {
  /** The shared control block (see sync.ts). */
  readonly control: Int32Array;
  /** The job words: the current job's stages (see job_words.ts). */
  readonly words: Float64Array;
  /** The workers (none once terminated). */
  readonly workers: PoolWorker[] = [];
  /** How many workers the pool was started with. */
  readonly size: number;
  #readyPromise: Promise<void> | undefined;
  /** Why a worker failed while starting, if one did (the pool is then retired). */
  failure: unknown = undefined;
  /**
   * The pool's calls' temporaries, in the host heap (so the workers find them), taken from the
   * heap at the first call that finds room there.
   */
  readonly arena: Float64Arena = new Float64Arena(() => {
    const block = heapScratch(POOL_ARENA_BYTES, true);
    if (!block) return undefined;
    block.adopt(this);
    return new Float64Array(block.buffer, block.at, POOL_ARENA_BYTES / 8);
  });

  /**
   * Starts `size` workers (they report ready asynchronously). Throws, after terminating the
   * ones made, when a worker cannot be made.
   */
  constructor(size: number) {
    this.size = size;
    this.control = new Int32Array(new SharedArrayBuffer(CONTROL_BUFFER_BYTES));
    this.words = new Float64Array(new SharedArrayBuffer(JOB_WORDS * 8));
    const heap = hostHeapMemory() ?? undefined;
    const wasm = kernelsWasmBytes();
    for (let i = 0; i < size; i++) {
      let worker: PoolWorker;
      try {
        worker = spawnWorker(WORKER_SCRIPT);
      } catch (e) {
        this.terminate();
        throw e;
      }
      worker.onError((error) => {
        this.failure ??= error;
        if (pool === this) retirePool(this);
      });
      const init: WorkerMessage = {
        control: this.control.buffer as SharedArrayBuffer,
        words: this.words.buffer as SharedArrayBuffer,
        wasm,
        heap,
        region: wasm ? heapRegion(worker) : 0,
      };
      worker.postMessage(init);
      this.workers.push(worker);
    }
  }

  /** Whether every worker has started. */
  get ready(): boolean {
    const running = this.workers.length === this.size;
    return running && Atomics.load(this.control, CONTROL_READY) >= this.size;
  }

  /**
   * Resolves when every worker has started (polls: the workers report through memory), or
   * the pool was terminated first; rejects if a worker fails first.
   */
  whenReady(): Promise<void> {
    this.#readyPromise ??= new Promise((resolve, reject) => {
      const poll = () => {
        if (this.failure !== undefined) reject(startError(this.size, this.failure));
        else if (this.ready || this.workers.length < this.size) resolve();
        else setTimeout(poll, 2);
      };
      poll();
    });
    return this.#readyPromise;
  }

  /** Terminates every worker (waking the ones that wait for a job first). */
  terminate(): void {
    if (this.workers.length === 0) return;
    Atomics.store(this.control, CONTROL_RETIRE, 1);
    Atomics.notify(this.control, CONTROL_JOB);
    for (const worker of this.workers) worker.terminate();
    this.workers.length = 0;
  }
}

let pool: WorkerPool | undefined;
let lastUsed = 0;
/** The idle time of the running pool (startPool may change it). */
let idleMs = POOL_IDLE_MS;
/** The worker count that could not be started, and why: calls do not try it again. */
let failed: { workers: number; error: unknown } | undefined;
let pooledJobs = 0;
let postedJobs = 0;

/** How many jobs ran on the pool so far (for tests and benchmarks). */
export function pooledJobCount(): number {
  return pooledJobs;
}

/** How many of those were posted as messages, not described in shared memory (for tests). */
export function postedJobCount(): number {
  return postedJobs;
}

let workerItems = 0;

/** How many items of pooled jobs the workers ran so far, not the calling thread (for tests). */
export function workerItemCount(): number {
  return workerItems;
}
let idleTimer: ReturnType<typeof setTimeout> | undefined;

function armIdleTimer(): void {
  if (idleTimer !== undefined || !Number.isFinite(idleMs)) return;
  const check = () => {
    idleTimer = undefined;
    const idle = performance.now() - lastUsed;
    if (idle >= idleMs) retirePool();
    else armTimer(idleMs - idle, check);
  };
  armTimer(idleMs, check);
}

function armTimer(ms: number, callback: () => void): void {
  const timer = setTimeout(callback, Math.max(1, Math.ceil(ms)));
  // An unref'd timer does not keep the process alive by itself.
  Deno.unrefTimer(timer);
  idleTimer = timer;
}

/**
 * Terminates the workers now (the next large call starts new ones). With `failing`, the
 * pool whose worker failed: its worker count is not tried again by calls.
 */
export function retirePool(failing?: WorkerPool): void {
  if (failing !== undefined) failed = { workers: failing.size, error: failing.failure };
  pool?.terminate();
  pool = undefined;
  governor.reset(); // the next pool may cost otherwise (another size, another load)
  if (idleTimer !== undefined) clearTimeout(idleTimer);
  idleTimer = undefined;
}

function startError(workers: number, cause: unknown): Error {
  return new Error(
    `CPU worker pool: ${workers} worker(s) cannot start (${String(cause)}); ` +
      "CPU calls run on the calling thread",
    { cause },
  );
}

/** The pool of `workers` workers, started if needed; undefined when it cannot start. */
function poolOf(workers: number): WorkerPool | undefined {
  if (pool && pool.size !== workers) retirePool();
  if (pool === undefined) {
    if (failed?.workers === workers) return undefined;
    try {
      pool = new WorkerPool(workers);
    } catch (error) {
      failed = { workers, error };
      return undefined;
    }
  }
  lastUsed = performance.now();
  armIdleTimer();
  return pool;
}

/**
 * The pool with `workers` workers if it is ready; otherwise starts it (once) and returns
 * undefined, so the caller runs alone this time. Undefined too when workers cannot start.
 */
export function readyPool(workers: number): WorkerPool | undefined {
  const p = poolOf(workers);
  return p?.ready ? p : undefined;
}

/**
 * Starts `workers` workers (if not running), trying again even if they failed before, and
 * resolves when they are ready; rejects when they cannot start. `idle` sets the idle time
 * after which they are terminated (Infinity: only by {@linkcode retirePool}); it stays set.
 */
export function startPool(workers: number, idle?: number): Promise<void> {
  if (idle !== undefined && idle !== idleMs) {
    idleMs = idle;
    if (idleTimer !== undefined) clearTimeout(idleTimer);
    idleTimer = undefined;
  }
  failed = undefined;
  const p = poolOf(workers);
  if (p === undefined) return Promise.reject(startError(workers, failed!.error));
  return p.whenReady();
}

/** The idle time after which the pool's workers are terminated, in milliseconds. */
export function poolIdleMs(): number {
  return idleMs;
}

/** Whether a pool of exactly `workers` workers is running and ready. */
export function poolReady(workers: number): boolean {
  return pool !== undefined && pool.size === workers && pool.ready;
}

/**
 * A region of the host heap for one thread's WebAssembly kernels (wasm_instance.ts), freed once
 * `owner` (the thread's scratch or Worker) is collected; 0 when the heap has no room.
 */
function heapRegion(owner: object): number {
  const block = heapScratch(WASM_REGION_BYTES, true);
  if (!block) return 0;
  block.adopt(owner);
  return block.at;
}

/**
 * Notes where each stage's tensors are in the host heap (the kernels run in place where all
 * of a stage's are), and gives the calling thread its region of the heap (where the
 * WebAssembly kernels keep their per-channel arrays and staged blocks) the first time.
 */
export function locateInHeap(stages: readonly Stage[]): void {
  // Whether a stage runs the WebAssembly kernels (every stage whose tensors are in the heap,
  // or staged: 16-bit types): only then is the heap asked for a region.
  let wasm = false;
  for (const s of stages) {
    s.dyHeap = heapAddress(s.dy);
    s.xHeap = heapAddress(s.x);
    s.outHeap = heapAddress(s.out);
    wasm ||= s.dyHeap >= 0 || s.xHeap >= 0 || s.outHeap >= 0 || s.dtype !== FLOAT32;
  }
  if (wasm) giveCallerRegion();
}

/** Gives the calling thread its region of the heap, the first time (when it may use one). */
function giveCallerRegion(): void {
  if (caller.heapRegion !== 0 || !caller.wasmBytes) return;
  caller.heapRegion = heapRegion(caller);
  caller.heapMemory = hostHeapMemory() ?? undefined;
  caller.wasm = undefined; // instantiated again, on the heap, by the next stage
}

/**
 * The calling thread's one instance of the WebAssembly kernels on the heap (the row norms
 * call their kernels from here between pooled runs), or null when it has none: the policy
 * allows no WebAssembly, or there is no heap or no room for the thread's region.
 */
export function callerKernels(): WasmKernels | null {
  giveCallerRegion();
  return wasmOf(caller);
}

/**
 * Whether the call of governor group `key` that starts at `start` (performance.now() ms) runs
 * on `ready`'s workers: always under a policy that says so, else as the governor has measured
 * such calls (governor.ts). When it runs alone, the workers are told to stop polling (a worker
 * polling for a job would compete with the calling thread for a CPU). The caller records the
 * run's time with `governor.record`.
 */
export function choosePool(ready: WorkerPool, key: number, start: number): boolean {
  const pooled = policy.pool === "always" || governor.choose(key, start);
  if (!pooled) quietPool(ready);
  return pooled;
}

/**
 * Tells `ready`'s workers that calls run on the calling thread for now: they stop polling
 * for the next job and sleep until one comes.
 */
export function quietPool(ready: WorkerPool): void {
  if (Atomics.load(ready.control, CONTROL_SLEEP) === 0) {
    Atomics.store(ready.control, CONTROL_SLEEP, 1);
  }
}

/**
 * Runs `stages` on the calling thread alone: each stage over all its items, then
 * `between[i]` (which may fill the next stage's constants).
 */
export function runInline(
  stages: readonly Stage[],
  between: readonly ((() => void) | undefined)[],
) {
  locateInHeap(stages);
  for (let i = 0; i < stages.length; i++) {
    runStage(stages[i], 0, stages[i].items, caller);
    between[i]?.();
  }
}

/**
 * Runs `stages` over the calling thread and every worker of `ready`, which claim items
 * until none is left (see sync.ts), with `between[i]` run here after every item of stage i
 * is done. Every typed array in the stages must be backed by a SharedArrayBuffer. Throws
 * the first failure of any thread.
 */
export function runPooled(
  ready: WorkerPool,
  stages: readonly Stage[],
  between: readonly ((() => void) | undefined)[],
): void {
  if (stages.length > MAX_STAGES) throw new RangeError(`at most ${MAX_STAGES} stages per job`);
  const { control, workers } = ready;
  pooledJobs++;
  locateInHeap(stages);
  Atomics.store(control, CONTROL_SLEEP, 0);
  const job = nextJob(Atomics.load(control, CONTROL_JOB));
  // Open the job before posting it: a worker that takes the message must find it open.
  if (!publishJob(control, ready.words, job, stages, heapAddress)) {
    postedJobs++;
    const message: WorkerMessage = { job, stages };
    for (const worker of workers) worker.postMessage(message);
  }
  Atomics.notify(control, CONTROL_JOB);
  for (let i = 0; i < stages.length; i++) {
    try {
      workerItems += stages[i].items - runClaimed(control, job, i, stages[i], caller);
      // Items other threads claimed may still be running.
      waitAtLeast(control, CONTROL_DONE + i, stages[i].items);
      if (Atomics.load(control, CONTROL_FAILED) === 0) between[i]?.();
    } catch (error) {
      recordFailure(control, error);
    } finally {
      // Always release the next stage, even after a failure, so no worker is left waiting.
      if (i < stages.length - 1) {
        Atomics.store(control, CONTROL_RELEASE + i, job);
        Atomics.notify(control, CONTROL_RELEASE + i);
      }
    }
  }
  lastUsed = performance.now();
  if (Atomics.load(control, CONTROL_FAILED) !== 0) {
    const length = Atomics.load(control, CONTROL_ERROR_LENGTH);
    const bytes = new Uint8Array(control.buffer, CONTROL_ERROR_BYTES, length).slice();
    throw new Error(`CPU worker pool: ${new TextDecoder().decode(bytes)}`);
  }
}
