/**
 * The vectorised float32 exp of the swish write (channel_swish.wat $cs_exp4, through its test
 * export cs_exp_f32) against Math.exp rounded to float32, over the float32 range that matters:
 * a dense sweep of [-110, 95] (normal results, the subnormal range, overflow and underflow),
 * every float32 exponent of both signs, and the special values (NaN, +-inf, +-0, the edges
 * 88.7228 and -103.973). The bounds are the file's contract: 2 ulp relative for a normal
 * result, one subnormal ulp (2^-149) absolute below 2^-126, exactly +inf past overflow and +0
 * past underflow, NaN for NaN.
 */

import assert from "node:assert/strict";
import { kernelsWasmBytes } from "../../src/backends/cpu/wasm/kernels_module.ts";
import { blockAt, instantiateWasm, wasmReserve } from "../fixtures/wasm_memory.ts";

const MIN_NORMAL = 2 ** -126;
const SUBNORMAL_ULP = 2 ** -149;

/** exp of every value (float32) through the kernel. */
function wasmExp(values: readonly number[]): Float32Array {
  const w = instantiateWasm(kernelsWasmBytes())!;
  const n = Math.ceil(values.length / 4) * 4;
  wasmReserve(w, n, 1);
  const at = blockAt(w, "x");
  const view = new Float32Array(w.memory.buffer, at, n);
  view.set(values);
  (w.exports as unknown as { cs_exp_f32(p: number, n: number): void }).cs_exp_f32(at, n);
  return new Float32Array(w.memory.buffer, at, values.length).slice();
}

/** The contract's error check of one result `got` for input `x` (a float32). */
function checkOne(x: number, got: number): void {
  const want = Math.fround(Math.exp(x));
  if (Number.isNaN(x)) return assert.ok(Number.isNaN(got), `exp(NaN) = ${got}`);
  if (want === Infinity) return assert.equal(got, Infinity, `exp(${x}) overflows`);
  if (Math.exp(x) < SUBNORMAL_ULP / 2) return assert.equal(got, 0, `exp(${x}) underflows to 0`);
  if (want < MIN_NORMAL) {
    assert.ok(Math.abs(got - Math.exp(x)) <= SUBNORMAL_ULP, `exp(${x}) = ${got}, want ${want}`);
    return;
  }
  const rel = Math.abs(got - Math.exp(x)) / Math.exp(x);
  assert.ok(rel <= 2 ** -22, `exp(${x}) = ${got}, want ${want} (relative error ${rel})`);
}

Deno.test("wasm exp: a dense sweep of [-110, 95] within the contract", () => {
  const xs: number[] = [];
  for (let x = -110; x <= 95; x += 0.001953125 * 1.37) xs.push(Math.fround(x));
  const got = wasmExp(xs);
  let worst = 0;
  xs.forEach((x, i) => {
    checkOne(x, got[i]);
    const e = Math.exp(x);
    if (e >= MIN_NORMAL && Number.isFinite(Math.fround(e))) {
      worst = Math.max(worst, Math.abs(got[i] - e) / e);
    }
  });
  // The scheme is better than its bound in practice (about 1 ulp): a broken polynomial is not.
  assert.ok(worst < 2 ** -22 && worst > 0, `worst relative error ${worst}`);
});

Deno.test("wasm exp: every exponent, the edges and the special values", () => {
  const xs: number[] = [
    NaN,
    Infinity,
    -Infinity,
    0,
    -0,
    88.72283,
    88.7229,
    88.72284,
    -87.33654,
    -87.3366,
    -103.97,
    -103.98,
    -103.2789,
    1e-30,
    -1e-30,
    1,
    -1,
    0.34657359,
    -0.34657359,
  ];
  for (let e = -149; e < 128; e++) xs.push(2 ** e, -(2 ** e), Math.fround(1.5 * 2 ** e));
  const input = xs.map(Math.fround);
  const got = wasmExp(input);
  input.forEach((x, i) => checkOne(x, got[i]));
  assert.equal(got[3], 1);
  assert.equal(got[4], 1);
  assert.equal(got[1], Infinity);
  assert.equal(got[2], 0);
});
