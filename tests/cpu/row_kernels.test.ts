/**
 * The CPU backend's row kernels (src/backends/cpu/rows, src/backends/cpu/wasm/row_norms*.wat):
 * the seven operators against the float64 oracle's kernels (tests/oracle/kernels) within the
 * bound of their float32 arithmetic (tests/helpers/tolerance.ts F32_ARITHMETIC), for every
 * tail length of the vectors and of the sums' blocks, float32/float16/bfloat16, rows in the host
 * heap, at an offset with rows of their own stride, outside the heap and strided; the same bits
 * wherever the tensors live (staged or in place) and for one or two threads; no write outside
 * the rows; and CANN's values for infinite data and for eps, which the kernel receives as a
 * float.
 *
 * @module
 */

import assert from "node:assert/strict";
import { itemCount, rowsPerItem } from "../../src/backends/cpu/rows/items.ts";
import { rowKernels } from "../../src/backends/cpu/rows/mod.ts";
import { heapRowsOf } from "../../src/backends/cpu/rows/row_staging.ts";
import {
  pooledJobCount,
  withCpuPolicy,
  workerItemCount,
} from "../../src/backends/cpu/pool/pool.ts";
import { cpuThreads, setCpuThreads, startCpuPool } from "../../src/backends/cpu/threads.ts";
import { rowGeometry } from "../../src/backends/types.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { referenceKernels } from "../oracle/kernels/mod.ts";
import { heapStorage } from "../fixtures/cpu_cases.ts";
import { assertClose } from "../helpers/assert.ts";
import { F32_ARITHMETIC } from "../helpers/tolerance.ts";

type Storage = Float32Array | Float16Array | Uint16Array;

/** Where a case's tensors live. */
type Place = "heap" | "heap strided" | "outside" | "transposed";

interface Case {
  rows: number;
  cols: number;
  dtype: DType;
  place: Place;
}

/** Values in [-2, 3) from a fixed linear congruential sequence. */
function data(n: number, seed: number): Float64Array {
  let s = seed >>> 0;
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = -2 + 5 * (s / 2 ** 32);
  }
  return out;
}

/** A [rows, cols] tensor holding `values`, placed as `place` says. */
function placed(values: Float64Array, rows: number, cols: number, dtype: DType, place: Place) {
  if (place === "transposed") {
    return Tensor.fromArray(values, [rows, cols], dtype).transpose(0, 1).contiguous()
      .transpose(0, 1);
  }
  if (place === "outside") {
    // Storage on an ArrayBuffer of its own: never in the heap.
    const n = rows * cols;
    const storage = dtype === "float32"
      ? new Float32Array(n)
      : dtype === "float16"
      ? new Float16Array(n)
      : new Uint16Array(n);
    return Tensor.fromData(storage, [rows, cols]).copy_(values);
  }
  const [pad, offset] = place === "heap" ? [0, 0] : [3, 5];
  const stride = cols + pad;
  const base = Tensor.zeros([offset + rows * stride + 8], dtype);
  const t = new Tensor(
    heapStorage(base.storage as Storage),
    dtype,
    [rows, cols],
    [stride, 1],
    offset,
  );
  return t.copy_(values);
}

