/**
 * The shared control block of the worker pool and the share of a job one thread runs.
 * Threads meet at one barrier per stage: every worker counts itself in `ARRIVE + i` when its
 * share of stage i is done and waits for `RELEASE + i`, which the calling thread sets after
 * it has merged the partials of stage i (so the next stage can read the merged constants).
 *
 * Worker-safe (see ../fast/kernels/codecs.ts): serialised into the worker script.
 *
 * @module
 */

import type { ThreadScratch } from "../fast/kernels/codecs.ts";
import { shareStart } from "../fast/kernels/layout_types.ts";
import type { Stage } from "../fast/kernels/stage_types.ts";
import { runStage } from "../fast/kernels/stages.ts";

/** Control word: number of workers that finished starting up. */
export const CONTROL_READY = 0;
/** Control word: set to 1 when a thread failed during the current job. */
export const CONTROL_FAILED = 1;
/** Control word: byte length of the UTF-8 error text of the failure. */
export const CONTROL_ERROR_LENGTH = 2;
/** Control words ARRIVE + i: workers done with stage i. */
export const CONTROL_ARRIVE = 8;
/** Control words RELEASE + i: 1 once the calling thread let stage i + 1 start. */
export const CONTROL_RELEASE = 24;
/** Most stages one job may have. */
export const MAX_STAGES = 16;
/** Byte offset of the error text in the control buffer. */
export const CONTROL_ERROR_BYTES = 256;
/** Size of the control buffer in bytes (words, then up to 3840 bytes of error text). */
export const CONTROL_BUFFER_BYTES = 4096;

/** Iterations of busy polling before sleeping in Atomics.wait (waits are usually short). */
export const SPIN_ITERATIONS = 20000;

/** A job as a worker receives it: the stages, and which share this worker runs. */
export interface JobShare {
  /** The stages, in order. */
  readonly stages: readonly Stage[];
  /** This worker's share (1 .. parts - 1; the calling thread runs share 0). */
  readonly part: number;
  /** Number of shares (threads). */
  readonly parts: number;
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

/**
 * A worker's part of a job: its share of every stage, a barrier after each. After a failure
 * it still passes every barrier (doing no work) so that no thread waits forever.
 */
export function runShare(job: JobShare, control: Int32Array, scratch: ThreadScratch): void {
  const { stages, part, parts } = job;
  for (let i = 0; i < stages.length; i++) {
    if (Atomics.load(control, CONTROL_FAILED) === 0) {
      try {
        const stage = stages[i];
        const from = shareStart(stage.items, part, parts);
        const to = shareStart(stage.items, part + 1, parts);
        runStage(stage, from, to, scratch);
      } catch (error) {
        recordFailure(control, error);
      }
    }
    signal(control, CONTROL_ARRIVE + i);
    if (i < stages.length - 1) waitAtLeast(control, CONTROL_RELEASE + i, 1);
  }
}
