/**
 * The streaming CPU kernels against the float64 oracle's kernels (tests/oracle/kernels): every
 * kernel, every dtype (with float32 statistics for float16/bfloat16 data), ranks 2-8, contiguous,
 * channels-last, sliced, strided and transposed views, masks, in-place, empty tensors,
 * NaN; then the worker pool (identical bits for 1 and 2 threads, a script exits by itself,
 * no permission needed) and the bfloat16 rounding of the store loops.
 */

import assert from "node:assert/strict";
import { cpuKernels } from "../../src/backends/cpu/mod.ts";
import { referenceKernels } from "../oracle/kernels/mod.ts";
import { cpuThreads, setCpuThreads, startCpuPool } from "../../src/backends/cpu/threads.ts";
import {
  pooledJobCount,
  postedJobCount,
  withCpuPolicy,
  workerItemCount,
} from "../../src/backends/cpu/pool/pool.ts";
import { MIN_PARALLEL_ELEMENTS } from "../../src/backends/cpu/threads.ts";
import {
  batchNormItems,
  blocksPerSample,
  type Layout,
} from "../../src/backends/cpu/kernels/layout_types.ts";
import { channelGeometry, type KernelName } from "../../src/backends/types.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { heapAddress, hostHeapUsage } from "../../src/tensor/host_heap.ts";
import {
  assertSameBits,
  assertSetsF32,
  batchNormTerms,
  FLOATS,
  laidOut,
  LAYOUTS,
  type TensorSet,
  type TestLayout,
  twinSet,
  values,
} from "../fixtures/cpu_cases.ts";

/** One shape per rank 2..8 (channel = dim 1, C divisible by 2 and 3 for GroupNorm). */
const SHAPES: readonly number[][] = [
  [5, 6],
  [3, 6, 7],
  [2, 6, 5, 4],
  [2, 6, 2, 3, 4],
  [2, 6, 3, 1, 2, 3],
  [2, 6, 2, 2, 1, 2, 3],
  [2, 6, 2, 2, 1, 2, 2, 3],
];

const numel = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

type Run = (kernels: typeof cpuKernels, set: TensorSet) => void;

/**
 * Runs `run` with the CPU kernels on `set` and the reference on its twin; compares all within
 * the float32 kernels' bound (assertSetsF32).
 */
function compare(name: string, set: TensorSet, run: Run): void {
  const expected = twinSet(set);
  run(referenceKernels, expected);
  run(cpuKernels, set);
  assertSetsF32(set, expected, name, batchNormTerms(set, expected));
}

/** Data x in `layout`: uniform noise around per-channel offsets (large for channel 1). */
function data(
  shape: readonly number[],
  dtype: DType,
  layout: TestLayout,
  seed: number,
): Tensor {
  const v = values(numel(shape), seed);
  const C = shape[1] ?? 1;
  const inner = numel(shape.slice(2));
  for (let i = 0; i < v.length; i++) {
    const c = Math.floor(i / inner) % C;
    v[i] += c === 1 ? 100 : c % 3 === 2 ? -2 : 0;
  }
  return laidOut(v, shape, dtype, layout);
}

/** A per-channel tensor of C values in [low, high); strided storage when `strided`. */
function channels(
  C: number,
  dtype: DType,
  seed: number,
  low = -1,
  high = 1,
  strided = false,
): Tensor {
  const v = values(C, seed, low, high);
  if (!strided) return Tensor.fromArray(v, [C], dtype);
  const t = Tensor.zeros([2 * C], dtype).slice(0, 0, 2 * C, 2);
  return t.copy_(v);
}

/** An output in `layout` (zero-filled). */
function output(shape: readonly number[], dtype: DType, layout: TestLayout): Tensor {
  return laidOut(new Float64Array(numel(shape)), shape, dtype, layout);
}

const statDType = (dtype: DType, i: number): DType => (i % 2 === 0 ? dtype : "float32");
const outLayoutOf = (layout: TestLayout, i: number): TestLayout =>
  i % 2 === 0 ? layout : "contiguous";

// ---------------------------------------------------------------------------------------
// BatchNorm backward family

