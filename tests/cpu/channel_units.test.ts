/**
 * Which rows stages run their rows in one WebAssembly call per work item
 * (src/backends/cpu/kernels/channel_units.ts): rows taken in memory order (GroupNorm's
 * per-sample rows, BatchNorm's rows of MEMORY_ORDER_FROM_INNER elements or more) evenly spaced
 * in every tensor.
 * (Their values are the GroupNorm tests' (tests/ops/), against the float64 oracle, 1 thread =
 * 2 threads; the units kernels call the rows kernels' own bodies, one row at a time.)
 */

import assert from "node:assert/strict";
import { unitsFit } from "../../src/backends/cpu/kernels/channel_units.ts";
import {
  batchNormItems,
  MEMORY_ORDER_FROM_INNER,
  rowsInMemoryOrder,
} from "../../src/backends/cpu/kernels/layout_types.ts";

Deno.test("channel units: evenly spaced per-sample rows only", () => {
  const layout = {
    kind: "rows",
    N: 3,
    C: 8,
    inner: 35,
    innerShape: [35],
    perSample: true,
  } as const;
  const at = (strideN: number) => ({
    base: 0,
    strideN,
    strideC: 35,
    strideI: 1,
    innerStrides: [1],
  });
  const stage = (strideN: number) =>
    ({
      op: "stats",
      layout,
      xAt: at(strideN),
      dyAt: at(strideN),
      outAt: at(strideN),
    }) as unknown as Parameters<typeof unitsFit>[0];
  assert.equal(unitsFit(stage(8 * 35)), true);
  // A sample padded after its rows: one call per row.
  assert.equal(unitsFit(stage(9 * 35)), false);
  // BatchNorm's short rows (not per sample): channel items, one call per item.
  const batchNorm = { ...stage(8 * 35), layout: { ...layout, perSample: false } };
  assert.equal(unitsFit(batchNorm as Parameters<typeof unitsFit>[0]), false);
});

Deno.test("channel units: BatchNorm's long rows go in memory order, one pair of partials a row", () => {
  const rows = (N: number, C: number, inner: number) =>
    ({ kind: "rows", N, C, inner, innerShape: [inner], perSample: false }) as const;
  const long = rows(32, 64, MEMORY_ORDER_FROM_INNER);
  const short = rows(32, 64, MEMORY_ORDER_FROM_INNER - 1);
  assert.equal(rowsInMemoryOrder(long), true);
  assert.equal(rowsInMemoryOrder(short), false);
  // Items: runs of (n, c) rows of about 32768 elements; channel items otherwise (C per chunk).
  assert.equal(batchNormItems(long), 32 * 64 / (32768 / MEMORY_ORDER_FROM_INNER));
  assert.equal(batchNormItems(short), 64 * Math.ceil(32 / Math.ceil(32768 / 1023)));
  const at = (inner: number) => ({
    base: 0,
    strideN: 64 * inner,
    strideC: inner,
    strideI: 1,
    innerStrides: [1],
  });
  const stage = (layout: typeof long | typeof short) =>
    ({
      op: "sums",
      layout,
      xAt: at(layout.inner),
      dyAt: at(layout.inner),
      outAt: at(layout.inner),
    }) as unknown as Parameters<typeof unitsFit>[0];
  assert.equal(unitsFit(stage(long)), true);
  assert.equal(unitsFit(stage(short)), false);
});
