/**
 * Which rows stages run their rows in one WebAssembly call per work item
 * (src/backends/cpu/kernels/channel_units.ts): rows taken in memory order (GroupNorm's
 * per-sample rows, BatchNorm's rows of MEMORY_ORDER_FROM_INNER elements or more) evenly spaced
 * in every tensor.
 * (Their values are the GroupNorm tests' (tests/ops/), against the float64 oracle, 1 thread =
 * 2 threads; the units kernels call the rows kernels' own bodies, one row at a time: the last
 * tests below hold each write to the per-row calls' bits.)
 */

import assert from "node:assert/strict";
import { batchNormBackward, type DType, Tensor } from "../../mod.ts";
import type { WasmExports } from "../../src/backends/cpu/kernels/wasm_instance.ts";
import { kernelsWasmBytes } from "../../src/backends/cpu/wasm/kernels_module.ts";
import { blockAt, instantiateWasm, slotAt, wasmReserve } from "../fixtures/wasm_memory.ts";
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
  // Items: runs of (n, c) rows of about 32768 elements; channel items otherwise: as many whole
  // channels as fit 32768 elements, or each channel's chunks of rows when one channel is larger.
  assert.equal(batchNormItems(long), 32 * 64 / (32768 / MEMORY_ORDER_FROM_INNER));
  const shortChannel = 32 * (MEMORY_ORDER_FROM_INNER - 1);
  assert.equal(batchNormItems(short), Math.ceil(64 / Math.floor(32768 / shortChannel)));
  const tall = rows(4096, 64, MEMORY_ORDER_FROM_INNER - 1);
  const chunkRows = Math.ceil(32768 / (MEMORY_ORDER_FROM_INNER - 1));
  assert.equal(batchNormItems(tall), 64 * Math.ceil(4096 / chunkRows));
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

Deno.test("channel units: every write but swishGrad's, and the reductions", () => {
  const layout = { kind: "rows", N: 2, C: 4, inner: 9, innerShape: [9], perSample: true };
  const at = { base: 0, strideN: 36, strideC: 9, strideI: 1, innerStrides: [1] };
  const fits = (op: string) =>
    unitsFit(
      { op, layout, xAt: at, dyAt: at, outAt: at } as unknown as Parameters<
        typeof unitsFit
      >[0],
    );
  for (const op of ["stats", "sums", "normalize", "gradient", "swish", "scale"]) {
    assert.equal(fits(op), true, op);
  }
  assert.equal(fits("swishGrad"), false);
});

/** The bits of a tensor (float32 or 16-bit elements). */
function bits(t: Tensor): number[] {
  const values = t.toArray();
  const view = new DataView(new ArrayBuffer(4));
  return values.map((v) => (view.setFloat32(0, v), view.getUint32(0)));
}

/**
 * `data` (N, C, ...) as a channel slice of a larger tensor: each sample padded by one channel,
 * so its (n, c) rows are not evenly spaced (strideN = (C + 1) * inner) and the stage runs one
 * call per row, where the dense tensor runs the units kernels.
 */
function paddedView(data: Tensor): Tensor {
  const [N, C, ...rest] = data.shape;
  const big = Tensor.random([N, C + 1, ...rest], { seed: 9, dtype: data.dtype });
  const view = big.slice(1, 0, C);
  view.copy_(data);
  return view;
}

for (const dtype of ["float32", "bfloat16"] as DType[]) {
  Deno.test(`channel units: batchNormBackward's scale write, ${dtype}, the per-row calls' bits`, () => {
    // Inference mode: gradInput = gradOut * weight * invstd, rows of 1024 elements (taken in
    // memory order).
    const shape = [3, 4, 32, 32];
    const gradOut = Tensor.random(shape, { seed: 4, dtype });
    const input = Tensor.random(shape, { seed: 5, dtype });
    const c = (seed: number) => Tensor.random([4], { seed, low: 0.5, high: 1.5 });
    const args = { weight: c(6), runningMean: c(7), runningVar: c(8), training: false, eps: 1e-5 };
    const dense = batchNormBackward({ gradOut, input, ...args });
    const padded = batchNormBackward({
      gradOut: paddedView(gradOut),
      input: paddedView(input),
      ...args,
    });
    assert.deepEqual(bits(dense.gradInput!), bits(padded.gradInput!));
  });
}

Deno.test("channel units: the swish and scale writes give the per-row calls' bits", () => {
  const w = instantiateWasm(kernelsWasmBytes())!;
  const [units, inner] = [6, 37];
  wasmReserve(w, units * inner, 4 * units);
  const k: WasmExports = w.exports;
  const x = blockAt(w, "x");
  const k64 = slotAt(w, 0);
  for (let i = 0; i < units * inner; i++) w.f32[x / 4 + i] = Math.sin(i * 0.7) * 9;
  // Row u's constants (mean, scale, shift, -swishScale) as float64 at k64 + 32u.
  for (let u = 0; u < units; u++) {
    w.f64.set([0.1 * u, 1.5 - 0.2 * u, 0.3 * u - 0.5, -1 - 0.1 * u], k64 / 8 + 4 * u);
  }
  const rowBytes = inner * 4;
  const perRow = (write: (u: number) => void) => {
    for (let u = 0; u < units; u++) write(u);
    return w.f32.slice(blockAt(w, "out2") / 4, blockAt(w, "out2") / 4 + units * inner);
  };
  const byUnits = (write: () => void) => {
    write();
    return w.f32.slice(blockAt(w, "out") / 4, blockAt(w, "out") / 4 + units * inner);
  };
  const c = (u: number, j: number) => w.f64[k64 / 8 + 4 * u + j];
  const row = (base: number, u: number) => base + u * rowBytes;
  const swishRows = perRow((u) =>
    k.bn_swish_rows(
      row(x, u),
      rowBytes,
      row(blockAt(w, "out2"), u),
      rowBytes,
      inner,
      0,
      1,
      c(u, 0),
      c(u, 1),
      c(u, 2),
      c(u, 3),
    )
  );
  const swishUnits = byUnits(() =>
    k.bn_swish_units(x, rowBytes, blockAt(w, "out"), rowBytes, inner, 0, units, k64)
  );
  assert.deepEqual(swishUnits, swishRows);
  assert.ok(swishRows.some((v, i) => v !== w.f32[x / 4 + i]), "the write changes the values");
  const scaleRows = perRow((u) =>
    k.bn_scale_rows(row(x, u), rowBytes, row(blockAt(w, "out2"), u), rowBytes, inner, 0, 1, c(u, 0))
  );
  const scaleUnits = byUnits(() =>
    k.bn_scale_units(x, rowBytes, blockAt(w, "out"), rowBytes, inner, 0, units, k64)
  );
  assert.deepEqual(scaleUnits, scaleRows);
  assert.notDeepEqual(scaleRows, swishRows);
});