function reduceCase(
  shape: number[],
  dtype: DType,
  layout: TestLayout,
  i: number,
  mask: readonly [boolean, boolean, boolean],
): void {
  const C = shape[1];
  const s = statDType(dtype, i);
  const set: TensorSet = {
    gradOut: data(shape, dtype, layout, 10 + i),
    input: data(shape, dtype, layout, 20 + i),
    mean: channels(C, s, 30 + i, -1, 1, i % 3 === 0),
    invstd: channels(C, s, 31 + i, 0.5, 2),
    weight: channels(C, s, 32 + i),
    sumDy: mask[0] ? Tensor.zeros([C], s) : undefined,
    sumDyXmu: mask[0] ? Tensor.zeros([C], s) : undefined,
    gradWeight: mask[1] ? Tensor.zeros([C], s) : undefined,
    gradBias: mask[2] ? Tensor.zeros([C], s) : undefined,
  };
  const plan = {
    geometry: channelGeometry(shape),
    inputG: mask[0],
    weightG: mask[1],
    biasG: mask[2],
  };
  compare(
    `reduce ${dtype} ${layout} ${shape}`,
    set,
    (k, t) => k.batchNormReduceBackward(plan, t as never),
  );
}

function backwardCase(
  shape: number[],
  dtype: DType,
  layout: TestLayout,
  i: number,
  options: { training: boolean; mask: readonly [boolean, boolean, boolean]; inPlace?: boolean },
): void {
  const C = shape[1];
  const s = statDType(dtype, i);
  const { training, mask } = options;
  const gradOut = data(shape, dtype, layout, 40 + i);
  const absent = i % 4 === 3;
  const set: TensorSet = {
    gradOut,
    input: data(shape, dtype, layout, 41 + i),
    weight: absent ? undefined : channels(C, s, 42 + i),
    runningMean: absent ? undefined : channels(C, s, 43 + i),
    runningVar: absent ? undefined : channels(C, s, 44 + i, 0.5, 2),
    saveMean: absent ? undefined : channels(C, s, 45 + i, -1, 1, true),
    saveInvstd: absent ? undefined : channels(C, s, 46 + i, 0.5, 2),
    gradInput: mask[0]
      ? options.inPlace ? gradOut : output(shape, dtype, outLayoutOf(layout, i))
      : undefined,
    gradWeight: mask[1] ? Tensor.zeros([C], s) : undefined,
    gradBias: mask[2] ? Tensor.zeros([C], s) : undefined,
  };
  const plan = { geometry: channelGeometry(shape), training, eps: 1e-5, mask };
  compare(
    `backward ${dtype} ${layout} ${shape} ${training} ${mask}`,
    set,
    (k, t) => k.batchNormBackward(plan, t as never),
  );
}

function elemtBackwardCase(
  shape: number[],
  dtype: DType,
  layout: TestLayout,
  i: number,
  inPlace = false,
): void {
  const C = shape[1];
  const s = statDType(dtype, i);
  const gradOut = data(shape, dtype, layout, 50 + i);
  const set: TensorSet = {
    gradOut,
    input: data(shape, dtype, layout, 51 + i),
    mean: channels(C, s, 52 + i),
    invstd: channels(C, s, 53 + i, 0.5, 2),
    weight: i % 3 === 0 ? undefined : channels(C, s, 54 + i),
    sumDy: channels(C, s, 55 + i, -5, 5),
    sumDyXmu: channels(C, s, 56 + i, -5, 5),
    counter: Tensor.fromArray([numel(shape) / C, 3], [2], i % 2 ? "int32" : "float32"),
    gradInput: inPlace ? gradOut : output(shape, dtype, outLayoutOf(layout, i)),
  };
  const plan = { geometry: channelGeometry(shape) };
  compare(
    `elemtBackward ${dtype} ${layout} ${shape}`,
    set,
    (k, t) => k.batchNormElemtBackward(plan, t as never),
  );
}

// ---------------------------------------------------------------------------------------
// BatchNorm forward family

function statsCase(shape: number[], dtype: DType, layout: TestLayout, i: number): void {
  const C = shape[1];
  const set: TensorSet = {
    input: data(shape, dtype, layout, 60 + i),
    mean: Tensor.zeros([C]),
    invstd: Tensor.zeros([C]),
  };
  const plan = { geometry: channelGeometry(shape), eps: 1e-5 };
  compare(`stats ${dtype} ${layout} ${shape}`, set, (k, t) => k.batchNormStats(plan, t as never));
}

