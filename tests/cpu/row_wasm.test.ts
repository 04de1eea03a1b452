/**
 * The WebAssembly row kernels of LayerNorm and RMSNorm (src/backends/cpu/wasm/row_norms.wat,
 * driven by src/backends/cpu/rows/heap_rows.ts) give the bits of the TypeScript row kernels
 * (row_loops.ts) on the same calls: every kernel and output, float32,
 * float16 and bfloat16, rows of 1 to 1027 elements (every tail length of the vectors and of
 * the eight sum chains, several work items), rows with a stride of their own and views at an
 * offset, with NaN, Inf, huge values and bfloat16/float16 rounding ties in the data.
 *
 * @module
 */

import assert from "node:assert/strict";
import { rowKernels } from "../../src/backends/cpu/rows/mod.ts";
import { rowAccess } from "../../src/backends/cpu/rows/access.ts";
import { heapRows, rowNormKernels } from "../../src/backends/cpu/rows/wasm_rows.ts";
import { layerNormHeap, rmsForwardHeap } from "../../src/backends/cpu/rows/heap_rows.ts";
import { moments8, rstd8 } from "../../src/backends/cpu/rows/sums.ts";
import {
  pooledJobCount,
  withCpuPolicy,
  workerItemCount,
} from "../../src/backends/cpu/pool/pool.ts";
import { cpuThreads, setCpuThreads, startCpuPool } from "../../src/backends/cpu/threads.ts";
import { rowGeometry } from "../../src/backends/types.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { heapStorage } from "../fixtures/cpu_cases.ts";

type Storage = Float32Array | Float16Array | Uint16Array;

/**
 * Byte-identical storages, except that NaN meets any NaN: when two NaNs meet in an addition
 * or multiplication, which one propagates (its sign and payload) depends on the operand
 * order the compiler chose, in V8's JavaScript and WebAssembly tiers alike (IEEE 754 leaves
 * it unspecified; tests/cpu/wasm_kernels.test.ts compares the BatchNorm kernels so too).
 */
function assertSameValues(actual: Tensor, expected: Tensor, message: string): void {
  const wide = actual.dtype === "float32";
  const view = (t: Tensor) => {
    const s = t.storage as Storage;
    return wide
      ? new Uint32Array(s.buffer, s.byteOffset, s.length)
      : new Uint16Array(s.buffer, s.byteOffset, s.length);
  };
  const [a, e] = [view(actual), view(expected)];
  const isNaN = (x: number) =>
    actual.dtype === "bfloat16"
      ? (x & 0x7f80) === 0x7f80 && (x & 0x7f) !== 0
      : actual.dtype === "float16"
      ? (x & 0x7c00) === 0x7c00 && (x & 0x3ff) !== 0
      : (x & 0x7f800000) === 0x7f800000 && (x & 0x7fffff) !== 0;
  assert.equal(a.length, e.length, `${message}: length`);
  for (let i = 0; i < a.length; i++) {
    if (a[i] === e[i] || (isNaN(a[i]) && isNaN(e[i]))) continue;
    assert.fail(`${message} [${i}]: ${a[i].toString(16)} vs ${e[i].toString(16)}`);
  }
}

/** A [rows, cols] view in the heap: at an offset, and with rows `pad` elements apart. */
function heapView(
  values: Float64Array,
  rows: number,
  cols: number,
  dtype: DType,
  pad: number,
  offset: number,
): Tensor {
  const stride = cols + pad;
  const base = Tensor.zeros([offset + rows * stride], dtype);
  const t = new Tensor(
    heapStorage(base.storage as Storage),
    dtype,
    [rows, cols],
    [stride, 1],
    offset,
  );
  t.copy_(values);
  return t;
}

/** Values in [-2, 3) with, when `special`, NaN, +-Inf, huge values and rounding ties. */
function data(n: number, seed: number, dtype: DType, special: boolean): Float64Array {
  let s = seed >>> 0;
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = -2 + 5 * (s / 2 ** 32);
  }
  if (special && n > 6) {
    out[1] = NaN;
    out[n - 2] = Infinity;
    out[Math.floor(n / 2)] = -Infinity;
    out[3] = dtype === "float16" ? 6e4 : 3e38;
    // A tie of the 16-bit formats (exact in float32): 1 + 2^-8, 1 + 2^-11.
    out[4] = dtype === "bfloat16" ? 1 + 2 ** -8 : 1 + 2 ** -11;
    out[5] = 2 ** -20; // a float16 subnormal
  }
  return out;
}

interface Case {
  rows: number;
  cols: number;
  dtype: DType;
  pad: number;
  offset: number;
  special: boolean;
}

/** Every output of the five kernels on `c`, with the WebAssembly kernels on or off. */
function runAll(c: Case, wasm: boolean): Record<string, Tensor> {
  return withCpuPolicy({ wasm }, () => runAllUnder(c, wasm));
}

