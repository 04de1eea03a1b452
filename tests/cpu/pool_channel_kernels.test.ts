/**
 * The CPU worker pool running the channel kernels: two threads give the bits of one for every
 * kernel, a call of one item per stage stays on the calling thread, tensors outside the host
 * heap are staged in it with the same bits, jobs on heap memory first used after the workers
 * started still reach them, a script with large ops exits by itself with no permission flags, and setCpuThreads
 * validates its argument.
 *
 * @module
 */

import assert from "node:assert/strict";
import { cpuKernels } from "../../src/backends/cpu/mod.ts";
import { cpuThreads, setCpuThreads, startCpuPool } from "../../src/backends/cpu/threads.ts";
import {
  pooledJobCount,
  postedJobCount,
  withCpuPolicy,
  workerItemCount,
} from "../../src/backends/cpu/pool/pool.ts";
import { MIN_PARALLEL_ELEMENTS } from "../../src/backends/cpu/threads.ts";
import { batchNormItems, type Layout } from "../../src/backends/cpu/kernels/layout_types.ts";
import { channelGeometry, type KernelName } from "../../src/backends/types.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { heapAddress, hostHeapUsage } from "../../src/tensor/host_heap.ts";
import {
  assertSameBits,
  FLOATS,
  type TensorSet,
  type TestLayout,
  values,
} from "../fixtures/cpu_cases.ts";
import { channels, data, numel, output, statsCase } from "../fixtures/channel_kernel_cases.ts";

/** Every kernel on one large case in `layout`, with a fresh set per call (for bit checks). */
function largeCases(dtype: DType, layout: TestLayout): [KernelName, unknown, () => TensorSet][] {
  const shape = [4, 8, 90, 92]; // 264960 elements: above the pooling threshold
  const [N, C] = shape;
  const HxW = 90 * 92;
  const x = () => data(shape, dtype, layout, 1);
  const dy = () => data(shape, dtype, layout, 2);
  const ch = (seed: number, low = -1, high = 1) => channels(C, "float32", seed, low, high);
  const geometry = channelGeometry(shape);
  return [
    ["batchNormReduceBackward", { geometry, inputG: true, weightG: true, biasG: true }, () => ({
      gradOut: dy(),
      input: x(),
      mean: ch(3),
      invstd: ch(4, 0.5, 2),
      sumDy: Tensor.zeros([C]),
      sumDyXmu: Tensor.zeros([C]),
      gradWeight: Tensor.zeros([C]),
      gradBias: Tensor.zeros([C]),
    })],
    [
      "batchNormBackward",
      { geometry, training: true, eps: 1e-5, mask: [true, true, true] },
      () => ({
        gradOut: dy(),
        input: x(),
        weight: ch(5),
        saveMean: ch(3),
        saveInvstd: ch(4, 0.5, 2),
        gradInput: output(shape, dtype, layout),
        gradWeight: Tensor.zeros([C]),
        gradBias: Tensor.zeros([C]),
      }),
    ],
    ["batchNormStats", { geometry, eps: 1e-5 }, () => ({
      input: x(),
      mean: Tensor.zeros([C]),
      invstd: Tensor.zeros([C]),
    })],
    ["batchNormElemt", { geometry, eps: 1e-5 }, () => ({
      input: x(),
      mean: ch(3),
      invstd: ch(4, 0.5, 2),
      output: output(shape, dtype, layout),
    })],
    ["batchNormElemtBackward", { geometry }, () => ({
      gradOut: dy(),
      input: x(),
      mean: ch(3),
      invstd: ch(4, 0.5, 2),
      sumDy: ch(6),
      sumDyXmu: ch(7),
      counter: Tensor.fromArray([N * HxW], [1]),
      gradInput: output(shape, dtype, layout),
    })],
    ["batchNorm", { geometry, training: true, momentum: 0.1, eps: 1e-5 }, () => ({
      input: x(),
      runningMean: ch(3),
      runningVar: ch(4, 0.5, 2),
      output: output(shape, dtype, layout),
      saveMean: Tensor.zeros([C]),
      saveInvstd: Tensor.zeros([C]),
    })],
    ["groupNorm", { N, C, HxW, group: 4, eps: 1e-5 }, () => ({
      input: x(),
      gamma: ch(5),
      output: output(shape, dtype, layout),
      mean: Tensor.zeros([N, 4], dtype),
      rstd: Tensor.zeros([N, 4], dtype),
    })],
    ["groupNormSilu", { N, C, HxW, group: 4, eps: 1e-5, activateSilu: true }, () => ({
      self: x(),
      gamma: ch(5),
      output: output(shape, dtype, layout),
      mean: Tensor.zeros([N, 4], dtype),
      rstd: Tensor.zeros([N, 4], dtype),
    })],
    ["groupNormSwish", {
      N,
      C,
      HxW,
      numGroups: 2,
      dataFormat: "NCHW",
      eps: 1e-5,
      activateSwish: true,
      swishScale: 0.7,
    }, () => ({
      x: x(),
      gamma: ch(5),
      beta: ch(6),
      y: output(shape, dtype, layout),
      mean: Tensor.zeros([N, 2]),
      rstd: Tensor.zeros([N, 2]),
    })],
    ["groupNormBackward", { N, C, HxW, group: 4, mask: [true, true, true] }, () => ({
      gradOut: dy(),
      input: x(),
      mean: Tensor.fromArray(values(N * 4, 8), [N, 4]),
      rstd: Tensor.fromArray(values(N * 4, 9, 0.5, 2), [N, 4]),
      gradInput: output(shape, dtype, layout),
      gradGamma: Tensor.zeros([C]),
      gradBeta: Tensor.zeros([C]),
    })],
    // Its write reads the dYNew its sums kept (channels/group_norm_swish_grad.ts): from the heap
    // on every thread, through the job words.
    ["groupNormSwishGrad", {
      N,
      C,
      HxW,
      numGroups: 2,
      dataFormat: "NCHW",
      swishScale: 0.7,
      dgammaIsRequire: true,
      dbetaIsRequire: true,
    }, () => ({
      dy: dy(),
      x: x(),
      mean: Tensor.fromArray(values(N * 2, 8, -0.2, 0.2), [N, 2], dtype),
      rstd: Tensor.fromArray(values(N * 2, 9, 0.5, 2), [N, 2], dtype),
      gamma: channels(C, dtype, 5, 0.5, 1.5),
      beta: channels(C, dtype, 6),
      dx: output(shape, dtype, layout),
      dgamma: Tensor.zeros([C], dtype),
      dbeta: Tensor.zeros([C], dtype),
    })],
  ];
}

