/**
 * The vectorised 1 + exp(t) of the swish write and the swish gradient (channel_swish.wat
 * $cs_one_plus_exp4, through its test export cs_one_plus_exp_f32) against 1 + Math.exp(t), over
 * the float32 range that matters: a dense sweep of [-110, 95] (where 1 + exp(t) is 1, the
 * range between, overflow), every float32 exponent of both signs, the special values (+-inf,
 * +-0, the overflow edge 88.7228) and NaNs of every payload. The bounds are the file's
 * contract: 2 ulp relative where 1 + exp(t) is finite in float32, exactly +inf where exp(t)
 * overflows float32, exactly 1 below -86.5, NaN for NaN.
 */

import assert from "node:assert/strict";
import { kernelsWasmBytes } from "../../src/backends/cpu/wasm/kernels_module.ts";
import { blockAt, instantiateWasm, wasmReserve } from "../fixtures/wasm_memory.ts";

/** 1 + exp of every value (float32 bits given as numbers) through the kernel. */
function wasmOnePlusExp(values: Float32Array): Float32Array {
  const w = instantiateWasm(kernelsWasmBytes())!;
  const n = Math.ceil(values.length / 4) * 4;
  wasmReserve(w, n, 1);
  const at = blockAt(w, "x");
  new Float32Array(w.memory.buffer, at, n).set(values);
  (w.exports as unknown as { cs_one_plus_exp_f32(p: number, n: number): void })
    .cs_one_plus_exp_f32(at, n);
  return new Float32Array(w.memory.buffer, at, values.length).slice();
}

/** The contract's check of one result `got` for input `t` (a float32); its relative error. */
function checkOne(t: number, got: number): number {
  if (Number.isNaN(t)) {
    assert.ok(Number.isNaN(got), `1 + exp(NaN) = ${got}`);
    return 0;
  }
  if (Math.fround(Math.exp(t)) === Infinity) {
    assert.equal(got, Infinity, `1 + exp(${t}) overflows`);
    return 0;
  }
  if (t < -86.5) {
    assert.equal(got, 1, `1 + exp(${t}) is 1`);
    return 0;
  }
  const want = 1 + Math.exp(t);
  const rel = Math.abs(got - want) / want;
  assert.ok(rel <= 2 ** -22, `1 + exp(${t}) = ${got}, want ${want} (relative error ${rel})`);
  return rel;
}

Deno.test("wasm 1 + exp: a dense sweep of [-110, 95] within the contract", () => {
  const xs: number[] = [];
  for (let x = -110; x <= 95; x += 0.001953125 * 1.37) xs.push(x);
  const input = new Float32Array(xs);
  const got = wasmOnePlusExp(input);
  let worst = 0;
  input.forEach((t, i) => worst = Math.max(worst, checkOne(t, got[i])));
  // The scheme is better than its bound in practice (about 1 ulp): a broken polynomial is not.
  assert.ok(worst < 2 ** -22 && worst > 2 ** -26, `worst relative error ${worst}`);
});

Deno.test("wasm 1 + exp: every exponent, the edges and the special values", () => {
  const xs: number[] = [
    Infinity,
    -Infinity,
    0,
    -0,
    88.72283,
    88.7229,
    88.72284,
    88.7228393554,
    89,
    89.5,
    -86.5,
    -86.6,
    -16.6,
    -16.7,
    1e-30,
    -1e-30,
    1,
    -1,
    0.34657359,
    -0.34657359,
  ];
  for (let e = -149; e < 128; e++) xs.push(2 ** e, -(2 ** e), 1.5 * 2 ** e);
  const input = new Float32Array(xs);
  const got = wasmOnePlusExp(input);
  input.forEach((t, i) => checkOne(t, got[i]));
  assert.deepEqual([...got.subarray(0, 4)], [Infinity, 1, 2, 2]);
});

Deno.test("wasm 1 + exp: NaN of every sign and of payloads across all 23 bits is NaN", () => {
  const bits = new Uint32Array(2 * 24 * 2);
  let i = 0;
  for (const sign of [0, 0x80000000]) {
    for (let b = 0; b < 23; b++) {
      bits[i++] = (sign | 0x7f800000 | (1 << b)) >>> 0; // quiet from bit 22, signalling below
      bits[i++] = (sign | 0x7fc00000 | ((1 << b) - 1)) >>> 0;
    }
    bits[i++] = (sign | 0x7fffffff) >>> 0;
    bits[i++] = (sign | 0x7fc001ff) >>> 0;
  }
  const input = new Float32Array(bits.buffer);
  const got = wasmOnePlusExp(input);
  bits.forEach((b, k) => assert.ok(Number.isNaN(got[k]), `bits 0x${b.toString(16)}`));
});