/** Every output of the seven kernels of `k` on case `c`. */
function runAll(
  k: typeof rowKernels | typeof referenceKernels,
  c: Case,
): Record<string, Tensor> {
  const { rows, cols, dtype, place } = c;
  const view = (seed: number) => placed(data(rows * cols, seed), rows, cols, dtype, place);
  const x = view(1);
  const dy = view(2);
  const out = () => view(99);
  const w = Tensor.fromArray(data(cols, 3), [cols]);
  const b = Tensor.fromArray(data(cols, 4), [cols], dtype);
  const g = rowGeometry([rows, cols], 1);
  const normalizedShape = [cols];
  const [output, mean, rstd] = [out(), Tensor.zeros([rows]), Tensor.zeros([rows])];
  k.layerNorm({ geometry: g, normalizedShape, eps: 1e-5 }, {
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
    k.layerNormBackward({ geometry: g, normalizedShape, mask }, {
      gradOut: dy,
      input: x,
      mean,
      rstd,
      weight: m === 1 ? undefined : w,
      gradInput: gi,
      gradWeight: gw,
      gradBias: gb,
    });
    if (mask[0]) res[`gi${m}`] = gi;
    if (mask[1]) Object.assign(res, { [`gw${m}`]: gw, [`gb${m}`]: gb });
  });
  const [y, rs] = [out(), Tensor.zeros([rows])];
  k.rmsNorm({ geometry: g, epsilon: 1e-6 }, { x, gamma: w, y, rstd: rs });
  const [dx, dg] = [out(), Tensor.zeros([cols])];
  k.rmsNormGrad({ geometry: g }, { dy, x, rstd: rs, gamma: w, dx, dgamma: dg });
  const [ay, ar, ax] = [out(), Tensor.zeros([rows]), out()];
  k.addRmsNorm({ geometry: g, epsilon: 1e-6 }, { x1: x, x2: dy, gamma: b, y: ay, rstd: ar, x: ax });
  // GemmaRmsNorm with a gamma of the data's dtype and with a float32 one.
  const [gy, gr, gy32, gr32] = [out(), Tensor.zeros([rows]), out(), Tensor.zeros([rows])];
  k.gemmaRmsNorm({ geometry: g, epsilon: 1e-6 }, { x, gamma: b, y: gy, rstd: gr });
  k.gemmaRmsNorm({ geometry: g, epsilon: 1e-6 }, { x, gamma: w, y: gy32, rstd: gr32 });
  // InplaceAddRmsNorm: y over x1Ref, x over x2Ref (fresh copies of x and dy, placed alike).
  const [i1, i2, ir] = [view(1), view(2), Tensor.zeros([rows])];
  k.inplaceAddRmsNorm({ geometry: g, epsilon: 1e-6 }, { x1Ref: i1, x2Ref: i2, gamma: b, rstd: ir });
  return { ...res, y, rs, dx, dg, ay, ar, ax, gy, gr, gy32, gr32, i1, i2, ir };
}

/** Byte-identical storages of two views of one shape, read in logical order. */
function assertSameBits(actual: Tensor, expected: Tensor, message: string): void {
  const bits = (t: Tensor) => {
    const c = t.contiguous();
    const s = c.storage as Storage;
    return c.dtype === "float32"
      ? new Uint32Array(s.buffer, s.byteOffset, c.numel)
      : new Uint16Array(s.buffer, s.byteOffset, c.numel);
  };
  const [a, e] = [bits(actual), bits(expected)];
  assert.equal(a.length, e.length, `${message}: length`);
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== e[i]) {
      assert.fail(`${message} [${i}]: ${a[i].toString(16)} vs ${e[i].toString(16)}`);
    }
  }
}

// Every tail of a vector (n mod 4) and of a 16-element step, a block boundary of the forward
// sums (1024) and of the backward ones (256), and several work items (1027 x 67).
const COLS = [1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 33, 100, 257, 1027, 2051];

Deno.test("row items depend on the shape only, and cover every row", () => {
  assert.equal(rowsPerItem(2048, 1024), 64);
  assert.equal(rowsPerItem(64, 1024), 16); // a quarter of a call under 2^18 elements
  assert.equal(rowsPerItem(4, 1024), 8); // at least 2^13 elements
  assert.equal(itemCount(64, 1024), 4);
  assert.equal(rowsPerItem(3, 1 << 20), 1);
  assert.equal(itemCount(2048, 1024), 32);
  assert.equal(itemCount(0, 16), 0);
});

Deno.test("row kernels hold their float32 bound of the float64 oracle (dtypes, tails, places)", () => {
  let cases = 0;
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    for (const cols of COLS) {
      const rows = cols === 1027 ? 67 : cols % 3 === 0 ? 5 : 3;
      for (const place of ["heap", "heap strided", "outside"] as const) {
        const c = { rows, cols, dtype, place };
        const got = runAll(rowKernels, c);
        const want = runAll(referenceKernels, c);
        for (const [name, t] of Object.entries(got)) {
          assertClose(
            t,
            want[name],
            F32_ARITHMETIC[t.dtype],
            `${dtype} [${rows},${cols}] ${place} ${name}`,
          );
        }
        cases++;
      }
    }
  }
  assert.equal(cases, 3 * COLS.length * 3);
});

Deno.test("row kernels give the same bits wherever the tensors live (in place or staged)", () => {
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    for (const cols of [5, 33, 1027]) {
      const rows = 7;
      const inPlace = runAll(rowKernels, { rows, cols, dtype, place: "heap" });
      assert.ok(
        heapRowsOf(placed(data(4, 1), 2, 2, dtype, "heap"), 1, dtype),
        "the in-place case is heap rows",
      );
      for (const place of ["heap strided", "outside", "transposed"] as const) {
        const other = runAll(rowKernels, { rows, cols, dtype, place });
        for (const [name, t] of Object.entries(other)) {
          assertSameBits(t, inPlace[name], `${dtype} [${rows},${cols}] ${place} ${name}`);
        }
      }
    }
  }
});

