/**
 * The CPU backend's GroupNorm channel kernels against the float64 oracle's kernels
 * (tests/oracle/kernels): groupNorm, groupNormSilu/groupNormSwish (and their NaN, Inf and
 * saturation), groupNormBackward (masks, a gradOut of another shape), every dtype, ranks 2-8,
 * every layout; channels-last samples in blocks of pixels and rows in items, each with a short
 * last one.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  batchNormItems,
  blocksPerSample,
  type Layout,
} from "../../src/backends/cpu/kernels/layout_types.ts";
import { FLOATS } from "../fixtures/cpu_cases.ts";
import {
  groupNormActCase,
  groupNormBackwardCase,
  groupNormCase,
  MASKS,
  sweep,
} from "../fixtures/channel_kernel_cases.ts";

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