function elemtCase(
  shape: number[],
  dtype: DType,
  layout: TestLayout,
  i: number,
  inPlace = false,
): void {
  const C = shape[1];
  const input = data(shape, dtype, layout, 70 + i);
  const set: TensorSet = {
    input,
    weight: i % 3 === 1 ? undefined : channels(C, dtype, 71 + i),
    bias: i % 3 === 2 ? undefined : channels(C, dtype, 72 + i),
    mean: channels(C, dtype, 73 + i),
    invstd: channels(C, dtype, 74 + i, 0.5, 2),
    output: inPlace ? input : output(shape, dtype, outLayoutOf(layout, i)),
  };
  const plan = { geometry: channelGeometry(shape), eps: 1e-5 };
  compare(`elemt ${dtype} ${layout} ${shape}`, set, (k, t) => k.batchNormElemt(plan, t as never));
}

function batchNormCase(
  shape: number[],
  dtype: DType,
  layout: TestLayout,
  i: number,
  training: boolean,
  inPlace = false,
): void {
  const C = shape[1];
  const s = statDType(dtype, i);
  const input = data(shape, dtype, layout, 80 + i);
  const absent = i % 4 === 3;
  const set: TensorSet = {
    input,
    weight: absent ? undefined : channels(C, dtype, 81 + i),
    bias: absent ? undefined : channels(C, dtype, 82 + i),
    runningMean: absent ? undefined : channels(C, s, 83 + i),
    runningVar: absent ? undefined : channels(C, s, 84 + i, 0.5, 2),
    output: inPlace ? input : output(shape, dtype, outLayoutOf(layout, i)),
    saveMean: training ? Tensor.zeros([C]) : Tensor.zeros([0], dtype),
    saveInvstd: training ? Tensor.zeros([C]) : Tensor.zeros([0], dtype),
  };
  const plan = { geometry: channelGeometry(shape), training, momentum: 0.1, eps: 1e-5 };
  compare(
    `batchNorm ${dtype} ${layout} ${shape} ${training}`,
    set,
    (k, t) => k.batchNorm(plan, t as never),
  );
}

// ---------------------------------------------------------------------------------------
// GroupNorm

function groupNormCase(
  shape: number[],
  dtype: DType,
  layout: TestLayout,
  i: number,
  group: number,
  inPlace = false,
): void {
  const [N, C] = shape;
  const HxW = numel(shape.slice(2));
  const input = data(shape, dtype, layout, 90 + i);
  const set: TensorSet = {
    input,
    gamma: i % 3 === 1 ? undefined : channels(C, dtype, 91 + i),
    beta: i % 3 === 2 ? undefined : channels(C, dtype, 92 + i),
    output: inPlace ? input : output(shape, dtype, outLayoutOf(layout, i)),
    mean: Tensor.zeros([N, group], dtype),
    rstd: Tensor.zeros([N, group], dtype),
  };
  const plan = { N, C, HxW, group, eps: 1e-5 };
  compare(
    `groupNorm ${dtype} ${layout} ${shape} g${group}`,
    set,
    (k, t) => k.groupNorm(plan, t as never),
  );
}

/**
 * groupNormSilu (swishScale 1), groupNormSwish (another scale, float32 gamma and statistics
 * for 16-bit data every other case) or the plain write (undefined), against the oracle;
 * `extremes` puts NaN, +-Inf and values far outside the group's spread in the data.
 */
function groupNormActCase(
  shape: number[],
  dtype: DType,
  layout: TestLayout,
  i: number,
  group: number,
  scale: number | undefined,
  extremes = false,
): void {
  const [N, C] = shape;
  const HxW = numel(shape.slice(2));
  const input = data(shape, dtype, layout, 190 + i);
  if (extremes) {
    const v = input.toFloat64Array();
    v[1] = NaN;
    v[HxW * 2 + 1] = Infinity;
    v[HxW * 4 + 2] = -Infinity;
    for (let k = 3; k < v.length; k += 7) v[k] *= 3e3;
    input.copy_(v);
  }
  const swish = scale !== undefined && scale !== 1;
  const stats = swish && i % 2 === 1 ? "float32" : dtype;
  const set: TensorSet = {
    [swish ? "x" : "self"]: input,
    gamma: channels(C, stats, 191 + i),
    beta: channels(C, stats, 192 + i),
    [swish ? "y" : "output"]: output(shape, dtype, outLayoutOf(layout, i)),
    mean: Tensor.zeros([N, group], stats),
    rstd: Tensor.zeros([N, group], stats),
  };
  const label = `groupNorm act ${scale} ${dtype} ${layout} ${shape} g${group}`;
  if (swish) {
    const plan = {
      N,
      C,
      HxW,
      numGroups: group,
      dataFormat: "NCHW",
      eps: 1e-5,
      activateSwish: true,
      swishScale: scale,
    };
    compare(label, set, (k, t) => k.groupNormSwish(plan, t as never));
  } else {
    const plan = { N, C, HxW, group, eps: 1e-5, activateSilu: scale === 1 };
    compare(label, set, (k, t) => k.groupNormSiluV2(plan, t as never));
  }
}

