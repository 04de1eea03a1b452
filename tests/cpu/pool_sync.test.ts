/**
 * The worker pool's item claiming (src/backends/cpu/pool/sync.ts): every item of a job is
 * claimed exactly once, a worker holding an earlier job's message claims nothing of a later
 * job, and job numbers wrap without reaching the claim word's sign bit.
 */

import assert from "node:assert/strict";
import {
  CLAIM_SHIFT,
  claimItem,
  CONTROL_BUFFER_BYTES,
  CONTROL_CLAIM,
  CONTROL_DONE,
  CONTROL_JOB,
  CONTROL_RELEASE,
  JOB_TAGS,
  nextJob,
  openJob,
  runJob,
  waitRelease,
} from "../../src/backends/cpu/pool/sync.ts";
import type { Stage } from "../../src/backends/cpu/kernels/stage_types.ts";
import { createThreadState } from "../../src/backends/cpu/kernels/stages.ts";

function control(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(CONTROL_BUFFER_BYTES));
}

Deno.test("pool sync: the items of a stage are claimed once each, in order, then -1", () => {
  const c = control();
  openJob(c, 7, 2);
  const claimed: number[] = [];
  for (let item = claimItem(c, 0, 7, 5); item >= 0; item = claimItem(c, 0, 7, 5)) {
    claimed.push(item);
  }
  assert.deepEqual(claimed, [0, 1, 2, 3, 4]);
  assert.equal(claimItem(c, 0, 7, 5), -1);
  // Stage 1 has its own counter.
  assert.equal(claimItem(c, 1, 7, 3), 0);
  assert.equal(Atomics.load(c, CONTROL_JOB), 7);
  assert.equal(Atomics.load(c, CONTROL_DONE), 0);
});

Deno.test("pool sync: a worker with an earlier job's message claims nothing of the next", () => {
  const c = control();
  openJob(c, 3, 1);
  assert.equal(claimItem(c, 0, 3, 4), 0);
  openJob(c, nextJob(3), 1);
  assert.equal(claimItem(c, 0, 3, 4), -1, "job 3 is over");
  assert.equal(claimItem(c, 0, 4, 4), 0, "job 4 starts at item 0");
  // runJob of the stale job returns without touching the counters (its stages would throw
  // if run: they are not real stages).
  const stale = [{ items: 4 }, { items: 4 }] as unknown as Stage[];
  runJob({ job: 3, stages: stale }, c, createThreadState(undefined));
  assert.equal(Atomics.load(c, CONTROL_CLAIM) & ((1 << CLAIM_SHIFT) - 1), 1);
  assert.equal(Atomics.load(c, CONTROL_DONE), 0);
});

Deno.test("pool sync: waiting for a release ends when the job is released or replaced", () => {
  const c = control();
  openJob(c, 9, 2);
  Atomics.store(c, CONTROL_RELEASE, 9);
  assert.equal(waitRelease(c, 0, 9), true);
  openJob(c, 10, 2);
  assert.equal(waitRelease(c, 0, 9), false, "job 9 was replaced by job 10");
});

Deno.test("pool sync: job numbers wrap within 1..JOB_TAGS and keep claim words positive", () => {
  assert.equal(nextJob(JOB_TAGS), 1);
  assert.equal(nextJob(1), 2);
  const c = control();
  openJob(c, JOB_TAGS, 1);
  assert.ok(Atomics.load(c, CONTROL_CLAIM) > 0);
  assert.equal(claimItem(c, 0, JOB_TAGS, (1 << CLAIM_SHIFT) - 1), 0);
  assert.equal(claimItem(c, 0, JOB_TAGS, (1 << CLAIM_SHIFT) - 1), 1);
});
