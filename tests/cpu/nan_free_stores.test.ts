/**
 * 16-bit writes that skip the NaN lanes' choice of their stores (kernels/stage_types.ts
 * writeCode): bfloat16 writes whose constants hold no NaN (the kernels' code 3), and float16
 * writes whose constants come from this call's sums over the data and are finite and bounded
 * (code 4); the others keep the choice (codes 2 and 1). Either way each output is the float32
 * value rounded once to its dtype, and a NaN stays a quiet NaN: here NaN and infinite inputs
 * in some channels, a NaN float32 weight in another, through the normalize write (batchNorm
 * training and eval) and the gradient write (groupNormBackward), on the units, rows and
 * channels-last pixel paths, and the row norms. The expected bits come from the same call in
 * float32 on the same values (exactly representable), each output rounded to nearest even; for
 * the row norms, from their element-wise formulas in float32 over the call's own statistics
 * (bfloat16 rows may sum their elements in another order than float32 rows: see rowOutputs).
 *
 * @module
 */

import assert from "node:assert/strict";
import { batchNorm, groupNorm, groupNormBackward, layerNorm, rmsNorm, Tensor } from "../../mod.ts";
import { type HostData, numberToBf16 } from "../../src/tensor/dtype.ts";
import {
  BFLOAT16,
  BFLOAT16_NO_NAN_CONSTANTS,
  FLOAT16,
  FLOAT16_NO_NAN,
  FLOAT32,
  NO_NAN_CONSTANT_BOUND,
  writeCode,
} from "../../src/backends/cpu/kernels/stage_types.ts";
import { hostData } from "../../src/backends/cpu/tensors/tensor_arrays.ts";

/** bfloat16 bits of NaNs and infinities placed in the inputs. */
const SIGNALLING_NAN = 0x7f81;
const NEGATIVE_QUIET_NAN = 0xffc3;
const INFINITY = 0x7f80;

/** A tensor of `data` (NCHW order), copied into the heap, NCHW or channels-last. */
function heapTensor(data: HostData, shape: readonly number[], channelsLast = false): Tensor {
  const t = Tensor.fromData(data, shape).clone();
  return channelsLast ? t.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2]) : t;
}

/** A bfloat16 tensor of `bits` (NCHW order), in the heap, NCHW or channels-last. */
function bf16(bits: Uint16Array, shape: readonly number[], channelsLast: boolean): Tensor {
  return heapTensor(bits, shape, channelsLast);
}

/** The float32 tensor of the same values (bfloat16 widens exactly; NaNs become NaN). */
function widened(bits: Uint16Array, shape: readonly number[]): Tensor {
  return heapTensor(widenBits(bits), shape);
}

/** Random bfloat16 bits in [-2, 2), with `special` patterns at (channel, index) places. */
function inputBits(shape: readonly number[], seed: number, special: [number, number, number][]) {
  const [N, C, H, W] = shape;
  const values = Tensor.random(shape, { seed }).toArray();
  const bits = new Uint16Array(values.map((v) => numberToBf16(4 * v - 2)));
  for (const [c, k, pattern] of special) {
    const n = k % N;
    const hw = Math.floor(k / N) % (H * W);
    bits[(n * C + c) * H * W + hw] = pattern;
  }
  return bits;
}

/** The 16-bit patterns of `t` (bfloat16 or float16) in NCHW order. */
function bitsOf(t: Tensor): Uint16Array {
  const data = hostData(t.contiguous());
  return new Uint16Array(data.buffer, data.byteOffset, data.length);
}

/** How a 16-bit dtype rounds a float32 value, and what its stored NaN looks like. */
interface Rounding {
  /** The bits of `v` rounded once, to nearest even. */
  readonly bits: (v: number) => number;
  /** Whether `bits` are the NaN the store writes. */
  readonly nan: (bits: number) => boolean;
  /** What that NaN is, for messages. */
  readonly nanName: string;
}