function groupNormBackwardCase(
  shape: number[],
  dtype: DType,
  layout: TestLayout,
  i: number,
  group: number,
  options: { mask?: readonly [boolean, boolean, boolean]; inPlace?: boolean; flatDy?: boolean } =
    {},
): void {
  const [N, C] = shape;
  const HxW = numel(shape.slice(2));
  const mask = options.mask ?? [true, true, true];
  const s = statDType(dtype, i);
  let gradOut = data(shape, dtype, layout, 100 + i);
  if (options.flatDy) gradOut = gradOut.contiguous().reshape([numel(shape)]);
  const set: TensorSet = {
    gradOut,
    input: data(shape, dtype, layout, 101 + i),
    mean: Tensor.fromArray(values(N * group, 102 + i), [N, group], s),
    rstd: Tensor.fromArray(values(N * group, 103 + i, 0.5, 2), [N, group], s),
    gamma: i % 3 === 1 ? undefined : channels(C, dtype, 104 + i),
    gradInput: mask[0]
      ? options.inPlace ? gradOut : output(shape, dtype, outLayoutOf(layout, i))
      : undefined,
    gradGamma: mask[1] ? Tensor.zeros([C], s) : undefined,
    gradBeta: mask[2] ? Tensor.zeros([C], s) : undefined,
  };
  const plan = { N, C, HxW, group, mask };
  compare(
    `groupNormBackward ${dtype} ${layout} ${shape} g${group} ${mask}`,
    set,
    (k, t) => k.groupNormBackward(plan, t as never),
  );
}

// ---------------------------------------------------------------------------------------
// Sweeps: dtype x layout x rank 2-8

function sweep(body: (shape: number[], dtype: DType, layout: TestLayout, i: number) => void) {
  let i = 0;
  for (const dtype of FLOATS) {
    for (const layout of LAYOUTS) {
      for (const shape of SHAPES) body(shape, dtype, layout, i++);
    }
  }
}

const MASKS: readonly (readonly [boolean, boolean, boolean])[] = [
  [true, true, true],
  [true, false, false],
  [false, true, false],
  [false, false, true],
  [false, true, true],
  [true, true, false],
  [true, false, true],
  [false, false, false],
];

Deno.test("fast batchNormReduceBackward = reference: dtypes, layouts, ranks 2-8, masks", () => {
  sweep((shape, dtype, layout, i) => reduceCase(shape, dtype, layout, i, MASKS[i % MASKS.length]));
});

Deno.test("fast batchNormBackward = reference: training/eval, masks, absent tensors", () => {
  sweep((shape, dtype, layout, i) => {
    backwardCase(shape, dtype, layout, i, { training: i % 2 === 0, mask: MASKS[i % 7] });
  });
});

Deno.test("fast batchNormElemtBackward = reference", () => {
  sweep((shape, dtype, layout, i) => elemtBackwardCase(shape, dtype, layout, i));
});

Deno.test("fast batchNormStats = reference (large channel means stay accurate)", () => {
  sweep((shape, dtype, layout, i) => statsCase(shape, dtype, layout, i));
});

Deno.test("fast batchNormElemt = reference", () => {
  sweep((shape, dtype, layout, i) => elemtCase(shape, dtype, layout, i));
});

Deno.test("fast batchNorm = reference: training and evaluation", () => {
  sweep((shape, dtype, layout, i) => batchNormCase(shape, dtype, layout, i, i % 3 !== 2));
});

Deno.test("fast groupNorm = reference: groups 1, 2, 3, 6", () => {
  sweep((shape, dtype, layout, i) => groupNormCase(shape, dtype, layout, i, [1, 2, 3, 6][i % 4]));
});

