/**
 * float16 loads skip the fix of Inf and NaN only where no Inf or NaN can be read: a row
 * kernel's second pass for rows that its first pass found finite (src/backends/cpu/wasm/
 * kernels.wat `$load_code`); the row statistics' and the channel sums' first passes, which load
 * float16 so and take a row again with the full loads when their check finds an Inf or a NaN
 * (row_sums.wat `$rf_squares`, `$rf_moments`; channel_norms.wat `$bn_sums_rows_at`); and the
 * passes that scan their rows first (kernels.wat `$f16_rows_finite`: the backward row kernels'
 * and addRmsNorm's first passes, and the channel writes of code 1 in rows and channels-last).
 * Each operator whose kernel does any of these runs on float16 rows, one of which holds an Inf
 * (or a NaN) in one input, and on float32 rows of the same values: the float16 outputs must be
 * NaN, +Inf and -Inf where the float32 ones are, and the finite ones equal to the float32 ones
 * rounded to float16 (within one float16 ulp: the kernels compute both in float32 and round
 * once). A float16 row loaded as finite reads an Inf as 65536
 * and a NaN as a number: with `$f16_specials` always answering "none", 11 of these tests fail;
 * with `$load_code` ignoring its `finite` argument, rmsNorm's (the other second passes read
 * kept values, or give NaN in every output of such a row whichever way they load it: an Inf or
 * a NaN in x makes the mean, and so every y of layerNorm's and adaLayerNorm's row, NaN).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  adaLayerNorm,
  addLayerNormGrad,
  addRmsNorm,
  addRmsNormCast,
  batchNorm,
  batchNormBackward,
  batchNormElemt,
  batchNormElemtBackward,
  deepNormGrad,
  type DType,
  groupNorm,
  layerNorm,
  layerNormBackward,
  rmsNorm,
  rmsNormGrad,
  Tensor,
} from "../../mod.ts";

/** One operator's call on data tensors of `dtype` (float32 parameters and statistics). */
type Run = (data: (name: string) => Tensor, dtype: DType) => Record<string, unknown>;

interface OpCase {
  name: string;
  /** The data inputs (rows x cols, or for `scale`/`shift` one batch row). */
  data: readonly string[];
  run: Run;
  /** The float32 run, where the operator takes no float32 data: the same outputs by key. */
  float32?: Run;
}

const F32 = (values: number[], shape: number[]) => Tensor.fromArray(values, shape, "float32");

/** Per-row (or per-channel) float32 statistics of `shape` ([rows] or [rows, 1]): mean 0.5 - i. */
const means = (shape: number[]) => F32(Array.from({ length: shape[0] }, (_, i) => 0.5 - i), shape);

/** As {@linkcode means}: rstd `first` + i. */
const rstds = (shape: number[], first = 0.75) =>
  F32(Array.from({ length: shape[0] }, (_, i) => first + i), shape);

/** addRmsNorm's and addRmsNormCast's arguments: x1, x2, unit gamma in the data's dtype. */
const addArgs = (d: (name: string) => Tensor, dtype: DType) => ({
  x1: d("x1"),
  x2: d("x2"),
  gamma: Tensor.ones([d("x1").shape[1]], dtype),
  epsilon: 1e-5,
});

/**
 * The channel writes of code 1 (channel_norms.wat $bn_write_rows, channel_pixels.wat
 * bn_*_pix): normalize (batchNormElemt), gradient (batchNormElemtBackward), scale
 * (batchNormBackward in eval mode), on `input` (and `gradOut`) [1, C, ...].
 */
