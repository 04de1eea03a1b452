/**
 * The CPU backend's WebAssembly SIMD kernels (src/backends/cpu/wasm/kernels.wat), in the
 * build this process runs (src/backends/cpu/wasm/kernels_module.ts: the baseline one, or the
 * FP16 one when the engine has the proposal; tests/cpu/wasm_fp16.test.ts runs this file
 * again in a child process started with --experimental-wasm-fp16):
 * - the committed modules are what `deno task build:wasm` builds from the .wat files now;
 * - the codecs the kernels load and store with: every float16 and bfloat16 pattern decodes
 *   exactly; float32 values round once to float16/bfloat16 exactly as a Float16Array store /
 *   numberToBf16 do (ties to even at every exponent, subnormals, overflow, NaN quiet with
 *   its sign);
 * - (the float32 kernels the operators run are tested against the oracle in
 *   tests/cpu/channel_kernels_*.test.ts and row_kernels.test.ts);
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
import { codecBits } from "../fixtures/codec_values.ts";
import { blockAt, instantiateWasm, wasmReserve, type WasmState } from "../fixtures/wasm_memory.ts";
import { cpuKernels } from "../../src/backends/cpu/mod.ts";
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

const CHUNK = 65536;

/** The build under test, named in the codec tests (the FP16 run looks for it). */
const BUILD = kernelsWasmBuild();

function codecInstance(): WasmState {
  const w = instantiateWasm(kernelsWasmBytes());
  assert.ok(w);
  wasmReserve(w, CHUNK, 4);
  return w;
}

/** Decodes `bits` (16-bit patterns, dt 1 or 2) through the kernels' load: float32 bits. */
function wasmDecode(w: WasmState, bits: Uint16Array, dt: number): Uint32Array {
  const out = new Uint32Array(bits.length);
  const u32 = new Uint32Array(w.memory.buffer);
  const [src, dst] = [blockAt(w, "x"), blockAt(w, "out")];
  for (let i = 0; i < bits.length; i += CHUNK) {
    const n = Math.min(CHUNK, bits.length - i);
    w.u16.set(bits.subarray(i, i + n), src >> 1);
    w.exports.decode(src, dst, (n + 3) & ~3, dt);
    out.set(u32.subarray(dst >> 2, (dst >> 2) + n), i);
  }
  return out;
}

/**
 * Rounds float32 values (given as bits) once to dt through the kernels' store: 16-bit
 * patterns, or float32 bits for dt 0.
 */
function wasmEncode(
  w: WasmState,
  v: Uint32Array,
  dt: number,
  codec: "encode" | "encode8" = "encode",
): Uint16Array | Uint32Array {
  const out = dt === 0 ? new Uint32Array(v.length) : new Uint16Array(v.length);
  const u32 = new Uint32Array(w.memory.buffer);
  const view = dt === 0 ? u32 : w.u16;
  const shift = dt === 0 ? 2 : 1;
  const [src, dst] = [blockAt(w, "x"), blockAt(w, "out")];
  for (let i = 0; i < v.length; i += CHUNK) {
    const n = Math.min(CHUNK, v.length - i);
    u32.set(v.subarray(i, i + n), src >> 2);
    w.exports[codec](src, dst, codec === "encode8" ? (n + 7) & ~7 : (n + 3) & ~3, dt);
    out.set(view.subarray(dst >> shift, (dst >> shift) + n) as never, i);
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
      if (f16[h] !== nan) assert.equal(f16[h], nan, `float16 NaN ${h.toString(16)}`);
    } else if (f16[h] !== expectedBits[h]) {
      assert.equal(f16[h], expectedBits[h], `float16 ${h.toString(16)}`);
    }
  }
  const bf16 = wasmDecode(w, bits, 2);
  for (let h = 0; h < 65536; h++) {
    if (bf16[h] !== (h << 16) >>> 0) assert.equal(bf16[h], (h << 16) >>> 0, `bfloat16 ${h}`);
  }
});

