/**
 * How jobs reach the workers: through shared memory, where a worker waits between jobs.
 *
 * The calling thread writes a job's stages into the job words (job_words.ts) and opens the
 * job; a worker polls the job number for a while after each job, then sleeps on it in
 * Atomics.wait, and takes part as soon as it changes. Only a job whose arrays are not all
 * in the host heap is still posted as a message: the worker then goes back to its event
 * loop to receive it, and comes back here once it has run it.
 *
 * Job words are reused by every job, so a worker checks that they still describe its job
 * after reading them (a seqlock: the calling thread zeroes CONTROL_DESCRIBED before it
 * writes them). A worker that reads them while they are rewritten for a later job drops
 * what it read; it could not claim an item of the later job anyway (sync.ts).
 *
 * Part of the pool's worker script (see worker_entry.ts).
 *
 * @module
 */

import type { ThreadState } from "../kernels/stages.ts";
import type { Stage } from "../kernels/stage_types.ts";
import { describedStages, describeStages } from "./job_words.ts";
import {
  CONTROL_DESCRIBED,
  CONTROL_JOB,
  CONTROL_POSTED,
  CONTROL_RETIRE,
  CONTROL_SLEEP,
  JOB_POLL_MS,
  openJob,
  recordFailure,
  runJob,
} from "./sync.ts";

/** Longest single sleep of an idle worker (it then checks CONTROL_RETIRE and sleeps again). */
const IDLE_SLEEP_MS = 1000;

/**
 * Opens job `job` of `stages` (the calling thread): describes them in `words` when every
 * array is in the heap (`heapAt` gives an array's byte offset there, or -1) and returns
 * true; otherwise marks the job as posted and returns false, and the caller must post the
 * stages to every worker. Either way, the caller then notifies CONTROL_JOB.
 */
export function publishJob(
  control: Int32Array,
  words: Float64Array,
  job: number,
  stages: readonly Stage[],
  heapAt: (view: ArrayBufferView) => number,
): boolean {
  Atomics.store(control, CONTROL_DESCRIBED, 0);
  const described = describeStages(words, stages, heapAt);
  Atomics.store(control, described ? CONTROL_DESCRIBED : CONTROL_POSTED, job);
  openJob(control, job, stages.length);
  return described;
}

/** Loads of the job number per poll, between two looks at the clock. */
const POLL_LOADS = 1024;

/**
 * The job number once it is no longer `seen`, or `seen` after {@linkcode POLL_LOADS} loads.
 * A function of its own, called again and again: V8 optimizes it as a whole. The poll loop
 * inline in {@linkcode waitJobChange} was optimized on stack (OSR) while the worker spun, and
 * that code went back to the interpreter ("insufficient type feedback for call", 0.03-0.09
 * ms each) at about every job that found the worker polling: 107 deoptimizations in 80 steps
 * of bench:step's model, none since (`--v8-flags=--trace-deopt`; bench:step's times did not
 * move measurably: bench/RESULTS.md, tenth session).
 */
function pollJob(control: Int32Array, seen: number): number {
  for (let i = 0; i < POLL_LOADS; i++) {
    const job = Atomics.load(control, CONTROL_JOB);
    if (job !== seen) return job;
  }
  return seen;
}

/**
 * Waits until the job number is no longer `seen` (or the pool is retired), polling for
 * {@linkcode JOB_POLL_MS} (unless CONTROL_SLEEP asks it not to) and then sleeping; returns
 * the job number.
 */
function waitJobChange(control: Int32Array, seen: number): number {
  const until = performance.now() + JOB_POLL_MS;
  for (;;) {
    const job = pollJob(control, seen);
    if (job !== seen) return job;
    if (Atomics.load(control, CONTROL_SLEEP) !== 0 || performance.now() >= until) break;
  }
  for (;;) {
    const job = Atomics.load(control, CONTROL_JOB);
    if (job !== seen || Atomics.load(control, CONTROL_RETIRE) !== 0) return job;
    Atomics.wait(control, CONTROL_JOB, seen, IDLE_SLEEP_MS);
  }
}

/**
 * The stages of job `job` from `words`, or undefined when the words do not (or no longer)
 * describe it, or describe arrays beyond this thread's view of the heap. A failure to read
 * words that do describe it is recorded as the job's failure.
 */
export function describedJob(
  control: Int32Array,
  words: Float64Array,
  heap: WebAssembly.Memory | undefined,
  job: number,
): Stage[] | undefined {
  if (heap === undefined || Atomics.load(control, CONTROL_DESCRIBED) !== job) return undefined;
  let stages: Stage[] | undefined;
  let failure: unknown;
  try {
    stages = describedStages(words, heap.buffer);
  } catch (error) {
    failure = error ?? new Error("reading the job words failed");
  }
  if (Atomics.load(control, CONTROL_DESCRIBED) !== job) return undefined;
  if (failure !== undefined) recordFailure(control, failure);
  return failure === undefined ? stages : undefined;
}

/**
 * A worker's loop between jobs: waits for each new job after `seen` and takes part in the
 * described ones (over the heap memory in `scratch`). Returns when a posted job comes (its
 * message is queued: the worker's event loop delivers it) or the pool is retired.
 */
export function serveJobs(
  control: Int32Array,
  words: Float64Array,
  scratch: ThreadState,
  seen: number,
): void {
  for (;;) {
    const job = waitJobChange(control, seen);
    if (Atomics.load(control, CONTROL_RETIRE) !== 0) return;
    seen = job;
    if (Atomics.load(control, CONTROL_POSTED) === job) return;
    const stages = describedJob(control, words, scratch.heapMemory, job);
    if (stages) runJob({ job, stages }, control, scratch);
  }
}
