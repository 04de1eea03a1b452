/**
 * The CPU backend's WebAssembly SIMD kernels (src/backends/cpu/wasm/kernels.wat), in the
 * build this process runs (src/backends/cpu/wasm/kernels_module.ts: the baseline one, or the
 * FP16 one when the engine has the proposal; tests/cpu/wasm_fp16.test.ts runs this file
 * again in a child process started with --experimental-wasm-fp16):
 * - the committed modules are what `deno task build:wasm` builds from the .wat files now;
 * - the codecs: every float16 and bfloat16 pattern decodes exactly; float64 values round
 *   once to float16/bfloat16/float32 exactly as Math.f16round / numberToBf16 / Math.fround
 *   (ties to even, double-rounding traps, subnormals, overflow, NaN quiet with its sign);
 * - (the float32 kernels the operators run are tested against the oracle in
 *   tests/cpu/fast_kernels.test.ts and row_kernels.test.ts);
 * - pooled runs (workers with their own instances) give the bits of an inline run without
 *   WebAssembly.
 */

import assert from "node:assert/strict";
import {
  buildFp16ModuleText,
  buildModuleText,
  FP16_MODULE_PATH,
  MODULE_PATH,
} from "../../scripts/build_wasm.ts";
import { kernelsWasmBuild, kernelsWasmBytes } from "../../src/backends/cpu/wasm/kernels_module.ts";
import { codecValues } from "../fixtures/codec_values.ts";
import { instantiateWasm, wasmReserve, type WasmState } from "../fixtures/wasm_memory.ts";
import { packConstants } from "../../src/backends/cpu/kernels/wasm_instance.ts";
import { fastKernels } from "../../src/backends/cpu/fast/mod.ts";
import { pooledJobCount, withCpuPolicy } from "../../src/backends/cpu/pool/pool.ts";
import { cpuThreads, setCpuThreads, startCpuPool } from "../../src/backends/cpu/threads.ts";
import { channelGeometry, type KernelName } from "../../src/backends/types.ts";
import { type DType, numberToBf16 } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { laidOut, type TensorSet, twinSet, values } from "../fixtures/cpu_cases.ts";

// ---------------------------------------------------------------------------------------
// The build

Deno.test({
  name: "wasm: the committed modules are the builds of the .wat files (run deno task build:wasm)",
  // Once per suite: the FP16 run of this file (tests/cpu/wasm_fp16.test.ts) skips it.
  ignore: kernelsWasmBuild() === "fp16",
}, async () => {
  const committed = (path: string) => Deno.readTextFile(new URL(`../../${path}`, import.meta.url));
  assert.ok(await committed(MODULE_PATH) === await buildModuleText(), `${MODULE_PATH} is stale`);
  assert.ok(
    await committed(FP16_MODULE_PATH) === await buildFp16ModuleText(),
    `${FP16_MODULE_PATH} is stale`,
  );
  assert.ok(instantiateWasm(kernelsWasmBytes()) !== null, "the module instantiates");
});

// ---------------------------------------------------------------------------------------
// Codecs

const CHUNK = 4096;

/** The build under test, named in the codec tests (the FP16 run looks for it). */
const BUILD = kernelsWasmBuild();

function codecInstance(): WasmState {
  const w = instantiateWasm(kernelsWasmBytes());
  assert.ok(w);
  wasmReserve(w, 2 * CHUNK, 4);
  return w;
}

/** Decodes `bits` (16-bit patterns, dt 1 or 2) through the kernels: float32 bits. */
function wasmDecode(w: WasmState, bits: Uint16Array, dt: number): Uint32Array {
  const out = new Uint32Array(bits.length);
  const u32 = new Uint32Array(w.f32.buffer);
  for (let i = 0; i < bits.length; i += CHUNK) {
    const n = Math.min(CHUNK, bits.length - i);
    w.u16.set(bits.subarray(i, i + n), w.dyAt >> 1);
    w.exports.decode(w.dyAt, w.outAt, (n + 3) & ~3, dt);
    out.set(u32.subarray(w.outAt >> 2, (w.outAt >> 2) + n), i);
  }
  return out;
}

