/**
 * The CPU backend's channel kernels at their edges, against the float64 oracle's kernels
 * (tests/oracle/kernels): in place (gradInput over gradOut, output over input), empty tensors
 * (zero per-channel outputs), long rows with many items, pixel blocks and segments, NaN and Inf,
 * and outputs overlapping their inputs other than in place.
 *
 * @module
 */

import { channelGeometry } from "../../src/backends/types.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { FLOATS, LAYOUTS, type TensorSet, type TestLayout } from "../fixtures/cpu_cases.ts";
import {
  backwardCase,
  batchNormCase,
  compare,
  data,
  elemtBackwardCase,
  elemtCase,
  groupNormBackwardCase,
  groupNormCase,
  reduceCase,
  statsCase,
} from "../fixtures/channel_kernel_cases.ts";

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