const channelWrites = (
  input: (name: string) => Tensor,
  dtype: DType,
): Record<string, Record<string, unknown>> => {
  const c = input("x").shape[1];
  const [mean, invstd] = [means([c]), rstds([c])];
  return {
    batchNormElemt: { output: batchNormElemt({ input: input("x"), mean, invstd }) },
    batchNormElemtBackward: {
      gradInput: batchNormElemtBackward({
        gradOut: input("dy"),
        input: input("x"),
        mean,
        invstd,
        weight: Tensor.full([c], 1.5, dtype),
        sumDy: F32(values(c, 4), [c]),
        sumDyXmu: F32(values(c, 5), [c]),
        counter: Tensor.fromArray([input("x").numel / c], [1], "int32"),
      }),
    },
    batchNormBackward: batchNormBackward({
      gradOut: input("dy"),
      input: input("x"),
      weight: Tensor.full([c], 1.5, dtype),
      runningMean: mean,
      runningVar: F32(values(c, 6).map((v) => v * v + 0.5), [c]),
      training: false,
    }) as never,
  };
};

/** Each of {@linkcode channelWrites} as an operator case: [case name, write, data inputs]. */
const CODE_1_WRITES: readonly OpCase[] = ([
  ["batchNormElemt", "batchNormElemt", ["x"]],
  ["batchNormElemtBackward", "batchNormElemtBackward", ["dy", "x"]],
  ["batchNormBackward eval", "batchNormBackward", ["dy", "x"]],
] as const).map(([name, write, data]): OpCase => ({
  name,
  data,
  run: (d, dtype) => {
    const [rows, cols] = d("x").shape;
    return channelWrites((n) => d(n).reshape([1, rows, cols]), dtype)[write];
  },
}));

const OPS: readonly OpCase[] = [
  {
    name: "layerNorm",
    data: ["x"],
    run: (d, dtype) => {
      const cols = d("x").shape[1];
      return layerNorm({
        input: d("x"),
        normalizedShape: [cols],
        weight: Tensor.ones([cols], dtype),
        eps: 1e-5,
      }) as never;
    },
  },
  {
    // Each row a channel of one sample: its statistics over the row (kernels' bn_stats_rows).
    name: "batchNorm",
    data: ["x"],
    run: (d, dtype) => {
      const [rows, cols] = d("x").shape;
      return batchNorm({
        input: d("x").reshape([1, rows, cols]),
        weight: Tensor.ones([rows], dtype),
        training: true,
      }) as never;
    },
  },
  {
    // Each row a channel, as batchNorm's: the sums of dy and dy * (x - mean) over it.
    name: "batchNormBackward",
    data: ["dy", "x"],
    run: (d, dtype) => {
      const [rows, cols] = d("x").shape;
      return batchNormBackward({
        gradOut: d("dy").reshape([1, rows, cols]),
        input: d("x").reshape([1, rows, cols]),
        weight: Tensor.ones([rows], dtype),
        saveMean: means([rows]),
        saveInvstd: rstds([rows]),
        training: true,
      }) as never;
    },
  },
  {
    name: "groupNorm",
    data: ["x"],
    run: (d, dtype) => {
      const [rows, cols] = d("x").shape;
      return groupNorm({
        input: d("x").reshape([1, rows, cols]),
        gamma: Tensor.ones([rows], dtype),
        N: 1,
        C: rows,
        HxW: cols,
        group: rows,
        eps: 1e-5,
      }) as never;
    },
  },
  {
    name: "rmsNorm",
    data: ["x"],
    run: (d, dtype) => {
      const cols = d("x").shape[1];
      return rmsNorm({ x: d("x"), gamma: Tensor.ones([cols], dtype), epsilon: 1e-5 }) as never;
    },
  },
  {
    name: "rmsNormGrad",
    data: ["dy", "x"],
    run: (d, dtype) => {
      const [rows, cols] = d("x").shape;
      return rmsNormGrad({
        dy: d("dy"),
        x: d("x"),
        rstd: rstds([rows, 1], 0.25),
        gamma: Tensor.ones([cols], dtype),
      }) as never;
    },
  },
  {
    name: "layerNormBackward",
    data: ["dy", "x"],
    run: (d) => {
      const [rows, cols] = d("x").shape;
      return layerNormBackward({
        gradOut: d("dy"),
        input: d("x"),
        normalizedShape: [cols],
        mean: means([rows, 1]),
        rstd: rstds([rows, 1]),
        weight: Tensor.full([cols], 1.5),
        outputMask: [true, true, false],
      }) as never;
    },
  },
  {
    name: "addRmsNorm",
    data: ["x1", "x2"],
    run: (d, dtype) => addRmsNorm(addArgs(d, dtype)) as never,
  },
  {
    name: "addRmsNormCast",
    data: ["x1", "x2"],
    run: (d, dtype) => addRmsNormCast(addArgs(d, dtype)) as never,
    // float16 and bfloat16 only: addRmsNorm's float32 y is y1, and y2 its rounding.
    float32: (d, dtype) => {
      const r = addRmsNorm(addArgs(d, dtype));
      return { y1: r.y, y2: r.y, rstd: r.rstd, x: r.x };
    },
  },
  {
    name: "adaLayerNorm",
    data: ["x", "scale", "shift"],
    run: (d) =>
      adaLayerNorm({ x: d("x"), scale: d("scale"), shift: d("shift"), epsilon: 1e-5 }) as never,
  },
  // Writes under constants that do not come from sums over the data (code 1: its float16 rows
  // may hold an Inf or a NaN), loaded as finite only when a scan finds none
  // (kernels.wat $f16_rows_finite): each row a channel of one sample.
  ...CODE_1_WRITES,
  ...(["addLayerNormGrad", "deepNormGrad"] as const).map((name): OpCase => ({
    name,
    data: ["dy", "x1", "x2"],
    run: (d, dtype) => {
      const [rows, cols] = d("x1").shape;
      const common = {
        dy: d("dy"),
        rstd: rstds([rows, 1]),
        mean: means([rows, 1]),
        gamma: Tensor.full([cols], 1.5, dtype),
      };
      return (name === "deepNormGrad"
        ? deepNormGrad({ ...common, x: d("x1"), gx: d("x2"), alpha: 0.5 })
        : addLayerNormGrad({ ...common, x1: d("x1"), x2: d("x2") })) as never;
    },
  })),
];