Deno.test("LayerNorm forms y in the input's dtype before a wider output takes it", () => {
  const [rows, cols] = [4, 37];
  const x = Tensor.random([rows, cols], { seed: 5, dtype: "float16", low: -3, high: 4 });
  const g = rowGeometry([rows, cols], 1);
  const run = (dtype: DType) => {
    const output = Tensor.zeros([rows, cols], dtype);
    rowKernels.layerNorm({ geometry: g, normalizedShape: [cols], eps: 1e-5 }, {
      input: x,
      output,
      mean: Tensor.zeros([rows]),
      rstd: Tensor.zeros([rows]),
    });
    return output.toFloat64Array();
  };
  const wide = run("float32");
  assert.deepEqual([...wide], [...run("float16")], "float16 values, widened exactly");
});

Deno.test("row kernels write no element outside their rows", () => {
  for (const dtype of ["float32", "bfloat16"] as const) {
    for (const cols of [1, 3, 5, 6, 7, 13]) {
      // Rows 3 elements apart from each other's end: the gaps must keep their sentinel.
      const rows = 4;
      const x = placed(data(rows * cols, 7), rows, cols, dtype, "heap strided");
      const y = placed(data(rows * cols, 8), rows, cols, dtype, "heap strided");
      const ys = y.storage as Storage;
      // 1234 everywhere: RMSNorm with unit gamma gives |y| <= sqrt(cols) in the rows.
      new Tensor(ys, dtype, [ys.length]).copy_(new Float64Array(ys.length).fill(1234));
      const sentinel = ys.slice();
      rowKernels.rmsNorm({ geometry: rowGeometry([rows, cols], 1), epsilon: 1e-6 }, {
        x,
        gamma: Tensor.ones([cols]),
        y,
        rstd: Tensor.zeros([rows]),
      });
      for (let i = 0; i < ys.length; i++) {
        const inRow = i >= 5 && (i - 5) % (cols + 3) < cols && i < 5 + rows * (cols + 3);
        if (!inRow) assert.equal(ys[i], sentinel[i], `${dtype} cols ${cols}: element ${i}`);
        else assert.notEqual(ys[i], sentinel[i], `${dtype} cols ${cols}: element ${i} written`);
      }
    }
  }
});

Deno.test("LayerNorm of a row that holds +-Inf: mean +-Inf (CANN's sum), rstd and y NaN", () => {
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    for (const [first, cols] of [[Infinity, 8], [-Infinity, 9], [Infinity, 1]] as const) {
      const values = Array.from({ length: cols }, (_, i) => (i === 0 ? first : i));
      const x = Tensor.fromArray(values, [1, cols], dtype);
      const [y, mean, rstd] = [
        Tensor.zeros([1, cols], dtype),
        Tensor.zeros([1]),
        Tensor.zeros([1]),
      ];
      rowKernels.layerNorm({
        geometry: rowGeometry([1, cols], 1),
        normalizedShape: [cols],
        eps: 1e-5,
      }, {
        input: x,
        output: y,
        mean,
        rstd,
      });
      assert.equal(mean.item(), first, `${dtype} ${first} x${cols}: mean`);
      assert.ok(Number.isNaN(rstd.item()), `${dtype} ${first} x${cols}: rstd ${rstd.item()}`);
      assert.ok(y.toFloat64Array().every(Number.isNaN), `${dtype} ${first} x${cols}: y`);
    }
  }
});