/**
 * Rounds `v` once to dt through the kernels: 16-bit patterns, or float32 bits for dt 0; with
 * `pairs`, through the store the kernels use for two vectors at a time.
 */
function wasmEncode(
  w: WasmState,
  v: Float64Array,
  dt: number,
  pairs: boolean,
): Uint16Array | Uint32Array {
  const out = dt === 0 ? new Uint32Array(v.length) : new Uint16Array(v.length);
  const view = dt === 0 ? new Uint32Array(w.f32.buffer) : w.u16;
  const shift = dt === 0 ? 2 : 1;
  for (let i = 0; i < v.length; i += CHUNK) {
    const n = Math.min(CHUNK, v.length - i);
    w.f64.set(v.subarray(i, i + n), w.dyAt >> 3);
    w.exports.encode(w.dyAt, w.outAt, (n + 3) & ~3, dt, pairs ? 1 : 0);
    out.set(view.subarray(w.outAt >> shift, (w.outAt >> shift) + n) as never, i);
  }
  return out;
}

Deno.test(`wasm codecs (${BUILD} build): all 65536 float16 and bfloat16 patterns decode exactly`, () => {
  const w = codecInstance();
  const bits = new Uint16Array(65536).map((_, i) => i);
  const f16 = wasmDecode(w, bits, 1);
  const expected = new Float32Array(new Float16Array(bits.buffer));
  const expectedBits = new Uint32Array(expected.buffer);
  for (let h = 0; h < 65536; h++) {
    if ((h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0) {
      // NaN: all-ones exponent, its sign and mantissa (so quiet stays quiet); the FP16
      // build's conversion also makes a signalling NaN quiet (see kernels_fp16.wat).
      const quiet = BUILD === "fp16" ? 0x400000 : 0;
      const nan = ((h & 0x8000) << 16 | 0x7f800000 | quiet | (h & 0x3ff) << 13) >>> 0;
      assert.equal(f16[h], nan, `float16 NaN ${h.toString(16)}`);
    } else {
      assert.equal(f16[h], expectedBits[h], `float16 ${h.toString(16)}`);
    }
  }
  const bf16 = wasmDecode(w, bits, 2);
  for (let h = 0; h < 65536; h++) assert.equal(bf16[h], (h << 16) >>> 0, `bfloat16 ${h}`);
});

/** {@linkcode codecValues}, made once for the codec tests that share them. */
let sharedCodecValues: Float64Array | undefined;
function codecValuesOnce(): Float64Array {
  return sharedCodecValues ??= codecValues();
}

for (const pairs of [false, true]) {
  const how = pairs ? "eight at a time" : "four at a time";
  Deno.test(`wasm codecs (${BUILD} build): float64 rounds once to float16, bfloat16, float32 (ties, subnormals), ${how}`, () => {
    const w = codecInstance();
    const v = codecValuesOnce();
    assert.ok(v.length > 1_000_000);
    const f16 = wasmEncode(w, v, 1, pairs) as Uint16Array;
    const bf16 = wasmEncode(w, v, 2, pairs) as Uint16Array;
    const f32 = wasmEncode(w, v, 0, pairs) as Uint32Array;
    const half = new Float16Array(1);
    const halfBits = new Uint16Array(half.buffer);
    const single = new Float32Array(1);
    const singleBits = new Uint32Array(single.buffer);
    for (let i = 0; i < v.length; i++) {
      half[0] = v[i];
      single[0] = v[i];
      if (Number.isNaN(v[i])) {
        // A quiet NaN with the value's sign (payloads are not specified: V8's own stores keep
        // or drop them depending on the tier).
        const sign = singleBits[0] >>> 31;
        assert.equal(f16[i], sign ? 0xfe00 : 0x7e00, `float16 of NaN`);
        assert.equal(bf16[i] >> 6, sign ? 0x3ff : 0x1ff, `bfloat16 of NaN`);
        assert.equal(f32[i] >>> 22, sign ? 0x3ff : 0x1ff, `float32 of NaN`);
        continue;
      }
      assert.equal(f16[i], halfBits[0], `float16 of ${v[i]}: ${f16[i].toString(16)}`);
      assert.equal(bf16[i], numberToBf16(v[i]), `bfloat16 of ${v[i]}`);
      assert.equal(f32[i], singleBits[0], `float32 of ${v[i]}`);
    }
  });
}

Deno.test("Math.f16round agrees with the Float16Array store (one rounding from float64)", () => {
  const v = codecValuesOnce();
  const half = new Float16Array(1);
  for (let i = 0; i < v.length; i += 7) {
    half[0] = v[i];
    assert.ok(Object.is(half[0], Math.f16round(v[i])) || Number.isNaN(v[i]));
  }
});

// ---------------------------------------------------------------------------------------
// Kernels: WebAssembly against TypeScript (same bits) and against the reference

type Storage = Float32Array | Float16Array | Uint16Array | Int32Array;

/**
 * Byte-identical storages, except that NaN meets any NaN: when two NaNs meet in an addition
 * or multiplication, which one propagates (its sign and payload) depends on the operand
 * order the compiler chose, in V8's JavaScript and WebAssembly tiers alike (IEEE 754 leaves
 * it unspecified).
 */
function assertSameValues(actual: Tensor, expected: Tensor, message: string): void {
  const a = actual.storage as Storage;
  const e = expected.storage as Storage;
  assert.equal(a.length, e.length, `${message}: length`);
  const bits = (s: Storage) =>
    s instanceof Float32Array || s instanceof Int32Array
      ? new Uint32Array(s.buffer, s.byteOffset, s.length)
      : new Uint16Array(s.buffer, s.byteOffset, s.length);
  const ab = bits(a);
  const eb = bits(e);
  const isNaN = (x: number) =>
    actual.dtype === "bfloat16"
      ? (x & 0x7f80) === 0x7f80 && (x & 0x7f) !== 0
      : actual.dtype === "float16"
      ? (x & 0x7c00) === 0x7c00 && (x & 0x3ff) !== 0
      : (x & 0x7f800000) === 0x7f800000 && (x & 0x7fffff) !== 0;
  for (let i = 0; i < ab.length; i++) {
    if (ab[i] === eb[i] || (isNaN(ab[i]) && isNaN(eb[i]))) continue;
    assert.fail(`${message} [${i}]: ${ab[i].toString(16)} vs ${eb[i].toString(16)}`);
  }
}

const numel = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

/** Data layouts of these tests: NCHW, channels-last, channels-last with padded pixels. */
type WasmLayout = "contiguous" | "channelsLast" | "paddedPixels";

/**
 * A data tensor: seeded values around per-channel offsets, with NaN, Inf, -Inf and zeros at
 * a few places when `special`, and ties/subnormal-prone values (multiples of 2^-12).
 */
function data(
  shape: readonly number[],
  dtype: DType,
  layout: WasmLayout,
  seed: number,
  special = false,
): Tensor {
  const v = values(numel(shape), seed, -3, 3);
  for (let i = 0; i < v.length; i++) {
    if (i % 5 === 1) v[i] = Math.round(v[i] * 4096) / 4096;
  }
  if (special && v.length > 40) {
    v[7] = NaN;
    v[19] = Infinity;
    v[23] = -Infinity;
    v[31] = 0;
    v[v.length - 2] = NaN;
  }
  if (layout !== "paddedPixels") return laidOut(v, shape, dtype, layout);
  // Storage [N, ...inner, C + 3] sliced to C channels: the pixel stride is not C.
  const r = shape.length;
  const C = shape[1];
  const stored = [shape[0], ...shape.slice(2), C + 3];
  const perm = [0, r - 1, ...Array.from({ length: r - 2 }, (_, i) => i + 1)];
  const t = Tensor.zeros(stored, dtype).slice(r - 1, 1, C + 1).permute(perm);
  t.copy_(v);
  return t;
}

/** C per-channel values in [low, high). */
function channels(C: number, seed: number, low = -1, high = 1): Tensor {
  return Tensor.fromArray(values(C, seed, low, high), [C], "float32");
}

/** An output in `layout`. */
function output(shape: readonly number[], dtype: DType, layout: WasmLayout): Tensor {
  const t = data(shape, dtype, layout, 0);
  return t.copy_(new Float64Array(numel(shape)));
}

// ---------------------------------------------------------------------------------------
// Scaled float16 (kernels.wat): the calls that must take the exact path

Deno.test("wasm float16: means, accumulators and constants that would not scale exactly take the exact path", () => {
  // The scaled path multiplies means and accumulators by 2^-112 (dots by 2^-224) and write
  // constants by 2^112. Each case below would lose a value that way (2^-1000 underflows to
  // 0 scaled down, 2^950 overflows to Inf scaled up), so only the exact path gives the
  // expected float64 results, worked out by hand.
  const w = codecInstance();
  const n = 64; // rows of 64; for the pixel kernels, 16 pixels of 4 channels
  const half = new Float16Array(w.memory.buffer);
  const f64 = new Float64Array(w.memory.buffer);
  const fill = (at: number, v: number) => half.fill(v, at >> 1, (at >> 1) + n);
  const outBits = () => Array.from(w.u16.subarray(w.outAt >> 1, (w.outAt >> 1) + n));
  const bitsOf = (v: number) => new Uint16Array(Float16Array.of(v).buffer)[0];
  const tiny = 2 ** -1000;
  const huge = 2 ** 950;
  const res = w.cst;

  fill(w.dyAt, 1);
  fill(w.xAt, 0);
  w.exports.row_sums(w.dyAt, w.xAt, n, 1, tiny, res);
  assert.deepEqual([f64[res >> 3], f64[(res >> 3) + 1]], [n, -n * tiny], "row_sums, tiny mean");
  w.exports.row_sums(w.dyAt, w.xAt, n, 1, 2 ** -100, res); // the scaled path, same bits
  assert.deepEqual([f64[res >> 3], f64[(res >> 3) + 1]], [n, -n * 2 ** -100], "row_sums");

  w.exports.row_normalize(w.xAt, w.outAt, n, 1, huge, 0.5);
  assert.deepEqual(outBits(), new Array(n).fill(bitsOf(0.5)), "row_normalize, huge scale");
  fill(w.dyAt, 0);
  w.exports.row_gradient(w.dyAt, w.xAt, w.outAt, n, 1, huge, huge, 0.25);
  assert.deepEqual(outBits(), new Array(n).fill(bitsOf(0.25)), "row_gradient, huge a, b");
  fill(w.outAt, 1);
  w.exports.row_scale(w.dyAt, w.outAt, n, 1, huge);
  assert.deepEqual(outBits(), new Array(n).fill(0), "row_scale, huge scale");

  const C = 4;
  const P = n / C;
  const acc = [tiny, 2 * tiny, 3 * tiny, 4 * tiny, -tiny, 5 * tiny, 0, 7 * tiny, 0, 0, 0, 0];
  f64.set(acc, res >> 3); // sums, dots (cs = 4 each), then zero means
  w.exports.pix_sums(w.dyAt, w.xAt, P, C, C, 1, res);
  assert.deepEqual(Array.from(f64.subarray(res >> 3, (res >> 3) + 12)), acc, "pix_sums");

  const constants = (values: number[][]) =>
    packConstants(f64, res >> 3, values.map((v) => Float64Array.from(v)), C);
  constants([[huge, huge, huge, huge], [0.5, 0.5, 0.5, 0.5]]);
  w.exports.pix_normalize(w.xAt, w.outAt, P, C, C, 1, res);
  assert.deepEqual(outBits(), new Array(n).fill(bitsOf(0.5)), "pix_normalize, huge scale");
  constants([[huge, 1, 1, 1], [1, huge, 1, 1], [0.25, 0.25, 0.25, 0.25]]);
  w.exports.pix_gradient(w.dyAt, w.xAt, w.outAt, P, C, C, 1, res);
  assert.deepEqual(outBits(), new Array(n).fill(bitsOf(0.25)), "pix_gradient, huge a, b");
  fill(w.outAt, 1);
  constants([[1, 1, huge, 1]]);
  w.exports.pix_scale(w.dyAt, w.outAt, P, C, C, 1, res);
  assert.deepEqual(outBits(), new Array(n).fill(0), "pix_scale, huge scale");
});

Deno.test("wasm float16: an Inf or NaN in either input of a kernel gives the exact results", () => {
  // The scaled decode reads exponent 31 as a finite value, so every call whose float16
  // inputs hold an Inf or a NaN must end on the exact path: the reductions run again after
  // their check, the writes check first. Each case puts one non-finite element in one
  // input only. With dy = 1 and x = 0 elsewhere, every finite result is exact in float64
  // whatever the association, so the expected values are plain arithmetic.
  const w = codecInstance();
  const n = 64; // rows of 64; for the pixel kernels, 16 pixels of 4 channels
  const half = new Float16Array(w.memory.buffer);
  const f64 = new Float64Array(w.memory.buffer);
  const res = w.cst;
  const C = 4;
  const P = n / C;
  const at = 4 * 3 + 2; // pixel 3, channel 2
  const fill = (dy: number, x: number) => {
    half.fill(1, w.dyAt >> 1, (w.dyAt >> 1) + n);
    half.fill(0, w.xAt >> 1, (w.xAt >> 1) + n);
    half[(w.dyAt >> 1) + at] = dy;
    half[(w.xAt >> 1) + at] = x;
  };
  const pair = () => [f64[res >> 3], f64[(res >> 3) + 1]];
  const outValues = () => Array.from(half.subarray(w.outAt >> 1, (w.outAt >> 1) + n));
  for (const bad of [Infinity, -Infinity, NaN]) {
    const tag = String(bad);
    // Non-finite x: dot = sum(dy * (x - 0)) takes it; non-finite dy: both sums do.
    fill(1, bad);
    w.exports.row_sums(w.dyAt, w.xAt, n, 1, 0, res);
    assert.deepEqual(pair(), [n, bad], `row_sums, x ${tag}`);
    fill(bad, 0);
    w.exports.row_sums(w.dyAt, w.xAt, n, 1, 0, res);
    assert.deepEqual(pair(), [bad, NaN], `row_sums, dy ${tag} (times x - mean = 0)`);
    fill(1, bad);
    w.exports.row_stats(w.xAt, n, 1, res);
    assert.deepEqual(pair(), [bad, NaN], `row_stats, x ${tag}`);

    // pix_sums adds to accumulators that are not zero: the exact run must start from them.
    const start = [1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0]; // sums, dots, means (cs = 4 each)
    fill(1, bad);
    f64.set(start, res >> 3);
    w.exports.pix_sums(w.dyAt, w.xAt, P, C, C, 1, res);
    assert.deepEqual(
      Array.from(f64.subarray(res >> 3, (res >> 3) + 8)),
      [17, 18, 19, 20, 5, 6, 7 + bad, 8],
      `pix_sums, x ${tag}`,
    );
    fill(bad, 0);
    f64.set(start, res >> 3);
    w.exports.pix_sums(w.dyAt, w.xAt, P, C, C, 1, res);
    assert.deepEqual(
      Array.from(f64.subarray(res >> 3, (res >> 3) + 8)),
      [17, 18, 19 + bad, 20, 5, 6, NaN, 8],
      `pix_sums, dy ${tag}`,
    );
    fill(1, bad);
    w.exports.pix_stats(w.xAt, P, C, C, 1, res);
    assert.deepEqual(
      Array.from(f64.subarray(res >> 3, (res >> 3) + 8)),
      [0, 0, bad, 0, 0, 0, NaN, 0],
      `pix_stats, x ${tag}`,
    );

    // Writes: out = dy * 1 + (x * 1 + 0) is dy + x, element by element.
    const sum = Array.from({ length: n }, (_, j) => j === at ? 1 + bad : 1);
    fill(1, bad);
    w.exports.row_gradient(w.dyAt, w.xAt, w.outAt, n, 1, 1, 1, 0);
    assert.deepEqual(outValues(), sum, `row_gradient, x ${tag}`);
    packConstants(
      f64,
      res >> 3,
      [[1, 1, 1, 1], [1, 1, 1, 1], [0, 0, 0, 0]].map((v) => Float64Array.from(v)),
      C,
    );
    w.exports.pix_gradient(w.dyAt, w.xAt, w.outAt, P, C, C, 1, res);
    assert.deepEqual(outValues(), sum, `pix_gradient, x ${tag}`);
    fill(bad, 0);
    w.exports.row_gradient(w.dyAt, w.xAt, w.outAt, n, 1, 1, 1, 0);
    assert.deepEqual(outValues(), sum, `row_gradient, dy ${tag}`);
  }
});

// ---------------------------------------------------------------------------------------
// Worker pool

Deno.test("wasm on the worker pool: the bits of an inline run without WebAssembly", async () => {
  const threads = cpuThreads();
  const shape = [4, 8, 90, 92]; // above the pooling threshold
  const [N, C] = shape;
  const HxW = 90 * 92;
  const geometry = channelGeometry(shape);
  try {
    for (const dtype of ["float16", "bfloat16", "float32"] as DType[]) {
      for (const layout of ["contiguous", "channelsLast"] as WasmLayout[]) {
        const cases: [KernelName, unknown, () => TensorSet][] = [
          [
            "batchNormBackward",
            { geometry, training: true, eps: 1e-5, mask: [true, true, true] },
            () => ({
              gradOut: data(shape, dtype, layout, 2, true),
              input: data(shape, dtype, layout, 1, true),
              weight: channels(C, 5),
              saveMean: channels(C, 3),
              saveInvstd: channels(C, 4, 0.5, 2),
              gradInput: output(shape, dtype, layout),
              gradWeight: Tensor.zeros([C]),
              gradBias: Tensor.zeros([C]),
            }),
          ],
          ["batchNorm", { geometry, training: true, momentum: 0.1, eps: 1e-5 }, () => ({
            input: data(shape, dtype, layout, 1),
            runningMean: channels(C, 3),
            runningVar: channels(C, 4, 0.5, 2),
            output: output(shape, dtype, layout),
            saveMean: Tensor.zeros([C]),
            saveInvstd: Tensor.zeros([C]),
          })],
          ["groupNormBackward", { N, C, HxW, group: 4, mask: [true, true, true] }, () => ({
            gradOut: data(shape, dtype, layout, 2),
            input: data(shape, dtype, layout, 1),
            mean: Tensor.fromArray(values(N * 4, 8), [N, 4]),
            rstd: Tensor.fromArray(values(N * 4, 9, 0.5, 2), [N, 4]),
            gradInput: output(shape, dtype, layout),
            gradGamma: Tensor.zeros([C]),
            gradBeta: Tensor.zeros([C]),
          })],
        ];
        for (const [kernel, plan, make] of cases) {
          const run = fastKernels[kernel] as (p: unknown, t: unknown) => void;
          const pooled = make();
          const alone = twinSet(pooled);
          setCpuThreads(2);
          // This checks the pooled runs themselves.
          await withCpuPolicy({ pool: "always" }, async () => {
            await startCpuPool();
            const jobs = pooledJobCount();
            run(plan, pooled);
            assert.ok(pooledJobCount() > jobs, `${kernel} ${dtype} ${layout} ran on the pool`);
          });
          setCpuThreads(1);
          withCpuPolicy({ wasm: false }, () => run(plan, alone));
          for (const [name, t] of Object.entries(pooled)) {
            if (t) assertSameValues(t, alone[name]!, `${kernel} ${dtype} ${layout} ${name}`);
          }
        }
      }
    }
  } finally {
    setCpuThreads(threads);
  }
});