/** {@linkcode runAll}'s body, under the policy it set. */
function runAllUnder(c: Case, wasm: boolean): Record<string, Tensor> {
  const { rows, cols, dtype, pad, offset, special } = c;
  const view = (seed: number, sp = special) =>
    heapView(data(rows * cols, seed, dtype, sp), rows, cols, dtype, pad, offset);
  const x = view(1);
  const dyValues = data(rows * cols, 2, dtype, false);
  const dy = heapView(dyValues, rows, cols, dtype, pad, offset);
  const out = () => view(99, false);
  const w = Tensor.fromArray(data(cols, 3, "float32", false), [cols]);
  const b = Tensor.fromArray(data(cols, 4, "float32", false), [cols], dtype);
  const g = rowGeometry([rows, cols], 1);
  if (wasm) {
    assert.ok(rowNormKernels(), "the row kernels instantiate on the heap");
    assert.ok(heapRows(x, rowAccess(x, 1)), "the inputs are heap rows");
  }
  const normalizedShape = [cols];
  const output = out();
  const mean = Tensor.zeros([rows]);
  const rstd = Tensor.zeros([rows]);
  rowKernels.layerNorm({ geometry: g, normalizedShape, eps: 1e-5 }, {
    input: x,
    weight: w,
    bias: b,
    output,
    mean,
    rstd,
  });
  const res: Record<string, Tensor> = { output, mean, rstd };
  const masks: [boolean, boolean, boolean][] = [[true, true, true], [true, false, false], [
    false,
    true,
    true,
  ]];
  masks.forEach((mask, m) => {
    const [gi, gw, gb] = [out(), Tensor.zeros([cols]), Tensor.zeros([cols])];
    rowKernels.layerNormBackward({ geometry: g, normalizedShape, mask }, {
      gradOut: dy,
      input: x,
      mean,
      rstd,
      weight: m === 1 ? undefined : w,
      gradInput: gi,
      gradWeight: gw,
      gradBias: gb,
    });
    Object.assign(res, { [`gi${m}`]: gi, [`gw${m}`]: gw, [`gb${m}`]: gb });
  });
  // gradOut = input with unit weights: gradInput is (nearly) zero, all cancellation, so it
  // shows any other rounding of the row sums S1 and S2.
  const noise = out();
  rowKernels.layerNormBackward({ geometry: g, normalizedShape, mask: [true, false, false] }, {
    gradOut: x,
    input: x,
    mean,
    rstd,
    gradInput: noise,
  });
  res.noise = noise;
  const [y, rs] = [out(), Tensor.zeros([rows])];
  rowKernels.rmsNorm({ geometry: g, epsilon: 1e-6 }, { x, gamma: w, y, rstd: rs });
  const [dx, dg] = [out(), Tensor.zeros([cols])];
  rowKernels.rmsNormGrad({ geometry: g }, { dy, x, rstd: rs, gamma: w, dx, dgamma: dg });
  // dy = x with unit gamma: dx is (nearly) zero, all cancellation (the sum S shows).
  const [dxn, dgn, ones] = [out(), Tensor.zeros([cols]), Tensor.ones([cols])];
  rowKernels.rmsNormGrad({ geometry: g }, {
    dy: x,
    x,
    rstd: rs,
    gamma: ones,
    dx: dxn,
    dgamma: dgn,
  });
  res.dxn = dxn;
  const [ay, ar, ax] = [out(), Tensor.zeros([rows]), out()];
  rowKernels.addRmsNorm({ geometry: g, epsilon: 1e-6 }, {
    x1: x,
    x2: dy,
    gamma: b,
    y: ay,
    rstd: ar,
    x: ax,
  });
  return { ...res, y, rs, dx, dg, ay, ar, ax };
}

const COLS = [1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 31, 33, 64, 100, 1027];

Deno.test("WebAssembly row kernels give the TypeScript row kernels' bits", () => {
  {
    let cases = 0;
    for (const dtype of ["float32", "float16", "bfloat16"] as const) {
      for (const cols of COLS) {
        const rows = cols === 1027 ? 67 : cols % 3 === 0 ? 5 : 3; // 1027: five work items of 16 rows
        for (
          const [pad, offset, special] of [[0, 0, false], [3, 5, true], [0, 1, true]] as const
        ) {
          const c = { rows, cols, dtype, pad, offset, special };
          const ts = runAll(c, false);
          const wasm = runAll(c, true);
          for (const [name, t] of Object.entries(wasm)) {
            assertSameValues(
              t,
              ts[name],
              `${dtype} [${rows},${cols}] pad ${pad} off ${offset} ${name}`,
            );
          }
          cases++;
        }
      }
    }
    assert.equal(cases, 3 * COLS.length * 3);
  }
});