Deno.test("worker pool: 2 threads give the same bits as 1 thread, for every kernel", () =>
  withCpuPolicy({ pool: "always" }, async () => {
    assert.ok(4 * 8 * 90 * 92 >= MIN_PARALLEL_ELEMENTS);
    const before = cpuThreads();
    try {
      setCpuThreads(2);
      await startCpuPool();
      const workerItems = workerItemCount();
      for (const dtype of FLOATS) {
        for (const layout of ["contiguous", "channelsLast", "strided"] as const) {
          for (const [kernel, plan, make] of largeCases(dtype, layout)) {
            const pooled = make();
            const alone = make();
            const jobs = pooledJobCount();
            const posted = postedJobCount();
            setCpuThreads(2);
            (cpuKernels[kernel] as (p: unknown, t: unknown) => void)(plan, pooled);
            const name = `${kernel} ${dtype} ${layout}`;
            assert.ok(pooledJobCount() > jobs, `${name} ran on the pool`);
            // With its data in the host heap, the job reached the workers through shared
            // memory (pool/serve.ts); earlier tests may have filled the heap.
            const data = Object.values(pooled).filter((t) => t!.numel > 1024);
            if (data.every((t) => heapAddress(t!.storage as Float32Array) >= 0)) {
              assert.equal(postedJobCount(), posted, `${name} was not posted`);
            }
            setCpuThreads(1);
            (cpuKernels[kernel] as (p: unknown, t: unknown) => void)(plan, alone);
            for (const [name, t] of Object.entries(pooled)) {
              assertSameBits(t!, alone[name]!, `${kernel} ${dtype} ${layout} ${name}`);
            }
            // Frees their heap blocks now: the loop would fill the heap before a collection.
            for (const t of [...Object.values(pooled), ...Object.values(alone)]) t!.dispose();
          }
        }
      }
      assert.ok(workerItemCount() > workerItems, "the worker ran items");
    } finally {
      setCpuThreads(before);
    }
  }));