Deno.test(`wasm codecs (${BUILD} build): float32 rounds once to float16, bfloat16 (ties, subnormals, overflow, NaN)`, () => {
  const w = codecInstance();
  const v = codecBits();
  assert.ok(v.length > 1_000_000);
  const f16 = wasmEncode(w, v, 1) as Uint16Array;
  const bf16 = wasmEncode(w, v, 2) as Uint16Array;
  const f32 = wasmEncode(w, v, 0) as Uint32Array;
  const values = new Float32Array(v.buffer);
  const half = new Float16Array(1);
  const halfBits = new Uint16Array(half.buffer);
  let ties = 0;
  // Each assertion runs where the values differ (its message is built then, not 3 million
  // times).
  for (let i = 0; i < v.length; i++) {
    if (f32[i] !== v[i]) assert.equal(f32[i], v[i], "float32 is copied");
    if (Number.isNaN(values[i])) {
      // A quiet NaN with the value's sign: float16 0x7e00 (as V8's Float16Array stores
      // it), bfloat16 the top payload bits made quiet.
      const sign = v[i] >>> 31;
      const [h, b] = [sign ? 0xfe00 : 0x7e00, ((v[i] >>> 16) | 0x40) & 0xffff];
      if (f16[i] !== h) assert.equal(f16[i], h, `float16 of NaN ${v[i].toString(16)}`);
      if (bf16[i] !== b) assert.equal(bf16[i], b, `bfloat16 of NaN`);
      continue;
    }
    half[0] = values[i]; // one rounding, nearest even, from the float32 value
    if (f16[i] !== halfBits[0]) {
      assert.equal(f16[i], halfBits[0], `float16 of ${values[i]}: ${f16[i].toString(16)}`);
    }
    const b = numberToBf16(values[i]);
    if (bf16[i] !== b) assert.equal(bf16[i], b, `bfloat16 of ${values[i]}`);
    if (values[i] !== half[0] && Math.abs(values[i] - half[0]) === halfUlp(half[0]) / 2) ties++;
  }
  assert.ok(ties > 100_000, `float16 ties among the values: ${ties}`);
});

Deno.test(`wasm codecs (${BUILD} build): bfloat16 with no NaN constants (code 3) stores as code 2 does`, () => {
  // Code 3 (stage_types.ts BFLOAT16_NO_NAN_CONSTANTS) rounds without the NaN lanes' choice.
  // What a kernel of such a call can store: any non-NaN float32 value, and quiet NaNs whose
  // low 16 bits are zero (widened bfloat16 operands, made quiet by the arithmetic, and the
  // processor's default NaN). Over those, the bits of code 2.
  const w = codecInstance();
  const v = codecBits();
  const quietWidened = new Uint32Array(65536).map((_, h) => (h << 16 | 0x400000) >>> 0);
  const notNaN = notNaNBits(v);
  const storable = new Uint32Array(notNaN.length + quietWidened.length);
  storable.set(notNaN);
  storable.set(quietWidened, notNaN.length);
  const plain = wasmEncode(w, storable, 3) as Uint16Array;
  const checked = wasmEncode(w, storable, 2) as Uint16Array;
  let nans = 0;
  for (let i = 0; i < storable.length; i++) {
    if (plain[i] !== checked[i]) {
      assert.equal(plain[i], checked[i], `bfloat16 of ${storable[i].toString(16)}`);
    }
    if ((plain[i] & 0x7f80) === 0x7f80 && (plain[i] & 0x7f) !== 0) nans++;
  }
  assert.ok(nans >= 2 * 64, `quiet NaNs among the values: ${nans}`);
  // Why the drivers pass code 2 when a constant is NaN: a NaN with low payload bits (a
  // float32 weight's) carries into the exponent and comes out as -0.
  const [low] = wasmEncode(w, new Uint32Array([0x7fffffff]), 3) as Uint16Array;
  const [kept] = wasmEncode(w, new Uint32Array([0x7fffffff]), 2) as Uint16Array;
  assert.deepEqual([low, kept], [0x8000, 0x7fff]);
});

