/**
 * Jobs through shared memory (src/backends/cpu/pool/job_words.ts and serve.ts): a stage
 * read back from the job words is the stage that was written, over the same memory; a
 * stage with an array outside the host heap is not described; a worker drops words that
 * no longer describe its job and reports words that do but cannot be read; an idle worker
 * leaves its wait for a posted job and when the pool is retired.
 */

import assert from "node:assert/strict";
import {
  describedStages,
  describeStages,
  JOB_WORDS,
} from "../../src/backends/cpu/pool/job_words.ts";
import { describedJob, publishJob, serveJobs } from "../../src/backends/cpu/pool/serve.ts";
import {
  CONTROL_BUFFER_BYTES,
  CONTROL_DESCRIBED,
  CONTROL_ERROR_BYTES,
  CONTROL_ERROR_LENGTH,
  CONTROL_FAILED,
  CONTROL_JOB,
  CONTROL_POSTED,
  CONTROL_RETIRE,
} from "../../src/backends/cpu/pool/sync.ts";
import {
  type Stage,
  type SumsStage,
  uniformStage,
} from "../../src/backends/cpu/kernels/stage_types.ts";
import type { TensorAddress } from "../../src/backends/cpu/kernels/layout_types.ts";
import { createThreadState } from "../../src/backends/cpu/kernels/stages.ts";
import { heapAddress, hostHeapMemory } from "../../src/tensor/host_heap.ts";
import { heapStorage } from "../fixtures/cpu_cases.ts";

function control(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(CONTROL_BUFFER_BYTES));
}

function words(): Float64Array {
  return new Float64Array(new SharedArrayBuffer(JOB_WORDS * 8));
}

/** `length` elements 1, 2, 3, ... in a fresh heap block. */
function inHeap<T extends Float32Array | Uint16Array | Float16Array | Float64Array>(
  make: new (length: number) => T,
  length: number,
): T {
  const values = new make(length);
  for (let i = 0; i < length; i++) values[i] = i + 1;
  return heapStorage(values);
}

function address(base: number, strides: number[]): TensorAddress {
  return { base, strideN: strides[0], strideC: strides[1], strideI: 1, innerStrides: strides };
}

/**
 * A stage with every field set to something of its own (every array of another type or
 * length), whatever its kind would use: reading it back must give each one back.
 */
function fullStage(): Stage {
  const stage = uniformStage<SumsStage>({
    op: "sums",
    layout: { kind: "strided", N: 3, C: 5, inner: 42, innerShape: [6, 7], perSample: true },
    dtype: 2,
    items: 11,
    dy: inHeap(Uint16Array, 630),
    dyAt: address(1, [210, 42, 7, 1]),
    x: inHeap(Float32Array, 631),
    xAt: address(2, [211, 43, 8, 2]),
    out: inHeap(Float16Array, 632),
    outAt: address(3, [212, 44, 9, 3]),
    mean: inHeap(Float64Array, 15),
    partials: inHeap(Float64Array, 110),
  });
  const all = stage as unknown as Record<string, unknown>;
  all.group = 5;
  all.pairs = inHeap(Float64Array, 16);
  all.gamma = inHeap(Float64Array, 5);
  all.constants = inHeap(Float64Array, 17);
  all.beta = inHeap(Float64Array, 6);
  all.groupStats = inHeap(Float64Array, 30);
  all.cache = inHeap(Float32Array, 19);
  all.eps = 1e-5;
  all.swishScale = 0.75;
  stage.dyHeap = heapAddress(stage.dy);
  stage.xHeap = heapAddress(stage.x);
  stage.outHeap = heapAddress(stage.out);
  return stage;
}

Deno.test("job words: a described stage reads back field for field, over the same memory", () => {
  const heap = hostHeapMemory()!;
  const stages = [fullStage(), fullStage()];
  const w = words();
  assert.equal(describeStages(w, stages, heapAddress), true);
  const read = describedStages(w, heap.buffer)!;
  assert.deepEqual(read, stages);
  // Same keys in the same order (one hidden class for every stage), same memory.
  assert.deepEqual(Object.keys(read[1]), Object.keys(stages[1]));
  const [original, copy] = [stages[0] as SumsStage, read[0] as SumsStage];
  assert.ok(copy.out instanceof Float16Array && copy.dy instanceof Uint16Array);
  copy.partials[7] = 12345;
  assert.equal(original.partials[7], 12345, "a view of the same heap bytes");
  // A buffer shorter than the arrays need (a thread that has not seen the heap grow).
  assert.equal(describedStages(w, new SharedArrayBuffer(65536)), undefined);
});

Deno.test("job words: a stage with an array outside the heap, or too many, is not described", () => {
  const w = words();
  const outside = fullStage() as SumsStage;
  (outside as unknown as Record<string, unknown>).mean = new Float64Array(
    new SharedArrayBuffer(15 * 8),
  );
  assert.equal(describeStages(w, [fullStage(), outside], heapAddress), false);
  assert.equal(w[0], 0, "the words describe no stage");
  const huge = fullStage();
  (huge.layout.innerShape as number[]).push(...new Array(JOB_WORDS).fill(1));
  assert.equal(describeStages(w, [huge], heapAddress), false);
});

Deno.test("serve: words that no longer describe the job are dropped; unreadable ones fail it", () => {
  const heap = hostHeapMemory()!;
  const c = control();
  const w = words();
  assert.equal(publishJob(c, w, 4, [fullStage()], heapAddress), true);
  assert.equal(Atomics.load(c, CONTROL_JOB), 4);
  assert.equal(describedJob(c, w, heap, 4)!.length, 1);
  // Job 5's words are being written: job 4's reader gets nothing, and no failure.
  Atomics.store(c, CONTROL_DESCRIBED, 0);
  assert.equal(describedJob(c, w, heap, 4), undefined);
  assert.equal(Atomics.load(c, CONTROL_FAILED), 0);
  // Words that describe job 5 but hold no stage kind: the job fails, saying why.
  Atomics.store(c, CONTROL_DESCRIBED, 5);
  w[2] = 99;
  assert.equal(describedJob(c, w, heap, 5), undefined);
  assert.equal(Atomics.load(c, CONTROL_FAILED), 1);
  const length = Atomics.load(c, CONTROL_ERROR_LENGTH);
  const text = new TextDecoder().decode(new Uint8Array(c.buffer, CONTROL_ERROR_BYTES, length));
  assert.match(text, /no stage kind has code 99/);
});

Deno.test("serve: a posted job sends the worker to its event loop; so does retiring", () => {
  const c = control();
  const w = words();
  // Job 2 cannot be described (an array outside the heap): it is marked posted.
  const outside = fullStage();
  (outside as unknown as Record<string, unknown>).x = new Float32Array(16);
  assert.equal(publishJob(c, w, 2, [outside], heapAddress), false);
  assert.equal(Atomics.load(c, CONTROL_POSTED), 2);
  const started = performance.now();
  const scratch = createThreadState(undefined);
  scratch.heapMemory = hostHeapMemory()!;
  serveJobs(c, w, scratch, 1);
  assert.ok(performance.now() - started < 1000, "returned for the posted job");
  Atomics.store(c, CONTROL_RETIRE, 1);
  serveJobs(c, w, scratch, 2);
  assert.equal(Atomics.load(c, CONTROL_JOB), 2, "returned with no new job");
});