/** bfloat16: a quiet NaN. */
const BF16: Rounding = {
  bits: numberToBf16,
  nan: (b) => (b & 0x7fc0) === 0x7fc0,
  nanName: "a quiet NaN",
};

const half16 = new Float16Array(1);
const half16Bits = new Uint16Array(half16.buffer);

/** float16: 0x7e00 with its sign. */
const F16: Rounding = {
  bits: (v) => (half16[0] = v, half16Bits[0]),
  nan: (b) => (b & 0x7fff) === 0x7e00,
  nanName: "0x7e00 with its sign",
};

/**
 * Every output of `actual` (16-bit) is `expected`'s (float32) rounded once, and each NaN the
 * NaN `r` stores; returns how many NaNs there were.
 */
function assertRounded(actual: Tensor, expected: Tensor, what: string, r = BF16): number {
  const got = bitsOf(actual);
  const want = expected.contiguous().toArray();
  let nans = 0;
  for (let i = 0; i < want.length; i++) {
    if (Number.isNaN(want[i])) {
      nans++;
      assert.ok(r.nan(got[i]), `${what}[${i}]: ${got[i].toString(16)}, ${r.nanName}`);
    } else {
      assert.equal(got[i], r.bits(want[i]), `${what}[${i}] of ${want[i]}`);
    }
  }
  return nans;
}

const CASES = [
  ["units", [2, 8, 4, 4], false],
  ["rows", [2, 8, 24, 24], false],
  ["channels-last pixels", [2, 8, 24, 24], true],
] as const;

for (const [path, shape, channelsLast] of CASES) {
  Deno.test(`bfloat16 stores without the NaN choice (${path}): batchNorm's normalize write`, () => {
    const C = shape[1];
    // Channel 1: a signalling and a negative quiet NaN; channel 2: +Inf; channel 3: a NaN
    // weight (its constants NaN: code 2 for its rows, or for the whole call's pixels).
    const x = inputBits(shape, 1, [[1, 3, SIGNALLING_NAN], [1, 7, NEGATIVE_QUIET_NAN], [
      2,
      5,
      INFINITY,
    ]]);
    // A float32 weight (as CANN takes it with bfloat16 data), channel 3's a NaN whose low
    // payload bits are set: code 3 would carry them into the exponent (a -0 output).
    const w = new Float32Array(C).map((_, c) => 0.5 + c / 8);
    new Uint32Array(w.buffer)[3] = 0x7fffffff;
    const b = new Uint16Array(C).map((_, c) => numberToBf16(c / 16 - 0.25));
    const weight = heapTensor(w, [C]);
    const run = (input: Tensor, bias: Tensor) =>
      batchNorm({ input, weight, bias, training: true, eps: 1e-5 });
    const low = run(bf16(x, shape, channelsLast), bf16(b, [C], false));
    const wide = run(widened(x, shape), widened(b, [C]));
    const nans = assertRounded(low.output, wide.output, "output");
    const plane = shape[0] * shape[2] * shape[3];
    assert.equal(nans, 3 * plane, "channels 1, 2 (Inf - Inf) and 3 (NaN weight) are NaN");
  });

  Deno.test(`bfloat16 stores without the NaN choice (${path}): groupNormBackward's gradient write`, () => {
    const [N, C, H, W] = shape;
    const group = 4; // groups of two channels
    const x = inputBits(shape, 2, [[2, 1, SIGNALLING_NAN]]);
    const dy = inputBits(shape, 3, [[5, 4, NEGATIVE_QUIET_NAN]]);
    const g = new Uint16Array(C).map((_, c) => numberToBf16(1 - c / 16));
    // The statistics of the bfloat16 forward (bfloat16 outputs), widened for the float32 run.
    const fwd = groupNorm({
      input: bf16(x, shape, false),
      gamma: bf16(g, [C], false),
      beta: Tensor.zeros([C], "bfloat16"),
      group,
    });
    const run = (input: Tensor, gradOut: Tensor, gamma: Tensor, mean: Tensor, rstd: Tensor) =>
      groupNormBackward({
        gradOut,
        input,
        mean,
        rstd,
        gamma,
        N,
        C,
        HxW: H * W,
        group,
        outputMask: [true, false, false],
      });
    const low = run(
      bf16(x, shape, channelsLast),
      bf16(dy, shape, channelsLast),
      bf16(g, [C], false),
      fwd.mean,
      fwd.rstd,
    );
    const wide = run(
      widened(x, shape),
      widened(dy, shape),
      widened(g, [C]),
      widened(bitsOf(fwd.mean), fwd.mean.shape),
      widened(bitsOf(fwd.rstd), fwd.rstd.shape),
    );
    const nans = assertRounded(low.gradInput!, wide.gradInput!, "gradInput");
    // The groups of channels 2 and 5 (channels 2-3 and 4-5 of each sample with the NaN).
    assert.ok(nans >= 2 * H * W && nans <= 4 * N * H * W, `${nans} NaN outputs`);
  });
}