Deno.test("fast groupNormSilu / groupNormSwish = reference: groups, scales, activation off", () => {
  sweep((shape, dtype, layout, i) => {
    groupNormActCase(
      shape,
      dtype,
      layout,
      i,
      [1, 2, 3, 6][i % 4],
      [1, 0.5, -1.7, undefined][i % 4],
    );
  });
});

Deno.test("fast groupNormSilu: NaN and Inf propagate, large |g| saturate as CANN's formula", () => {
  for (const dtype of FLOATS) groupNormActCase([2, 6, 5, 4], dtype, "contiguous", 0, 3, 1, true);
});

Deno.test("fast groupNormBackward = reference: groups, masks", () => {
  sweep((shape, dtype, layout, i) => {
    groupNormBackwardCase(shape, dtype, layout, i, [2, 3, 6, 1][i % 4], { mask: MASKS[i % 7] });
  });
});

Deno.test("CPU kernels in place: gradInput over gradOut, output over input", () => {
  for (const dtype of FLOATS) {
    // [3, 6, 5, 4]: slab storage, pixels of a partial vector; [2, 8, 41, 41]: in the host
    // heap, so the WebAssembly kernels write in place, channels-last two pixels at a time
    // (an odd pixel count leaves one pixel to the single-pixel loop).
    const cases: [TestLayout, number[]][] = [
      ...LAYOUTS.map((l): [TestLayout, number[]] => [l, [3, 6, 5, 4]]),
      ["channelsLast", [2, 8, 41, 41]],
    ];
    for (const [layout, shape] of cases) {
      backwardCase(shape, dtype, layout, 0, {
        training: true,
        mask: [true, true, true],
        inPlace: true,
      });
      backwardCase(shape, dtype, layout, 1, {
        training: false,
        mask: [true, false, false],
        inPlace: true,
      });
      elemtBackwardCase(shape, dtype, layout, 2, true);
      elemtCase(shape, dtype, layout, 3, true);
      batchNormCase(shape, dtype, layout, 4, true, true);
      groupNormCase(shape, dtype, layout, 5, shape[1] === 6 ? 3 : 4, true);
      groupNormBackwardCase(shape, dtype, layout, 6, 2, { inPlace: true });
    }
  }
});

Deno.test("fast kernels on empty tensors match the reference (zero per-channel outputs)", () => {
  for (const dtype of FLOATS) {
    for (const shape of [[0, 6, 3], [4, 6, 0], [0, 6], [2, 6, 0, 3]]) {
      reduceCase(shape, dtype, "contiguous", 0, [true, true, true]);
      backwardCase(shape, dtype, "contiguous", 0, { training: true, mask: [true, true, true] });
      backwardCase(shape, dtype, "contiguous", 1, { training: false, mask: [true, true, true] });
      elemtBackwardCase(shape, dtype, "contiguous", 2);
      statsCase(shape, dtype, "contiguous", 0);
      elemtCase(shape, dtype, "contiguous", 0);
      batchNormCase(shape, dtype, "contiguous", 0, true);
      batchNormCase(shape, dtype, "contiguous", 1, false);
      groupNormCase(shape, dtype, "contiguous", 0, 3);
      groupNormBackwardCase(shape, dtype, "contiguous", 0, 2);
    }
  }
});

Deno.test("fast kernels: long rows, many items, pixel blocks and segments", () => {
  // Rows longer than a cached segment, channels with several row chunks, many pixel blocks.
  for (const dtype of FLOATS) {
    for (const layout of ["contiguous", "channelsLast", "strided"] as const) {
      const shape = layout === "strided" ? [3, 4, 50, 47] : [9, 4, 71, 67];
      reduceCase(shape, dtype, layout, 0, [true, true, true]);
      backwardCase(shape, dtype, layout, 0, { training: true, mask: [true, true, true] });
      statsCase(shape, dtype, layout, 1);
      batchNormCase(shape, dtype, layout, 0, true);
      groupNormCase(shape, dtype, layout, 0, 2);
      groupNormBackwardCase(shape, dtype, layout, 0, 4);
    }
    // Channels-last samples of two pixel segments (a full one and a short one), merged.
    const sample = [2, 4, 96, 96];
    groupNormCase(sample, dtype, "channelsLast", 0, 2);
  }
});

