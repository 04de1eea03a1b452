/**
 * The CPU backend's row kernels (src/backends/cpu/rows): row access over every layout (unit
 * stride, one stride, per-element offsets, leading dims that need the multi-index), decoding
 * and one correctly rounded store per dtype (the bfloat16 tie and Inf/NaN patterns included),
 * and the five kernels against the float64 oracle kernels (tests/oracle/kernels) on the same calls,
 * within the rounding of their outputs.
 *
 * @module
 */

import assert from "node:assert/strict";
import { loadRow, rowAccess, storeRow } from "../../src/backends/cpu/rows/access.ts";
import { itemCount, rowsPerItem } from "../../src/backends/cpu/rows/items.ts";
import { rowKernels } from "../../src/backends/cpu/rows/mod.ts";
import { referenceKernels } from "../oracle/kernels/mod.ts";
import { rowGeometry } from "../../src/backends/types.ts";
import { bf16ToNumber, type DType, numberToBf16 } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { ROUNDING_ONLY } from "../helpers/tolerance.ts";

const LAYOUTS: { name: string; make: (dtype: DType) => Tensor; axis: number }[] = [
  { name: "contiguous", make: (d) => Tensor.random([3, 4, 5], { seed: 1, dtype: d }), axis: 2 },
  {
    name: "transposed (one stride)",
    make: (d) => Tensor.random([5, 6], { seed: 2, dtype: d }).transpose(0, 1),
    axis: 1,
  },
  {
    name: "crossed strides (offsets)",
    make: (d) => Tensor.random([2, 4, 3], { seed: 3, dtype: d }).permute([0, 2, 1]),
    axis: 1,
  },
  {
    name: "sliced leading dims (multi-index)",
    make: (d) => Tensor.random([4, 5, 6], { seed: 4, dtype: d }).slice(1, 1, 4),
    axis: 2,
  },
];

Deno.test("row access: every layout and dtype decodes and stores rows in logical order", () => {
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    for (const l of LAYOUTS) {
      const t = l.make(dtype);
      const g = rowGeometry(t.shape, l.axis);
      const a = rowAccess(t, l.axis);
      const all = t.toFloat64Array();
      const row = new Float64Array(g.cols);
      for (let r = 0; r < g.rows; r++) {
        loadRow(a, r, row, g.cols);
        assert.deepEqual([...row], [...all.subarray(r * g.cols, (r + 1) * g.cols)], `${l.name}`);
      }
      // Store each row negated, then read the whole view back.
      for (let r = 0; r < g.rows; r++) {
        for (let i = 0; i < g.cols; i++) row[i] = -all[r * g.cols + i];
        storeRow(a, r, row, g.cols);
      }
      assert.deepEqual([...t.toFloat64Array()], [...all].map((v) => -v), `${dtype} ${l.name}`);
    }
  }
});

Deno.test("row access: bfloat16 stores round once to nearest even (ties, Inf, NaN)", () => {
  // 1 + 2^-8 + 2^-30 rounds to float32 1 + 2^-8, a bfloat16 tie: a second rounding of the
  // float32 would give 1 (even); the exact value is above the tie and rounds up.
  const values = [
    1 + 2 ** -8 + 2 ** -30,
    1 + 2 ** -8,
    1 + 3 * 2 ** -8,
    -(1 + 2 ** -8 + 2 ** -30),
    3.4e38,
    Infinity,
    -Infinity,
    NaN,
    1e-40,
    0.1,
  ];
  const t = Tensor.zeros([1, values.length], "bfloat16");
  storeRow(rowAccess(t, 1), 0, Float64Array.from(values), values.length);
  const got = t.storage as Uint16Array;
  values.forEach((v, i) => {
    assert.equal(got[i], numberToBf16(v), `${v}: ${bf16ToNumber(got[i])}`);
  });
});

Deno.test("row items depend on the shape only, and cover every row", () => {
  assert.equal(rowsPerItem(2048, 1024), 64);
  assert.equal(rowsPerItem(64, 1024), 16); // a quarter of a call under 2^18 elements
  assert.equal(rowsPerItem(4, 1024), 8); // at least 2^13 elements
  assert.equal(itemCount(64, 1024), 4);
  assert.equal(rowsPerItem(3, 1 << 20), 1);
  assert.equal(itemCount(2048, 1024), 32);
  assert.equal(itemCount(0, 16), 0);
});

function rnd(shape: number[], seed: number, dtype: DType) {
  return Tensor.random(shape, { seed, dtype, low: -2, high: 3 });
}

