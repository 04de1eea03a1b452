/**
 * The build's dtype copies (scripts/wat_text.ts `specializeByDtype`, scripts/build_wasm.ts
 * `optimize`): every exported kernel with a `$dt` parameter becomes one function per dtype code,
 * each with its code as a constant; the bfloat16 copies call a helper's `__bf16` variant where
 * one exists; and Binaryen keeps the copies as functions of their own. Checked on a small module
 * assembled and optimised as the kernels are, by what its export returns for each code.
 *
 * @module
 */

import assert from "node:assert/strict";
import { assemble, optimize } from "../../scripts/build_wasm.ts";
import {
  callsLeft,
  DTYPE_CODES,
  DTYPE_COPY_PATTERN,
  specializeByDtype,
} from "../../scripts/wat_text.ts";
import { forEachSection } from "../../src/backends/cpu/kernels/wasm_binary.ts";

/**
 * A kernel whose result says which helper ran and with which code: `$scale` returns 10 * dt,
 * its bfloat16 variant 1000 + 10 * dt; the kernel adds its `$x` and stores the sum at 0. A
 * kernel that reaches `$scale` through another helper (`$through`, which the build clones for
 * bfloat16; stored at 8), and a kernel whose helper has no variant (2 * dt + x, stored at 4).
 */
const MODULE = `(module
  (memory (export "memory") 1)
  (func $scale (param $dt i32) (result i32) (i32.mul (local.get $dt) (i32.const 10)))
  (func $scale__bf16 (param $dt i32) (result i32)
    (i32.add (i32.const 1000) (i32.mul (local.get $dt) (i32.const 10))))
  (func (export "kernel") (param $x i32) (param $dt i32)
    (local $t i32)
    (local.set $t (call $scale (local.get $dt)))
    (i32.store (i32.const 0) (i32.add (local.get $t) (local.get $x))))
  (func $through (param $dt i32) (result i32) (i32.add (call $scale (local.get $dt)) (i32.const 1)))
  (func (export "indirect") (param $x i32) (param $dt i32)
    (i32.store (i32.const 8) (i32.add (call $through (local.get $dt)) (local.get $x))))
  (func $twice (param $dt i32) (result i32) (i32.shl (local.get $dt) (i32.const 1)))
  (func (export "plain") (param $x i32) (param $dt i32)
    (i32.store (i32.const 4) (i32.add (call $twice (local.get $dt)) (local.get $x))))
)
`;

Deno.test("dtype copies: one function per code where a variant is called, a constant in each", () => {
  const text = specializeByDtype(MODULE);
  for (const dt of DTYPE_CODES) {
    assert.match(text, new RegExp(`\\(func \\$kernel__dt${dt} \\(param \\$x i32\\)`));
    assert.ok(text.includes(`(local.set $dt (i32.const ${dt}))`), `copy ${dt} sets its code`);
  }
  // The local declaration stays ahead of the first instruction (the text format's rule).
  assert.match(text, /\(local \$t i32\)\s*\n\s*\(local\.set \$dt \(i32\.const 0\)\)/);
  assert.equal([...text.matchAll(/\(func \(export "kernel"\)/g)].length, 1);
  // A kernel that calls no variant keeps one body, called with each code as a constant.
  assert.ok(!text.includes("$plain__dt"));
  assert.match(text, /\(call \$plain__any \(local\.get \$x\) \(i32\.const 3\)\)/);
});

Deno.test("dtype copies: the bfloat16 codes call the __bf16 variant, the others the helper", async () => {
  const bytes = await optimize(await assemble(specializeByDtype(MODULE), "copies.wat"));
  const module = new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>);
  const instance = new WebAssembly.Instance(module);
  const kernel = instance.exports.kernel as (x: number, dt: number) => void;
  const memory = new Int32Array((instance.exports.memory as WebAssembly.Memory).buffer);
  const got = (dt: number) => (kernel(7, dt), memory[0]);
  assert.deepEqual(DTYPE_CODES.map(got), [7, 17, 1027, 1037, 47]);
  assert.equal(got(9), 17, "any other code runs float16's copy");
  const plain = instance.exports.plain as (x: number, dt: number) => void;
  assert.deepEqual(DTYPE_CODES.map((dt) => (plain(7, dt), memory[1])), [7, 9, 11, 13, 15]);
  const indirect = instance.exports.indirect as (x: number, dt: number) => void;
  const through = DTYPE_CODES.map((dt) => (indirect(7, dt), memory[2]));
  assert.deepEqual(through, [8, 18, 1028, 1038, 48], "the helper between follows the variant");
});

Deno.test("dtype copies: Binaryen keeps each copy a function of its own", async () => {
  const bytes = await optimize(await assemble(specializeByDtype(MODULE), "copies.wat"));
  let defined = -1;
  forEachSection(bytes, (id, r) => {
    if (id === 3) defined = r.u32(); // the function section: how many functions are defined
  });
  // The three exports and the five copies of each of the two that reach the variant; the
  // helpers and the third one's body inlined.
  assert.equal(defined, 3 + 2 * DTYPE_CODES.length);
});

Deno.test("dtype copies: an export may call its copies only, and they nothing", () => {
  // Binaryen's emitted text, cut down: kernel k calls its two copies (allowed), kernel h a
  // helper left as a function, and kernel c a copy that calls that helper.
  const text = `(module
 (export "k" (func $k))
 (export "h" (func $3))
 (export "c" (func $c))
 (func $k (param $0 i32)
  (if (local.get $0) (then (call $k__dt0 (local.get $0))) (else (call $k__dt1 (local.get $0)))))
 (func $k__dt0 (param $0 i32) (drop (local.get $0)))
 (func $k__dt1 (param $0 i32) (drop (local.get $0)))
 (func $3 (param $0 i32) (call $rows (local.get $0) (i32.const 3)))
 (func $rows (param $0 i32) (param $1 i32) (drop (local.get $1)))
 (func $c (param $0 i32) (call $c__dt2 (local.get $0)))
 (func $c__dt2 (param $0 i32) (call $rows (local.get $0) (local.get $0)))
)`;
  assert.deepEqual(callsLeft(text, DTYPE_COPY_PATTERN), [
    "export h calls $rows",
    "export c's copy $c__dt2 calls $rows",
  ]);
});

Deno.test("dtype copies: optimize refuses a module whose copy calls a function", async () => {
  // Both helpers are named as copies, so Binaryen keeps them (its no-inline pass): the
  // export's call is allowed, the copy's call is not.
  const text = `(module
  (memory (export "memory") 1)
  (func $a__dt7 (param $v i32) (result i32) (i32.add (local.get $v) (i32.const 1)))
  (func $b__dt7 (param $v i32) (result i32) (i32.mul (call $a__dt7 (local.get $v)) (i32.const 3)))
  (func (export "k") (param $x i32) (i32.store (i32.const 0) (call $b__dt7 (local.get $x))))
)`;
  await assert.rejects(
    optimize(await assemble(text, "left.wat")),
    /export k's copy \$b__dt7 calls \$a__dt7/,
  );
});