/** Values exact in float16 (and float32): small multiples of 1/4. */
function values(count: number, seed: number): number[] {
  return Array.from({ length: count }, (_, i) => (((i * 7 + seed * 5) % 13) - 6) / 4);
}

/** The first `rows` x `cols` values of input `name`, with `special` at row 1, column `at` when
 * `name` is `target`. */
function inputValues(
  name: string,
  shape: number[],
  seed: number,
  target: string,
  special: number,
  at: number,
  scale: number,
): number[] {
  const v = values(shape[0] * shape[1], seed).map((x) => x * scale);
  if (name === target) v[shape[1] * Math.min(1, shape[0] - 1) + at] = special;
  return v;
}

function shapeOf(op: OpCase, name: string, rows: number, cols: number): number[] {
  // adaLayerNorm's scale and shift: one batch row of x's two (x is [1, rows, cols]).
  return op.name === "adaLayerNorm" && name !== "x" ? [1, cols] : [rows, cols];
}

/** Every Tensor output of a result, by key, as float64 arrays (at least one). */
function outputs(result: Record<string, unknown>): Map<string, Output> {
  const out = new Map<string, Output>();
  for (const [key, value] of Object.entries(result)) {
    if (value instanceof Tensor) {
      out.set(key, { dtype: value.dtype, values: value.toFloat64Array() });
    }
  }
  assert.ok(out.size > 0, "a result with no tensor output");
  return out;
}

/** An output's dtype and values. */
interface Output {
  dtype: DType;
  values: Float64Array;
}

/** The float16 run's outputs against the float32 run's, as the module doc says. */
function assertLikeFloat32(
  half: Map<string, Output>,
  single: Map<string, Output>,
  what: string,
): void {
  assert.deepEqual([...half.keys()].sort(), [...single.keys()].sort(), what);
  for (const [key, { dtype, values: h }] of half) {
    const s = single.get(key)!.values;
    for (let i = 0; i < h.length; i++) {
      // A float16 output is the float32 one rounded; a float32 output (statistics, parameter
      // gradients) is the float32 one.
      const want = dtype === "float16" ? Math.f16round(s[i]) : s[i];
      const where = `${what}: ${key}[${i}] ${h[i]} against ${s[i]}`;
      if (!Number.isFinite(want)) assert.ok(Object.is(h[i], want), where);
      else assert.ok(Math.abs(h[i] - want) <= 2 ** -10 * Math.abs(want) + 2 ** -24, where);
    }
  }
}