Deno.test("row kernels equal the float64 oracle's kernels on the same calls", () => {
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    for (const l of LAYOUTS) {
      const x = l.make(dtype);
      const g = rowGeometry(x.shape, l.axis);
      const normalizedShape = x.shape.slice(l.axis);
      const w = rnd(normalizedShape, 10, "float32");
      const b = rnd(normalizedShape, 11, dtype);
      const dy = rnd(x.shape as number[], 12, dtype);
      const stats = () => Tensor.zeros([g.rows], "float32");
      const run = (k: typeof referenceKernels | typeof rowKernels) => {
        const output = Tensor.zerosLike(x);
        const mean = stats();
        const rstd = stats();
        k.layerNorm({ geometry: g, normalizedShape, eps: 1e-5 }, {
          input: x,
          weight: w,
          bias: b,
          output,
          mean,
          rstd,
        });
        const gi = Tensor.zerosLike(x);
        const gw = Tensor.zeros(normalizedShape);
        const gb = Tensor.zeros(normalizedShape);
        k.layerNormBackward({ geometry: g, normalizedShape, mask: [true, true, true] }, {
          gradOut: dy,
          input: x,
          mean,
          rstd,
          weight: w,
          gradInput: gi,
          gradWeight: gw,
          gradBias: gb,
        });
        const y = Tensor.zerosLike(x);
        const rs = stats();
        k.rmsNorm({ geometry: g, epsilon: 1e-6 }, { x, gamma: w, y, rstd: rs });
        const dx = Tensor.zerosLike(x);
        const dg = Tensor.zeros(normalizedShape);
        k.rmsNormGrad({ geometry: g }, { dy, x, rstd: rs, gamma: w, dx, dgamma: dg });
        const ay = Tensor.zerosLike(x);
        const ar = stats();
        const ax = Tensor.zerosLike(x);
        k.addRmsNorm({ geometry: g, epsilon: 1e-6 }, {
          x1: x,
          x2: dy,
          gamma: rnd(normalizedShape, 13, dtype),
          y: ay,
          rstd: ar,
          x: ax,
        });
        return { output, mean, rstd, gi, gw, gb, y, rs, dx, dg, ay, ar, ax };
      };
      const fast = run(rowKernels);
      const slow = run(referenceKernels);
      for (const [k, t] of Object.entries(fast)) {
        const want = slow[k as keyof typeof slow];
        // Each output is one rounding of nearly the same float64 value: at most one ulp apart.
        const tol = {
          rtol: 2 * ROUNDING_ONLY[t.dtype].rtol,
          atol: 2 * ROUNDING_ONLY[t.dtype].atol,
        };
        assertClose(t, want, tol, `${dtype} ${l.name} ${k}`);
      }
    }
  }
});

Deno.test("row kernels: the direct float32 path and the scratch path give the same bits", () => {
  // The same values contiguous (row_loops.ts's F32 loops read them in place) and as a
  // transposed copy (the F64 loops, through float64 scratch rows), and calls that mix the two
  // (contiguous inputs with transposed outputs, and the other way round: all through scratch
  // rows).
  const [rows, cols] = [5, 37];
  const strided = (t: Tensor) => t.transpose(0, 1).contiguous().transpose(0, 1);
  const x = Tensor.random([rows, cols], { seed: 1, low: -3, high: 5 });
  const dy = Tensor.random([rows, cols], { seed: 2 });
  const w = Tensor.random([cols], { seed: 3 });
  const b = Tensor.random([cols], { seed: 4 });
  const g = rowGeometry([rows, cols], 1);
  const run = (view: (t: Tensor) => Tensor, outView = view) => {
    const [xv, dyv] = [view(x), view(dy)];
    const out = () => outView(Tensor.zeros([rows, cols]));
    const [y, mean, rstd] = [out(), Tensor.zeros([rows]), Tensor.zeros([rows])];
    rowKernels.layerNorm({ geometry: g, normalizedShape: [cols], eps: 1e-5 }, {
      input: xv,
      weight: w,
      bias: b,
      output: y,
      mean,
      rstd,
    });
    const [gi, gw, gb] = [out(), Tensor.zeros([cols]), Tensor.zeros([cols])];
    rowKernels.layerNormBackward(
      { geometry: g, normalizedShape: [cols], mask: [true, true, true] },
      {
        gradOut: dyv,
        input: xv,
        mean,
        rstd,
        weight: w,
        gradInput: gi,
        gradWeight: gw,
        gradBias: gb,
      },
    );
    const [ry, rr] = [out(), Tensor.zeros([rows])];
    rowKernels.rmsNorm({ geometry: g, epsilon: 1e-6 }, { x: xv, gamma: w, y: ry, rstd: rr });
    const [dx, dg] = [out(), Tensor.zeros([cols])];
    rowKernels.rmsNormGrad({ geometry: g }, { dy: dyv, x: xv, rstd: rr, gamma: w, dx, dgamma: dg });
    const [ay, ar, ax] = [out(), Tensor.zeros([rows]), out()];
    rowKernels.addRmsNorm({ geometry: g, epsilon: 1e-6 }, {
      x1: xv,
      x2: dyv,
      gamma: w,
      y: ay,
      rstd: ar,
      x: ax,
    });
    return [y, mean, rstd, gi, gw, gb, ry, rr, dx, dg, ay, ar, ax].map((t) => [
      ...t.toFloat64Array(),
    ]);
  };
  const same = (t: Tensor) => t;
  const direct = run(same);
  for (
    const [name, got] of [
      ["scratch", run(strided)],
      ["direct inputs, scratch outputs", run(same, strided)],
      ["scratch inputs, direct outputs", run(strided, same)],
    ] as const
  ) {
    direct.forEach((d, i) => assert.deepEqual(d, got[i], `${name}: output ${i}`));
  }
});
