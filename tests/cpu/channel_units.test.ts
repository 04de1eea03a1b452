/**
 * Which GroupNorm stages run their rows in one WebAssembly call per work item
 * (src/backends/cpu/kernels/channel_units.ts): per-sample rows evenly spaced in every tensor.
 * (Their values are the GroupNorm tests' (tests/ops/), against the float64 oracle, 1 thread =
 * 2 threads; the units kernels call the rows kernels' own bodies, one row at a time.)
 */

import assert from "node:assert/strict";
import { unitsFit } from "../../src/backends/cpu/kernels/channel_units.ts";

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
  // BatchNorm's rows (not per sample) never.
  const batchNorm = { ...stage(8 * 35), layout: { ...layout, perSample: false } };
  assert.equal(unitsFit(batchNorm as Parameters<typeof unitsFit>[0]), false);
});