/** A [rows, n] bfloat16 input with NaNs in row 1 and +Inf in row 2 (random elsewhere). */
function rowBits(rows: number, n: number): Uint16Array {
  const bits = inputBits([rows, n, 1, 1], 4, []);
  bits[n + 5] = SIGNALLING_NAN;
  bits[n + 9] = NEGATIVE_QUIET_NAN;
  bits[2 * n + 1] = INFINITY;
  return bits;
}

/** float32 values of the bfloat16 `bits` (widened exactly). */
function widenBits(bits: Uint16Array): Float32Array {
  return new Float32Array(new Uint32Array(bits.length).map((_, i) => bits[i] << 16).buffer);
}

/**
 * The row norms' outputs as their element-wise formulas give them in float32 (one rounding per
 * operation, as the kernels' lanes compute), from the call's own per-row statistics: bfloat16
 * rows may sum their elements in another order than float32 rows (RMSNorm's squares:
 * kernels.wat $pair_lo), so a float32 call on the same values may differ in the statistics'
 * last bit, and the stores are what these cases check.
 */
function rowOutputs(
  x: Float32Array,
  n: number,
  g: Float32Array,
  mean: Float32Array | null,
  rstd: Float32Array,
): Tensor {
  const f = Math.fround;
  const y = new Float32Array(x.length).map((_, i) => {
    const r = Math.floor(i / n);
    const j = i % n;
    return mean === null
      ? f(f(x[i] * rstd[r]) * g[j])
      : f(f(f(f(x[i] - mean[r]) * rstd[r]) * g[j]) + g[j]);
  });
  return Tensor.fromData(y, [x.length / n, n]);
}

for (const [rows, n] of [[6, 40], [64, 1000]] as const) {
  Deno.test(`bfloat16 stores without the NaN choice (rows of ${n}): rmsNorm and layerNorm`, () => {
    const x = rowBits(rows, n);
    const low = bf16(x, [rows, n], false);
    const values = widenBits(x);
    // A float32 gamma: clean, then with a NaN of low payload bits in column 3 (code 2).
    for (const nanColumn of [false, true]) {
      const g = new Float32Array(n).map((_, j) => 0.75 + j / (2 * n));
      if (nanColumn) new Uint32Array(g.buffer)[3] = 0x7fffffff;
      const gamma = heapTensor(g, [n]);
      const what = nanColumn ? "with a NaN gamma" : "";
      const r = rmsNorm({ x: low, gamma, epsilon: 1e-6 });
      const rstd = new Float32Array(r.rstd.toArray());
      const nans = assertRounded(r.y, rowOutputs(values, n, g, null, rstd), `rmsNorm ${what}`);
      // Row 1, row 2's Inf (Inf * 0), and column 3 with the NaN gamma.
      assert.equal(nans, n + 1 + (nanColumn ? rows - 1 : 0));
      const l = layerNorm({ input: low, normalizedShape: [n], weight: gamma, bias: gamma });
      const [mean, lrstd] = [l.mean, l.rstd].map((t) => new Float32Array(t!.toArray()));
      assertRounded(l.output, rowOutputs(values, n, g, mean, lrstd), `layerNorm ${what}`);
    }
  });
}