for (const op of OPS) {
  Deno.test(`${op.name}: float16 rows with an Inf or a NaN give what float32 rows give`, () => {
    // Data of magnitude up to 1.5, and up to 24576 (exact in float16 too): rows whose moments
    // leave room for an element of 2^16, which the statistics then take again fully.
    for (
      const [rows, cols, at, scale] of [[2, 16, 3, 1], [2, 9, 8, 1], [2, 16, 5, 16384]] as const
    ) {
      for (const target of op.data) {
        for (const special of [Infinity, -Infinity, NaN]) {
          const what = `${op.name} [${rows},${cols}] x${scale} ${target}[1,${at}] = ${special}`;
          const made = (dtype: DType) => (name: string) => {
            const shape = shapeOf(op, name, rows, cols);
            const seed = op.data.indexOf(name) + 1;
            const v = inputValues(name, shape, seed, target, special, at, scale);
            const t = Tensor.fromArray(v, shape, dtype);
            return op.name === "adaLayerNorm" && name === "x" ? t.reshape([1, rows, cols]) : t;
          };
          const half = outputs(op.run(made("float16"), "float16"));
          const single = outputs((op.float32 ?? op.run)(made("float32"), "float32"));
          assertLikeFloat32(half, single, what);
        }
      }
    }
  });
}

Deno.test("the channel kernels channels-last: float16 pixels with an Inf or a NaN give what float32 gives", () => {
  // [2, 8, 3, 3] stored channels-last: the pixel kernels' statistics, sums and code 1 writes
  // (channel_pixels.wat bn_stats_pix, bn_sums_pix, bn_*_pix).
  const shape = [2, 8, 3, 3];
  const count = shape.reduce((a, b) => a * b);
  for (const target of ["dy", "x"]) {
    for (const special of [Infinity, -Infinity, NaN]) {
      for (const at of [5, 8 * 9 + 30]) {
        const what = `${target}[${at}] = ${special}`;
        const run = (dtype: DType) => {
          const data = (name: string, seed: number) => {
            const v = values(count, seed);
            if (name === target) v[at] = special;
            const t = Tensor.fromArray(v, shape, dtype);
            return t.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2]);
          };
          return outputs(batchNormBackward({
            gradOut: data("dy", 1),
            input: data("x", 2),
            weight: Tensor.ones([8], dtype),
            saveMean: F32(values(8, 3), [8]),
            saveInvstd: F32(Array.from({ length: 8 }, (_, c) => 0.5 + c / 4), [8]),
            training: true,
          }) as never);
        };
        assertLikeFloat32(run("float16"), run("float32"), what);
        // The code 1 writes over the pixels (channel_pixels.wat bn_norm_pix, bn_grad_pix,
        // bn_scale_pix, each scanning its item first).
        const writes = (dtype: DType) =>
          channelWrites((name) => {
            const v = values(count, name === "dy" ? 1 : 2);
            if (name === target) v[at] = special;
            const t = Tensor.fromArray(v, shape, dtype);
            return t.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2]);
          }, dtype);
        const [half, single] = [writes("float16"), writes("float32")];
        for (const op of Object.keys(half)) {
          assertLikeFloat32(outputs(half[op]), outputs(single[op]), `${op} ${what}`);
        }
        if (target !== "x") continue;
        const forward = (dtype: DType) => {
          const v = values(count, 2);
          v[at] = special;
          const x = Tensor.fromArray(v, shape, dtype).permute([0, 2, 3, 1]).contiguous();
          return outputs(batchNorm({
            input: x.permute([0, 3, 1, 2]),
            weight: Tensor.ones([8], dtype),
            training: true,
          }) as never);
        };
        assertLikeFloat32(forward("float16"), forward("float32"), `batchNorm ${what}`);
      }
    }
  }
});