Deno.test("RMSNorm of a row that holds +-Inf: rstd 0, y NaN there and 0 beside it; the next row's y", () => {
  // rstd = 1/sqrt(Inf) = 0, so y = x * 0: NaN at the Inf, zeros elsewhere. A float16 row loaded
  // as finite (kernels.wat $load_code: only when its sum of squares is) would read the Inf as
  // 65536 and write 0 there.
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    for (
      const [inf, cols, at] of [[Infinity, 16, 3], [-Infinity, 9, 8], [Infinity, 1, 0]] as const
    ) {
      const values = Array.from(
        { length: 2 * cols },
        (_, i) => (i === cols + at ? inf : i % 7 - 3),
      );
      const x = Tensor.fromArray(values, [2, cols], dtype);
      const [y, rstd] = [Tensor.zeros([2, cols], dtype), Tensor.zeros([2])];
      rowKernels.rmsNorm({ geometry: rowGeometry([2, cols], 1), epsilon: 1e-5 }, {
        x,
        gamma: Tensor.ones([cols]),
        y,
        rstd,
      });
      const what = `${dtype} ${inf} x${cols}`;
      const xs = x.toFloat64Array();
      const ys = y.toFloat64Array();
      const [r0, r1] = rstd.toFloat64Array();
      const squares = xs.slice(0, cols).reduce((s, v) => s + v * v, 0);
      const want0 = 1 / Math.sqrt(squares / cols + Math.fround(1e-5));
      assert.ok(Math.abs(r0 - want0) <= 4e-7 * want0, `${what}: finite row's rstd ${r0}`);
      assert.equal(r1, 0, `${what}: rstd of the row with the Inf`);
      for (let j = 0; j < cols; j++) {
        const tolerance = dtype === "float32" ? 1e-6 : dtype === "float16" ? 2e-3 : 1.6e-2;
        assert.ok(
          Math.abs(ys[j] - xs[j] * want0) <= tolerance * Math.abs(xs[j] * want0) + 1e-30,
          `${what}: y[0, ${j}] ${ys[j]}`,
        );
        if (j === at) {
          assert.ok(Number.isNaN(ys[cols + j]), `${what}: y at the Inf ${ys[cols + j]}`);
        } else assert.equal(Math.abs(ys[cols + j]), 0, `${what}: y[1, ${j}]`);
      }
    }
  }
});

Deno.test("row kernels take eps as the float CANN's kernels receive", () => {
  // A constant row: variance 0, so rstd = 1/sqrt(eps) shows how eps was passed.
  const x = Tensor.full([2, 8], 0.5);
  const g = rowGeometry([2, 8], 1);
  for (const eps of [0.3, 1e-5, 1e-7]) {
    const rstd = Tensor.zeros([2]);
    rowKernels.layerNorm({ geometry: g, normalizedShape: [8], eps }, {
      input: x,
      output: Tensor.zeros([2, 8]),
      mean: Tensor.zeros([2]),
      rstd,
    });
    const want = Math.fround(1 / Math.sqrt(Math.fround(eps)));
    assert.deepEqual([...rstd.toFloat64Array()], [want, want], `LayerNorm eps ${eps}`);
    const rms = Tensor.zeros([2]);
    rowKernels.rmsNorm({ geometry: g, epsilon: eps }, {
      x: Tensor.zeros([2, 8]),
      gamma: Tensor.ones([8]),
      y: Tensor.zeros([2, 8]),
      rstd: rms,
    });
    assert.deepEqual([...rms.toFloat64Array()], [want, want], `RMSNorm eps ${eps}`);
  }
  // eps = 0.3: 1/sqrt(0.3) rounds to 1.8257419; CANN's float 0.3 (0.30000001) gives 1.8257418.
  assert.equal(Math.fround(1 / Math.sqrt(Math.fround(0.3))), Math.fround(1.8257418));
  assert.notEqual(Math.fround(1 / Math.sqrt(0.3)), Math.fround(1.8257418));
});

Deno.test("row norms give the same bits on the worker pool as on one thread", async () => {
  const threads = cpuThreads();
  const workerItems = workerItemCount();
  try {
    for (const dtype of ["float32", "float16", "bfloat16"] as const) {
      // Several work items each (5 of 63 rows of 1027, 4 of 375 rows of 69), from 64K elements.
      for (const [rows, cols] of [[300, 1027], [1500, 69]]) {
        const c = { rows, cols, dtype, place: "heap strided" as const };
        setCpuThreads(1);
        const alone = runAll(rowKernels, c);
        setCpuThreads(2);
        await startCpuPool();
        const { jobs, pooled } = withCpuPolicy({ pool: "always" }, () => {
          const jobs = pooledJobCount();
          return { jobs, pooled: runAll(rowKernels, c) };
        });
        // Eleven calls: layerNorm, three layerNormBackward, rmsNorm, rmsNormGrad, addRmsNorm, two
        // gemmaRmsNorm, inplaceAddRmsNorm (2 items+).
        assert.ok(pooledJobCount() - jobs >= 9, `${dtype} [${rows},${cols}] ran on the pool`);
        for (const [name, t] of Object.entries(pooled)) {
          assertSameBits(t, alone[name], `${dtype} [${rows},${cols}] pooled ${name}`);
        }
      }
    }
    assert.ok(workerItemCount() > workerItems, "workers ran items");
  } finally {
    setCpuThreads(threads);
  }
});