Deno.test("worker pool: a call of one item per stage stays on the calling thread", () =>
  withCpuPolicy({ pool: "always" }, async () => {
    const before = cpuThreads();
    try {
      setCpuThreads(2);
      await startCpuPool();
      // One sample of one channel, contiguous: one item, above the pooling threshold.
      const shape = [1, 1, 256, 256];
      assert.ok(numel(shape) >= MIN_PARALLEL_ELEMENTS);
      const layout = (C: number): Layout => ({
        kind: "rows",
        N: 1,
        C,
        inner: 256 * 256,
        innerShape: [256 * 256],
        perSample: false,
      });
      assert.equal(batchNormItems(layout(1)), 1);
      const jobs = pooledJobCount();
      statsCase(shape, "float32", "contiguous", 0);
      assert.equal(pooledJobCount(), jobs, "no pool job for a single item");
      // Two channels make two items: pooled.
      assert.equal(batchNormItems(layout(2)), 2);
      statsCase([1, 2, 256, 256], "float32", "contiguous", 0);
      assert.equal(pooledJobCount(), jobs + 1);
    } finally {
      setCpuThreads(before);
    }
  }));

Deno.test("worker pool: tensors outside the host heap are staged in the heap, with the same bits", () =>
  withCpuPolicy({ pool: "always" }, async () => {
    const before = cpuThreads();
    /** `t` in a SharedArrayBuffer of its own (as when the heap is full), same values. */
    const outside = (t: Tensor) => {
      const storage = t.storage as Float32Array;
      const copy = new Float32Array(new SharedArrayBuffer(storage.byteLength));
      copy.set(storage);
      return new Tensor(copy, t.dtype, t.shape, t.strides, t.offset);
    };
    try {
      setCpuThreads(2);
      await startCpuPool();
      for (const [kernel, plan, make] of largeCases("float32", "contiguous")) {
        const set = make();
        const pooled = Object.fromEntries(
          Object.entries(set).map(([name, t]) => [name, t!.numel > 1024 ? outside(t!) : t]),
        );
        const alone = make();
        const posted = postedJobCount();
        const staged = hostHeapUsage().allocations;
        setCpuThreads(2);
        (cpuKernels[kernel] as (p: unknown, t: unknown) => void)(plan, pooled);
        // The float32 kernels run in the heap: the call stages there, and posts nothing.
        assert.equal(postedJobCount(), posted, `${kernel} was not posted`);
        assert.ok(hostHeapUsage().allocations > staged, `${kernel} staged in the heap`);
        setCpuThreads(1);
        (cpuKernels[kernel] as (p: unknown, t: unknown) => void)(plan, alone);
        for (const [name, t] of Object.entries(pooled)) {
          assertSameBits(t!, alone[name]!, `${kernel} ${name}`);
        }
      }
    } finally {
      setCpuThreads(before);
    }
  }));

Deno.test("worker pool: a script with large ops exits by itself, with no permission flags", async () => {
  const child = new URL("../fixtures/cpu_pool_exit_child.ts", import.meta.url).pathname;
  const started = performance.now();
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--quiet", child],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const seconds = (performance.now() - started) / 1000;
  const stdout = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  assert.match(stdout, /pooled: true/);
  assert.match(stdout, /done/);
  assert.ok(seconds < 10, `the child took ${seconds.toFixed(1)} s to exit`);
});

Deno.test("setCpuThreads validates its argument", () => {
  assert.throws(() => setCpuThreads(0), RangeError);
  assert.throws(() => setCpuThreads(1.5), RangeError);
});

Deno.test("worker pool: jobs on heap memory first used after the workers started reach them", async () => {
  // In a fresh process, so that how far the heap's blocks reach is known.
  const child = new URL("../fixtures/cpu_pool_grow_child.ts", import.meta.url).pathname;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--quiet", child],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const report = JSON.parse(new TextDecoder().decode(out.stdout));
  assert.equal(report.beyond, true, "the tensors lie beyond the memory the workers had seen");
  assert.equal(report.posted, 0, "their jobs were described, not posted");
  assert.ok(report.workerItems > 0, "the worker ran items on the grown memory");
  assert.equal(report.sameAsOneThread, true);
});
