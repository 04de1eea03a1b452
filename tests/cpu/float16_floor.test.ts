/**
 * bench/float16_floor.ts is the evidence for what a float16 write can cost on this engine
 * (issue 9's float16 target), so its kernels must do what its table says: the float32-math
 * kernel rounds every one of the 65536 float16 inputs as Math.f16round does, the rebias-only
 * bound does so wherever the result is a normal float16, and (in a child process with
 * V8's --experimental-wasm-fp16) the FP16 proposal's kernel is checked the same way.
 */

import assert from "node:assert/strict";
import {
  checkFloat16,
  floorKernels,
  instantiate,
  newMemory,
  noTestBytes,
  runFp16Child,
  type Write,
} from "../../bench/float16_floor.ts";
import { kernelsWasmBytes } from "../../src/backends/cpu/wasm/kernels_wasm.ts";

Deno.test("float16 floor kernels round like Math.f16round (all 65536 inputs)", async () => {
  const memory = newMemory();
  const kernels = await floorKernels(memory);
  checkFloat16("float32 math", kernels.float16_float32_math as Write, memory);
  checkFloat16("rebias only", kernels.float16_rebias_only as Write, memory, true);
  assert.throws(
    () => checkFloat16("rebias only", kernels.float16_rebias_only as Write, memory),
    /rebias only: 0x/,
    "the rebias-only bound is wrong outside the normal range, as documented",
  );
});

Deno.test("float16 floor: the FP16 proposal kernel, in a child process with the V8 flag", async () => {
  const out = await runFp16Child(64, 1, "piped");
  const stderr = new TextDecoder().decode(out.stderr);
  assert.ok(out.success, `child failed: ${stderr}`);
  const { rows } = JSON.parse(new TextDecoder().decode(out.stdout));
  assert.deepEqual(rows.map((r: { name: string }) => r.name), [
    "float16 FP16 proposal",
    "library float16 FP16 build",
    "library float16 FP16 build no test",
  ]);
  for (const { name, ns } of rows) {
    assert.ok(ns > 0 && Number.isFinite(ns), `${name}: ns per element ${ns}`);
  }
});

Deno.test("float16 floor: the library without its exact-path test differs only where that test fires", async () => {
  // Both modules write y = x * s + t for all 65536 float16 x (row_normalize, dt 1); the
  // no-test build must agree wherever the result is a normal float16 and its nearest
  // float32 is not on a float16 tie (where rounding twice may differ from rounding once),
  // and must differ somewhere, or its row would not be the bound its doc says it is.
  const s = 1.2345678912, t = 0.2345678913, n = 65536, x = 1 << 16, out = 1 << 18;
  const written = (bytes: Uint8Array) => {
    const memory = newMemory();
    const e = instantiate(bytes, memory);
    new Uint16Array(memory.buffer, x, n).forEach((_, i, a) => a[i] = i);
    (e.row_normalize as (...a: number[]) => void)(x, out, n, 1, s, t);
    return new Uint16Array(memory.buffer, out, n).slice();
  };
  const library = written(kernelsWasmBytes());
  const noTest = written(await noTestBytes());
  const inputs = new Float16Array(new Uint16Array(n).map((_, i) => i).buffer);
  const results = new Float16Array(library.buffer);
  const f32 = new Float32Array(1), bits = new Uint32Array(f32.buffer);
  let differing = 0, ties = 0;
  for (let i = 0; i < n; i++) {
    const y = inputs[i] * s + t;
    const want = Math.f16round(y);
    f32[0] = y;
    const tie = (bits[0] & 0x1fff) === 0x1000;
    if (tie) ties++;
    assert.ok(Object.is(results[i], want) || Number.isNaN(want), `library at 0x${i.toString(16)}`);
    const normal = Math.abs(want) >= 2 ** -14 && Math.abs(want) <= 65504;
    if (normal && !tie) assert.equal(noTest[i], library[i], `no-test build at 0x${i.toString(16)}`);
    if (noTest[i] !== library[i]) differing++;
  }
  assert.ok(differing > 0, "the no-test build differs somewhere");
  assert.ok(ties > 0 && ties < 64, `float32 ties among the 65536 results: ${ties}`);
});