Deno.test(`wasm codecs (${BUILD} build): float16 in a write that computes no NaN (code 4) stores as code 1 does`, () => {
  // Code 4 (stage_types.ts FLOAT16_NO_NAN) skips the NaN lanes' choice: over every value
  // that is not NaN (ties, subnormals, overflow to Inf included), the bits of code 1.
  const w = codecInstance();
  const v = codecBits();
  const finite = notNaNBits(v);
  assert.ok(finite.length > 1_000_000);
  const plain = wasmEncode(w, finite, 4) as Uint16Array;
  const checked = wasmEncode(w, finite, 1) as Uint16Array;
  for (let i = 0; i < finite.length; i++) {
    if (plain[i] !== checked[i]) {
      assert.equal(plain[i], checked[i], `float16 of ${finite[i].toString(16)}`);
    }
  }
  // Its loads are float16's for every finite pattern (its data is finite: writeCode).
  const bits = new Uint16Array(65536).map((_, i) => i).filter((h) => (h & 0x7c00) !== 0x7c00);
  assert.equal(bits.length, 65536 - 2 * 1024);
  assert.deepEqual(wasmDecode(w, bits, 4), wasmDecode(w, bits, 1));
});

Deno.test(`wasm codecs (${BUILD} build): eight lanes at a time round as four, and four among normals as Float16Array`, () => {
  // The paired stores (kernels.wat $bits8: float16's one test of eight lanes for the normal
  // rounding alone) against the four-lane one the tests above hold to Float16Array: over the
  // values in order (lanes of one kind together), and each value in turn among seven float16
  // normals, at lane i % 8 (so that one lane out of range is all that sends a vector to the
  // full rounding).
  const w = codecInstance();
  const all = codecBits();
  const inOrder = all.subarray(0, all.length & ~7);
  const amongNormals = new Uint32Array(8 * all.length).fill(0x3fc00000); // 1.5
  for (let i = 0; i < all.length; i++) amongNormals[8 * i + (i & 7)] = all[i];
  for (const v of [inOrder, amongNormals]) {
    const finite = notNaNBits(v);
    const cases = [[1, v], [2, v], [4, finite.subarray(0, finite.length & ~7)]] as const;
    for (const [dt, values] of cases) {
      const four = wasmEncode(w, values, dt) as Uint16Array;
      const eight = wasmEncode(w, values, dt, "encode8") as Uint16Array;
      if (dt === 1 && v === amongNormals) expectFloat16(values, four); // the four-lane test too
      for (let i = 0; i < values.length; i++) {
        if (four[i] !== eight[i]) {
          assert.equal(eight[i], four[i], `dt ${dt}, eight lanes, of ${values[i].toString(16)}`);
        }
      }
    }
  }
});

/** Asserts that `bits` are `values` (float32 bits) rounded as V8's Float16Array rounds them. */
function expectFloat16(values: Uint32Array, bits: Uint16Array): void {
  const f32 = new Float32Array(values.buffer, values.byteOffset, values.length);
  const half = new Float16Array(1);
  const halfBits = new Uint16Array(half.buffer);
  for (let i = 0; i < values.length; i++) {
    half[0] = f32[i];
    const expected = Number.isNaN(f32[i]) ? (values[i] >>> 31 ? 0xfe00 : 0x7e00) : halfBits[0];
    if (bits[i] !== expected) {
      assert.equal(bits[i], expected, `float16 of ${values[i].toString(16)}`);
    }
  }
}

/**
 * The float32 bits of `v` that are not NaN, in order (a loop: TypedArray filter with a
 * callback took seconds over the codec values).
 */
function notNaNBits(v: Uint32Array): Uint32Array {
  const out = new Uint32Array(v.length);
  let n = 0;
  for (let i = 0; i < v.length; i++) {
    if ((v[i] & 0x7fffffff) <= 0x7f800000) out[n++] = v[i];
  }
  return out.slice(0, n);
}

/** The spacing of float16 values at h (finite): 2^-24 below 2^-14. */
function halfUlp(h: number): number {
  const a = Math.abs(h);
  return a < 2 ** -14 ? 2 ** -24 : 2 ** (Math.floor(Math.log2(a)) - 10);
}

// ---------------------------------------------------------------------------------------
// Kernels: the tensors of the worker pool's runs, and their comparison (same bits)

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
// Worker pool

Deno.test("wasm on the worker pool: the bits of the same run on the calling thread alone", async () => {
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
          const run = cpuKernels[kernel] as (p: unknown, t: unknown) => void;
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
          run(plan, alone);
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
