/**
 * The shared control block of the worker pool, and how threads share a job's stages.
 *
 * Work is claimed, not assigned: every thread (the calling one and each worker) takes the
 * next unclaimed item of the current stage from a shared counter until none is left. So a
 * worker that wakes late, or a vCPU that the hypervisor takes away for a while, only means
 * that the other threads run more items: a pooled call is never much slower than the
 * calling thread alone (a fixed split made every call wait for its slowest thread:
 * bench/RESULTS.md). Results do not depend on which thread runs an item: each item writes
 * its own partials, merged in item order afterwards.
 *
 * Stages end at a barrier: the calling thread waits until every item of stage i is done,
 * runs the merge that fills stage i + 1's constants, then releases stage i + 1.
 *
 * Jobs are numbered, and the claim counters carry the job's number, so a worker still busy
 * with (or only now woken for) an earlier job can never claim an item of a later one.
 *
 * Part of the pool's worker script (see worker_entry.ts).
 *
 * @module
 */

import type { ThreadState } from "../kernels/stages.ts";
import type { Stage } from "../kernels/stage_types.ts";
import { runStage } from "../kernels/stages.ts";

/**
 * How long a worker polls for the next job before it sleeps (serve.ts). A job that comes
 * sooner starts at once, without the futex wake-up that takes tens of microseconds on a VM;
 * calls made back to back are usually this close. The governor (governor.ts) counts on it.
 */
export const JOB_POLL_MS = 0.5;

/** Control word: number of workers that finished starting up. */
export const CONTROL_READY = 0;
/** Control word: set to 1 when a thread failed during the current job. */
export const CONTROL_FAILED = 1;
/** Control word: byte length of the UTF-8 error text of the failure. */
export const CONTROL_ERROR_LENGTH = 2;
/** Control word: the number of the current job (1 .. JOB_TAGS); idle workers wait on it. */
export const CONTROL_JOB = 3;
/** Control word: the job whose stages the job words describe (0 while they are written). */
export const CONTROL_DESCRIBED = 4;
/** Control word: the last job whose stages were posted as a message instead. */
export const CONTROL_POSTED = 5;
/** Control word: 1 once the pool is retired (its workers stop waiting for jobs). */
export const CONTROL_RETIRE = 6;
/**
 * Control word: 1 while the calling thread runs calls alone (the pool's governor chose so):
 * workers polling for the next job go to sleep at once instead of spinning, which would take
 * the CPU from the calling thread where CPUs are short. The next pooled job sets it to 0.
 */
export const CONTROL_SLEEP = 7;
/** Control words CLAIM + i: job number << CLAIM_SHIFT | items of stage i claimed so far. */
export const CONTROL_CLAIM = 8;
/** Control words DONE + i: items of stage i finished. */
export const CONTROL_DONE = 24;
/** Control words RELEASE + i: the job number once stage i + 1 may start. */
export const CONTROL_RELEASE = 40;
/** Most stages one job may have. */
export const MAX_STAGES = 16;
/** Byte offset of the error text in the control buffer. */
export const CONTROL_ERROR_BYTES = 256;
/** Size of the control buffer in bytes (words, then up to 3840 bytes of error text). */
export const CONTROL_BUFFER_BYTES = 4096;

/** Bits of a claim word that count items (so a stage has fewer than 2^20 items). */
export const CLAIM_SHIFT = 20;
/** Job numbers cycle through 1 .. JOB_TAGS (above the item count, below the sign bit). */
export const JOB_TAGS = 1023;

/** Iterations of busy polling before sleeping in Atomics.wait (waits are usually short). */
const SPIN_ITERATIONS = 20000;

/** A job as a worker receives it: its number and its stages. */
export interface JobMessage {
  /** The job's number (see {@linkcode CONTROL_JOB}). */
  readonly job: number;
  /** The stages, in order. */
  readonly stages: readonly Stage[];
}

/** The job number after `job`. */
export function nextJob(job: number): number {
  return job >= JOB_TAGS ? 1 : job + 1;
}