Deno.test("WebAssembly row kernels write no element outside their rows", () => {
  withCpuPolicy({ wasm: true }, () => {
    for (const dtype of ["float32", "bfloat16"] as const) {
      for (const cols of [1, 3, 5, 6, 7, 13]) {
        // Rows 2 elements apart from each other's end: the gaps must keep their sentinel.
        const rows = 4;
        const x = heapView(data(rows * cols, 7, dtype, false), rows, cols, dtype, 2, 1);
        const y = heapView(data(rows * cols, 8, dtype, false), rows, cols, dtype, 2, 1);
        const ys = y.storage as Storage;
        // 1234 everywhere: RMSNorm with unit gamma gives |y| <= sqrt(cols) in the rows.
        new Tensor(ys, dtype, [ys.length]).copy_(new Float64Array(ys.length).fill(1234));
        const sentinel = ys.slice();
        const g = rowGeometry([rows, cols], 1);
        rowKernels.rmsNorm({ geometry: g, epsilon: 1e-6 }, {
          x,
          gamma: Tensor.ones([cols]),
          y,
          rstd: Tensor.zeros([rows]),
        });
        for (let i = 0; i < ys.length; i++) {
          const inRow = i >= 1 && (i - 1) % (cols + 2) < cols && i < 1 + rows * (cols + 2);
          if (!inRow) assert.equal(ys[i], sentinel[i], `${dtype} cols ${cols}: element ${i}`);
          else assert.notEqual(ys[i], sentinel[i], `${dtype} cols ${cols}: element ${i} written`);
        }
      }
    }
  });
});

Deno.test("WebAssembly row statistics equal sums.ts's in float64, bit for bit", () => {
  withCpuPolicy({ wasm: true }, () => {
    for (const dtype of ["float32", "float16", "bfloat16"] as const) {
      for (const cols of COLS) {
        const rows = 3;
        const values = data(rows * cols, 11, dtype, false);
        // A spread of magnitudes, so that another association of the sums rounds otherwise.
        for (let i = 0; i < values.length; i += 5) values[i] *= dtype === "float16" ? 300 : 2 ** 40;
        const x = heapView(values, rows, cols, dtype, 1, 2);
        const y = heapView(values, rows, cols, dtype, 1, 2);
        const stored = x.contiguous().toFloat64Array();
        const ones = new Float64Array(cols).fill(1);
        const zeros = new Float64Array(cols);
        const ax = heapRows(x, rowAccess(x, 1));
        const ay = heapRows(y, rowAccess(y, 1));
        const stats = layerNormHeap(x, [ax, ay], rows, cols, 1e-5, ones, zeros);
        assert.ok(stats, "the WebAssembly kernels ran");
        const mean = stats.mean.slice();
        const rstd = stats.rstd.slice();
        const rms = rmsForwardHeap("rmsNormRows", x, [ax, ay], rows, cols, 1e-6, ones)!.slice();
        const m = new Float64Array(2);
        for (let r = 0; r < rows; r++) {
          moments8(stored, r * cols, cols, 1e-5, m);
          assert.ok(Object.is(mean[r], m[0]), `${dtype} ${cols} mean ${mean[r]} vs ${m[0]}`);
          assert.ok(Object.is(rstd[r], m[1]), `${dtype} ${cols} rstd ${rstd[r]} vs ${m[1]}`);
          const want = rstd8(stored, r * cols, cols, 1e-6);
          assert.ok(Object.is(rms[r], want), `${dtype} ${cols} rms rstd ${rms[r]} vs ${want}`);
        }
      }
    }
  });
});

Deno.test("row norms on the worker pool give the bits of one thread's TypeScript kernels", async () => {
  const threads = cpuThreads();
  const workerItems = workerItemCount();
  try {
    for (const dtype of ["float32", "float16", "bfloat16"] as const) {
      // Several work items each (5 of 63 rows of 1027, 4 of 375 rows of 69), from 64K elements.
      for (const [rows, cols] of [[300, 1027], [1500, 69]]) {
        const c = { rows, cols, dtype, pad: 3, offset: 1, special: true };
        setCpuThreads(1);
        const alone = runAll(c, false);
        setCpuThreads(2);
        await startCpuPool();
        // This checks the pooled runs themselves.
        const { jobs, pooled } = withCpuPolicy({ pool: "always" }, () => {
          const jobs = pooledJobCount();
          // Under the default kernels (WebAssembly on): runAll's policy would retire the pool.
          return { jobs, pooled: runAllUnder(c, true) };
        });
        // Nine calls: layerNorm, four layerNormBackward, rmsNorm, two rmsNormGrad, addRmsNorm.
        assert.equal(pooledJobCount() - jobs, 9, `${dtype} [${rows},${cols}] ran on the pool`);
        for (const [name, t] of Object.entries(pooled)) {
          assertSameValues(t, alone[name], `${dtype} [${rows},${cols}] pooled ${name}`);
        }
      }
    }
    assert.ok(workerItemCount() > workerItems, "workers ran items");
  } finally {
    setCpuThreads(threads);
  }
});
