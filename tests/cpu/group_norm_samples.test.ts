/**
 * GroupNorm per sample (src/backends/cpu/kernels/group_norm_samples.ts): a call runs fused,
 * sample by sample on each thread, or, with too few samples for the pool's threads, as its two
 * stages with the samples' constants between them. Both give the bits of one thread alone (which
 * runs fused) for groupNorm, its swish write and groupNormBackward with and without gradInput,
 * in float32 and bfloat16, rows and channels-last pixels, one sample an item and many (with a
 * short last run).
 *
 * @module
 */

import assert from "node:assert/strict";
import { cpuKernels } from "../../src/backends/cpu/mod.ts";
import { cpuThreads, setCpuThreads, startCpuPool } from "../../src/backends/cpu/threads.ts";
import { pooledJobCount, withCpuPolicy } from "../../src/backends/cpu/pool/pool.ts";
import { fusesSamples } from "../../src/backends/cpu/channels/group_norm.ts";
import {
  groupNormSampleItems,
  samplesPerItem,
} from "../../src/backends/cpu/kernels/group_norm_samples.ts";
import type { Layout } from "../../src/backends/cpu/kernels/layout_types.ts";
import type { KernelName } from "../../src/backends/types.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertSameBits, type TensorSet, type TestLayout, values } from "../fixtures/cpu_cases.ts";
import { channels, data, output } from "../fixtures/channel_kernel_cases.ts";

/** Each GroupNorm kernel with a fused stage, on `shape`, with a fresh tensor set per call. */
function cases(
  shape: number[],
  dtype: DType,
  layout: TestLayout,
): [string, KernelName, unknown, () => TensorSet][] {
  const [N, C] = shape;
  const HxW = shape[2] * shape[3];
  const x = () => data(shape, dtype, layout, 1);
  const dy = () => data(shape, dtype, layout, 2);
  const backward = (mask: boolean[]) => () => ({
    gradOut: dy(),
    input: x(),
    mean: Tensor.fromArray(values(N * 4, 8), [N, 4]),
    rstd: Tensor.fromArray(values(N * 4, 9, 0.5, 2), [N, 4]),
    gradInput: mask[0] ? output(shape, dtype, layout) : undefined,
    gradGamma: Tensor.zeros([C]),
    gradBeta: Tensor.zeros([C]),
  });
  return [
    ["groupNorm", "groupNorm", { N, C, HxW, group: 4, eps: 1e-5 }, () => ({
      input: x(),
      gamma: channels(C, "float32", 5),
      beta: channels(C, "float32", 6),
      output: output(shape, dtype, layout),
      mean: Tensor.zeros([N, 4], dtype),
      rstd: Tensor.zeros([N, 4], dtype),
    })],
    ["groupNormSwish", "groupNormSwish", {
      N,
      C,
      HxW,
      numGroups: 4,
      dataFormat: "NCHW",
      eps: 1e-5,
      activateSwish: true,
      swishScale: 0.7,
    }, () => ({
      x: x(),
      gamma: channels(C, "float32", 5),
      beta: channels(C, "float32", 6),
      y: output(shape, dtype, layout),
      mean: Tensor.zeros([N, 4]),
      rstd: Tensor.zeros([N, 4]),
    })],
    ...[[true, true, true], [false, true, true]].map((mask) =>
      [
        `groupNormBackward mask ${mask}`,
        "groupNormBackward",
        { N, C, HxW, group: 4, mask },
        backward(mask),
      ] as [string, KernelName, unknown, () => TensorSet]
    ),
  ];
}

/** The layout of a contiguous call over `shape`. */
function rows(shape: number[]): Layout {
  const [N, C, H, W] = shape;
  return { kind: "rows", N, C, inner: H * W, innerShape: [H * W], perSample: true };
}

Deno.test("GroupNorm per sample: fused or as two stages, on the pool, the bits of one thread", () =>
  withCpuPolicy({ pool: "always" }, async () => {
    const before = cpuThreads();
    // Samples of 66240 elements, one an item: on 2 threads, 2, 3 and 5 run as two stages, 4
    // fused; 300 samples of 1024 elements: 32 an item, 10 items (the last of 12), fused.
    const shapes = [[2, 8, 90, 92], [3, 8, 90, 92], [4, 8, 90, 92], [5, 8, 90, 92], [
      300,
      8,
      8,
      16,
    ]];
    const items = shapes.map((s) => groupNormSampleItems(rows(s)));
    assert.deepEqual(items, [2, 3, 4, 5, 10]);
    assert.equal(samplesPerItem(rows(shapes[4])), 32);
    assert.deepEqual(items.map((n) => fusesSamples(true, n, 2)), [false, false, true, false, true]);
    assert.deepEqual(items.map((n) => fusesSamples(false, n, 2)), [true, true, true, true, true]);
    assert.deepEqual([6, 7, 8, 9].map((n) => fusesSamples(true, n, 2)), [true, false, true, true]);
    try {
      setCpuThreads(2);
      await startCpuPool();
      for (const shape of shapes) {
        for (const dtype of ["float32", "bfloat16"] as const) {
          for (const layout of ["contiguous", "channelsLast"] as const) {
            for (const [name, kernel, plan, make] of cases(shape, dtype, layout)) {
              const pooled = make();
              const alone = make();
              const run = (t: TensorSet) =>
                (cpuKernels[kernel] as (p: unknown, t: unknown) => void)(plan, t);
              const jobs = pooledJobCount();
              setCpuThreads(2);
              run(pooled);
              const what = `${name} ${shape} ${dtype} ${layout}`;
              assert.ok(pooledJobCount() > jobs, `${what} ran on the pool`);
              setCpuThreads(1);
              run(alone);
              for (const [field, t] of Object.entries(pooled)) {
                if (t) assertSameBits(t, alone[field]!, `${what} ${field}`);
              }
              for (const t of [...Object.values(pooled), ...Object.values(alone)]) t?.dispose();
            }
          }
        }
      }
    } finally {
      setCpuThreads(before);
    }
  }));