/** Blocks until control[index] >= value: a short spin, then Atomics.wait. */
export function waitAtLeast(control: Int32Array, index: number, value: number): void {
  for (let i = 0; i < SPIN_ITERATIONS; i++) {
    if (Atomics.load(control, index) >= value) return;
  }
  for (;;) {
    const seen = Atomics.load(control, index);
    if (seen >= value) return;
    Atomics.wait(control, index, seen, 50);
  }
}

/**
 * Blocks until stage `stage` of job `job` is released (true), or the pool has moved on to
 * another job (false: this worker woke too late to take part in the rest of `job`).
 */
export function waitRelease(control: Int32Array, stage: number, job: number): boolean {
  const index = CONTROL_RELEASE + stage;
  for (let i = 0;; i++) {
    const seen = Atomics.load(control, index);
    if (seen === job) return true;
    if (Atomics.load(control, CONTROL_JOB) !== job) return false;
    if (i >= SPIN_ITERATIONS) Atomics.wait(control, index, seen, 50);
  }
}

/** Adds one to control[index] and wakes its waiters. */
export function signal(control: Int32Array, index: number): void {
  Atomics.add(control, index, 1);
  Atomics.notify(control, index);
}

/** Records the first failure of a job (its message) for the calling thread to throw. */
export function recordFailure(control: Int32Array, error: unknown): void {
  if (Atomics.compareExchange(control, CONTROL_FAILED, 0, 1) !== 0) return;
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const bytes = new TextEncoder().encode(text);
  const room = control.buffer.byteLength - CONTROL_ERROR_BYTES;
  const length = Math.min(bytes.length, room);
  new Uint8Array(control.buffer, CONTROL_ERROR_BYTES, length).set(bytes.subarray(0, length));
  Atomics.store(control, CONTROL_ERROR_LENGTH, length);
}

/** Claims the next item of stage `stage` of job `job`, or returns -1 when none is left. */
export function claimItem(control: Int32Array, stage: number, job: number, items: number): number {
  const index = CONTROL_CLAIM + stage;
  for (;;) {
    const seen = Atomics.load(control, index);
    const item = seen & ((1 << CLAIM_SHIFT) - 1);
    if (seen >>> CLAIM_SHIFT !== job || item >= items) return -1;
    if (Atomics.compareExchange(control, index, seen, seen + 1) === seen) return item;
  }
}

/**
 * Runs items of stage `stage` of job `job` until none is left to claim, counting each in
 * DONE + stage (a failed or skipped item too, so that nobody waits forever); returns how
 * many this thread claimed.
 */
export function runClaimed(
  control: Int32Array,
  job: number,
  stage: number,
  s: Stage,
  scratch: ThreadState,
): number {
  for (let claimed = 0;; claimed++) {
    const item = claimItem(control, stage, job, s.items);
    if (item < 0) return claimed;
    if (Atomics.load(control, CONTROL_FAILED) === 0) {
      try {
        runStage(s, item, item + 1, scratch);
      } catch (error) {
        recordFailure(control, error);
      }
    }
    signal(control, CONTROL_DONE + stage);
  }
}

/** Opens job `job` for `stages` stages (the calling thread, before it posts the job). */
export function openJob(control: Int32Array, job: number, stages: number): void {
  Atomics.store(control, CONTROL_FAILED, 0);
  Atomics.store(control, CONTROL_ERROR_LENGTH, 0);
  for (let i = 0; i < stages; i++) {
    Atomics.store(control, CONTROL_DONE + i, 0);
    Atomics.store(control, CONTROL_RELEASE + i, 0);
    Atomics.store(control, CONTROL_CLAIM + i, job << CLAIM_SHIFT);
  }
  Atomics.store(control, CONTROL_JOB, job);
  // Wakes any worker of the previous job still waiting for a release that will not come now.
  for (let i = 0; i < MAX_STAGES; i++) Atomics.notify(control, CONTROL_RELEASE + i);
}

/** A worker's part of a job: items of each stage while there are any, stage after stage. */
export function runJob(message: JobMessage, control: Int32Array, scratch: ThreadState): void {
  const { job, stages } = message;
  for (let i = 0; i < stages.length; i++) {
    if (i > 0 && !waitRelease(control, i - 1, job)) return;
    runClaimed(control, job, i, stages[i], scratch);
  }
}