Deno.test("fast GroupNorm channels-last: per-sample blocks of pixels, a short last one", () => {
  const pixels = (N: number, inner: number, perSample = false): Layout => ({
    kind: "pixels",
    N,
    C: 4,
    inner,
    innerShape: [inner],
    perSample,
  });
  // 16640 pixels per sample in blocks of 8192: 8192, 8192 and a short 256, never across.
  const split = pixels(2, 128 * 130, true);
  assert.equal(blocksPerSample(split), 3);
  assert.equal(batchNormItems(split), 6);
  for (const dtype of FLOATS) {
    groupNormCase([2, 4, 128, 130], dtype, "channelsLast", 0, 2);
    groupNormCase([2, 4, 128, 130], dtype, "channelsLast", 2, 4);
    groupNormBackwardCase([2, 4, 128, 130], dtype, "channelsLast", 0, 2);
    groupNormBackwardCase([2, 4, 128, 130], dtype, "channelsLast", 1, 4, {
      mask: [false, true, true],
    });
  }
});

Deno.test("fast GroupNorm rows: items of (n, c) rows, a short last one, merged per group", () => {
  // [5, 6, 64, 64] with 3 groups: 30 rows of 4096, two per group of each sample, in items of
  // 8 rows (32768 elements): 4 items, the last of 6 rows, across samples.
  const layout: Layout = {
    kind: "rows",
    N: 5,
    C: 6,
    inner: 4096,
    innerShape: [4096],
    perSample: true,
  };
  assert.equal(batchNormItems(layout), 4);
  for (const dtype of FLOATS) {
    for (const layout of ["contiguous", "strided"] as const) {
      groupNormCase([5, 6, 64, 64], dtype, layout, 0, 3);
      groupNormBackwardCase([5, 6, 64, 64], dtype, layout, 0, 3);
    }
  }
});

Deno.test("fast groupNormBackward with gradOut of another shape (same elements)", () => {
  for (const dtype of FLOATS) {
    groupNormBackwardCase([2, 6, 5, 4], dtype, "contiguous", 0, 3, { flatDy: true });
    groupNormBackwardCase([2, 6, 5, 4], dtype, "channelsLast", 1, 3, { flatDy: true });
  }
});

Deno.test("fast kernels propagate NaN and Inf like the reference", () => {
  for (const dtype of FLOATS) {
    const shape = [2, 3, 4];
    const x = data(shape, dtype, "contiguous", 1);
    const v = x.toFloat64Array();
    v[3] = NaN;
    v[17] = Infinity;
    x.copy_(v);
    const set: TensorSet = {
      input: x,
      output: Tensor.zeros(shape, dtype),
      saveMean: Tensor.zeros([3]),
      saveInvstd: Tensor.zeros([3]),
    };
    const plan = { geometry: channelGeometry(shape), training: true, momentum: 0.1, eps: 1e-5 };
    compare(`batchNorm NaN ${dtype}`, set, (k, t) => k.batchNorm(plan, t as never));
    const gset: TensorSet = {
      input: x,
      output: Tensor.zeros(shape, dtype),
      mean: Tensor.zeros([2, 3], dtype),
      rstd: Tensor.zeros([2, 3], dtype),
    };
    const gplan = { N: 2, C: 3, HxW: 4, group: 3, eps: 1e-5 };
    compare(`groupNorm NaN ${dtype}`, gset, (k, t) => k.groupNorm(gplan, t as never));
  }
});

Deno.test("fast kernels on overlapping in/out views other than in-place (scratch output)", () => {
  // gradInput overlaps gradOut shifted by one element: only read-all-first is correct.
  const storage = Tensor.random([2 * 6 * 5 + 1], { seed: 3 }).storage as Float32Array;
  const dy = Tensor.fromData(storage, [2, 6, 5], { offset: 1 });
  const gi = Tensor.fromData(storage, [2, 6, 5], { offset: 0 });
  const set: TensorSet = {
    gradOut: dy,
    input: Tensor.random([2, 6, 5], { seed: 4 }),
    gradInput: gi,
  };
  const plan = {
    geometry: channelGeometry([2, 6, 5]),
    training: false,
    eps: 1e-5,
    mask: [true, false, false],
  };
  compare("overlap", set, (k, t) => k.batchNormBackward(plan as never, t as never));
});

// ---------------------------------------------------------------------------------------
// Worker pool

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

// ---------------------------------------------------------------------------------------
// bfloat16 rounding of the store loops

Deno.test("worker pool: jobs on memory the host heap grew into still reach the workers", async () => {
  // In a fresh process, so that the heap's size before it grows is known.
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