Deno.test("write codes: bfloat16 without NaN constants, float16 from finite, bounded sums", () => {
  const code = (dtype: 0 | 1 | 2, values: number[], dataSums: boolean) =>
    writeCode(dtype, values, 0, 1, values.length, dataSums);
  assert.equal(code(BFLOAT16, [1, -Infinity, 3e38], false), BFLOAT16_NO_NAN_CONSTANTS);
  assert.equal(code(BFLOAT16, [1, NaN], true), BFLOAT16);
  assert.equal(code(FLOAT16, [1, -(2 ** 60), NO_NAN_CONSTANT_BOUND], true), FLOAT16_NO_NAN);
  assert.equal(code(FLOAT16, [1, 2], false), FLOAT16, "given constants: the data may hold NaN");
  for (const bad of [NaN, Infinity, 2 ** 61]) assert.equal(code(FLOAT16, [1, bad], true), FLOAT16);
  assert.equal(code(FLOAT32, [NaN], true), FLOAT32);
});

for (const [path, shape, channelsLast] of CASES) {
  Deno.test(`float16 stores without the NaN choice (${path}): batchNorm training and eval`, () => {
    const [N, C, H, W] = shape;
    const plane = H * W;
    const values = Tensor.random(shape, { seed: 5 }).toArray().map((v) => Math.f16round(8 * v - 4));
    values[(0 * C + 1) * plane + 3] = NaN; // channel 1
    values[(1 * C + 2) * plane + 2] = -Infinity; // channel 2
    // The float32 run in the same layout (its statistics summed in the same order).
    const wide = heapTensor(new Float32Array(values), shape, channelsLast);
    const low = heapTensor(new Float16Array(values), shape, channelsLast);
    const weight = heapTensor(new Float16Array(C).map((_, c) => 0.5 + c / 8), [C]);
    const bias = heapTensor(new Float16Array(C).map((_, c) => c / 4 - 1), [C]);
    const wWide = heapTensor(new Float32Array(weight.toArray()), [C]);
    const bWide = heapTensor(new Float32Array(bias.toArray()), [C]);
    // Training: the statistics of channels 1 and 2 are NaN (code 1 there), the rest code 4.
    const train = (x: Tensor, w: Tensor, b: Tensor) =>
      batchNorm({ input: x, weight: w, bias: b, training: true, eps: 1e-5 }).output;
    const trained = assertRounded(
      train(low, weight, bias),
      train(wide, wWide, bWide),
      "training",
      F16,
    );
    assert.equal(trained, 2 * N * plane, "channels 1 and 2");
    // Eval: running statistics, finite; the NaN and -Inf elements reach the write (code 1).
    const rm = heapTensor(new Float16Array(C).fill(0.25), [C]);
    const rv = heapTensor(new Float16Array(C).fill(2), [C]);
    const rmWide = heapTensor(new Float32Array(C).fill(0.25), [C]);
    const rvWide = heapTensor(new Float32Array(C).fill(2), [C]);
    const evaluate = (x: Tensor, w: Tensor, b: Tensor, m: Tensor, v: Tensor) =>
      batchNorm({ input: x, weight: w, bias: b, runningMean: m, runningVar: v, training: false })
        .output;
    const evaluated = assertRounded(
      evaluate(low, weight, bias, rm, rv),
      evaluate(wide, wWide, bWide, rmWide, rvWide),
      "eval",
      F16,
    );
    assert.equal(evaluated, 1, "the NaN element (the -Inf one stays -Inf)");
  });
}
