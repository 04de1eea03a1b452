/**
 * Builds the CPU backend's WebAssembly SIMD kernels: specialises
 * `src/backends/cpu/wasm/kernels.wat` by dtype and moves its vector constants to memory
 * (text passes below), assembles it with wabt (npm:wabt, the WebAssembly Binary Toolkit
 * compiled to JavaScript), optimises it with Binaryen (npm:binaryen, inlining every
 * helper), and writes the bytes, base64-encoded, into the generated module
 * `src/backends/cpu/wasm/kernels_wasm.ts`, which is committed: the published package needs
 * no build step, no wabt and no Binaryen at run time.
 *
 * ```sh
 * deno task build:wasm            # rewrite kernels_wasm.ts
 * deno task build:wasm --check    # exit 1 when kernels_wasm.ts is stale (writes nothing)
 * ```
 *
 * tests/cpu_wasm_kernels.test.ts rebuilds the module text the same way and requires it to
 * equal the committed file, so CI detects a .wat edited without a rebuild.
 *
 * @module
 */

import {
  WASM_CONSTANTS_AT,
  WASM_CONSTANTS_END,
} from "../src/backends/cpu/fast/kernels/wasm_kernels.ts";

/** The wabt release the kernels are assembled with (its output is the committed bytes). */
export const WABT_VERSION = "1.0.37";

/** The Binaryen release that optimises them (deno.json imports pins the same). */
export const BINARYEN_VERSION = "123.0.0";

/** The kernels' source, relative to the repository root. */
export const WAT_PATH = "src/backends/cpu/wasm/kernels.wat";

/** The generated module, relative to the repository root. */
export const MODULE_PATH = "src/backends/cpu/wasm/kernels_wasm.ts";

const root = new URL("../", import.meta.url);

/** Assembles WebAssembly text (with SIMD) to a binary module. */
export async function assemble(text: string, name = "kernels.wat"): Promise<Uint8Array> {
  const init = (await import("wabt")).default; // npm:wabt@1.0.37 (deno.json imports)
  const wabt = await init();
  const features = { simd: true, threads: true };
  const module = wabt.parseWat(name, text, features);
  try {
    // wabt's validate takes the features too (its .d.ts omits the argument): without
    // `threads` it rejects the shared memory the kernels import.
    (module.validate as (features: object) => void)(features);
    return new Uint8Array(module.toBinary({}).buffer);
  } finally {
    module.destroy();
  }
}

/**
 * Specialises every exported kernel that takes the dtype code `$dt` (0 float32, 1 float16,
 * 2 bfloat16): `(func (export "k") ...)` becomes the internal `$k__any`, and a new export
 * `k` with the same parameters calls it with `$dt` as a constant. Once Binaryen inlines
 * `$k__any` into each call it folds the constant, so every dtype gets its own loop without
 * a dtype branch per vector (measured: bfloat16 row sums 0.84 -> 0.63 ns per element),
 * while kernels.wat keeps one body per kernel and the drivers one export per kernel.
 *
 * float16 has two copies: the scaled path (`$dt` 1) when the kernel's predicate
 * `$k__scaled16` (same parameters, in kernels.wat) holds for the call, then the exact path
 * (`$dt` 3) again when its redo test `$k__redo16` holds after it (an Inf or NaN found in
 * the inputs), else the exact path alone; kernels.wat explains why both give the same bits.
 * A kernel without its predicate or its redo test is an error.
 */
export function specializeByDtype(text: string): string {
  const header = /\(func \(export "(\w+)"\)((?:\s*\(param \$\w+ \w+\))+)/g;
  const dispatchers: string[] = [];
  const renamed = text.replace(header, (match: string, name: string, params: string) => {
    const names = [...params.matchAll(/\(param \$(\w+) \w+\)/g)].map((m) => m[1]);
    if (!names.includes("dt")) return match;
    for (const hook of ["scaled16", "redo16"]) {
      if (!text.includes(`(func $${name}__${hook}`)) {
        throw new Error(`kernels.wat: ${name} takes $dt but has no $${name}__${hook}`);
      }
    }
    const args = (dt?: number) =>
      names.map((p) => p === "dt" && dt !== undefined ? `(i32.const ${dt})` : `(local.get $${p})`)
        .join(" ");
    const call = (dt: number) => `(call $${name}__any ${args(dt)})`;
    const done = `(if (i32.eqz (call $${name}__redo16 ${args()})) (then (return)))`;
    dispatchers.push(
      `  (func (export "${name}")${params}\n` +
        `    (if (i32.eqz (local.get $dt)) (then ${call(0)} (return)))\n` +
        `    (if (i32.eq (local.get $dt) (i32.const 2)) (then ${call(2)} (return)))\n` +
        `    (if (call $${name}__scaled16 ${args()})\n` +
        `      (then ${call(1)} ${done}))\n` +
        `    ${call(3)})`,
    );
    return `(func $${name}__any${params}`;
  });
  const close = renamed.lastIndexOf(")");
  return `${renamed.slice(0, close)}\n${dispatchers.join("\n")}\n)\n`;
}

/**
 * Moves every non-zero `v128.const` into a table in memory (an active data segment at
 * {@linkcode WASM_CONSTANTS_AT}) and reads it with `v128.load`. V8 rebuilds a vector constant
 * from general registers at each use inside a loop (it does not hoist it), which cost more
 * than the arithmetic: the float16 row sums ran at 2.7 ns per element with constants and
 * 1.1 ns with loads from the table (an L1 hit folded into the instruction). All-zero
 * constants stay, as V8 makes them with one `pxor`. The table's room is the drivers' layout
 * (`WASM_CONSTANTS_AT`/`WASM_CONSTANTS_END` in wasm_kernels.ts).
 */
export function constantsToMemory(text: string): string {
  const constant = /\(v128\.const (i32x4|f32x4) ([^)]*)\)/g;
  const table: string[] = [];
  const bytes: number[] = [];
  const replaced = text.replace(constant, (match: string, shape: string, lanes: string) => {
    const values = lanes.trim().split(/\s+/);
    if (values.every((v) => Number(v) === 0)) return match;
    let index = table.indexOf(match);
    if (index < 0) {
      index = table.push(match) - 1;
      const lane = new DataView(new ArrayBuffer(16));
      values.forEach((v, i) => {
        if (shape === "i32x4") lane.setUint32(4 * i, Number(v) >>> 0, true);
        else lane.setFloat32(4 * i, parseWatFloat(v), true);
      });
      bytes.push(...new Uint8Array(lane.buffer));
    }
    return `(v128.load offset=${WASM_CONSTANTS_AT + 16 * index} (i32.const 0))`;
  });
  if (WASM_CONSTANTS_AT + bytes.length > WASM_CONSTANTS_END) {
    throw new Error(`${table.length} vector constants overflow the table at ${WASM_CONSTANTS_AT}`);
  }
  const data = bytes.map((b) => `\\${b.toString(16).padStart(2, "0")}`).join("");
  const memory = /\(import "env" "memory" \(memory \d+ \d+ shared\)\)/;
  if (!memory.test(replaced)) throw new Error("kernels.wat imports no shared memory");
  return replaced.replace(
    memory,
    (m) => `${m}\n  (data (i32.const ${WASM_CONSTANTS_AT}) "${data}")`,
  );
}

/** A float32 lane of WebAssembly text: decimal, or hexadecimal like `0x1p112`. */
function parseWatFloat(text: string): number {
  const hex = /^([+-]?)0x([0-9a-f]+)(?:\.([0-9a-f]*))?p([+-]?\d+)$/i.exec(text);
  if (!hex) {
    const value = Number(text);
    if (Number.isNaN(value)) throw new Error(`unsupported float constant ${text}`);
    return value;
  }
  const [, sign, whole, fraction = "", exponent] = hex;
  const mantissa = parseInt(whole + fraction, 16) / 16 ** fraction.length;
  return (sign === "-" ? -1 : 1) * mantissa * 2 ** Number(exponent);
}

/**
 * Optimises an assembled module with Binaryen (`-O3`, inlining every helper): kernels.wat
 * keeps its codecs and formulas as small functions, and V8 calls them as written (it does
 * not inline them), which measured 8x slower: the float32 row sums ran at 3.5 ns per element
 * as assembled and 0.45 ns inlined (Deno 2.9.6, AMD EPYC). Binaryen keeps IEEE semantics (no
 * fast-math), so the kernels keep their bits; the tests compare them with the TypeScript
 * kernels after this step.
 */
export async function optimize(bytes: Uint8Array): Promise<Uint8Array> {
  const binaryen = (await import("binaryen")).default; // npm:binaryen (deno.json imports)
  const module = binaryen.readBinary(bytes);
  try {
    module.setFeatures(
      binaryen.Features.MVP | binaryen.Features.SIMD128 | binaryen.Features.Atomics,
    );
    binaryen.setOptimizeLevel(3);
    binaryen.setShrinkLevel(0);
    binaryen.setFastMath(false);
    binaryen.setAlwaysInlineMaxSize(INLINE_MAX_SIZE);
    binaryen.setFlexibleInlineMaxSize(INLINE_MAX_SIZE);
    binaryen.setOneCallerInlineMaxSize(INLINE_MAX_SIZE);
    module.optimize();
    if (!module.validate()) throw new Error("binaryen produced an invalid module");
    return module.emitBinary();
  } finally {
    module.dispose();
  }
}

/** Binaryen's inlining limit (in its size units): above every helper of kernels.wat. */
const INLINE_MAX_SIZE = 4000;

/** Base64 of `bytes` (RFC 4648, with padding). */
function base64(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(text);
}

/** The text of the generated module holding `bytes` (formatted as `deno fmt` leaves it). */
export function moduleText(bytes: Uint8Array): string {
  const encoded = base64(bytes);
  const lines: string[] = [];
  for (let i = 0; i < encoded.length; i += 88) lines.push(`  "${encoded.slice(i, i + 88)}",`);
  return [
    "// Generated by `deno task build:wasm` (scripts/build_wasm.ts) from kernels.wat with",
    `// npm:wabt@${WABT_VERSION} and npm:binaryen@${BINARYEN_VERSION}. Do not edit: edit kernels.wat`,
    "// and rebuild.",
    "",
    "/**",
    " * The CPU backend's WebAssembly SIMD kernels (kernels.wat), assembled: the bytes each",
    " * thread instantiates (see src/backends/cpu/fast/kernels/wasm_kernels.ts).",
    " *",
    " * @module",
    " */",
    "",
    `/** kernels.wasm (${bytes.length} bytes), base64. */`,
    "export const KERNELS_WASM_BASE64: string = [",
    ...lines,
    '].join("");',
    "",
    "/** The bytes of kernels.wasm (a fresh copy). */",
    "export function kernelsWasmBytes(): Uint8Array {",
    "  const text = atob(KERNELS_WASM_BASE64);",
    "  const bytes = new Uint8Array(text.length);",
    "  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);",
    "  return bytes;",
    "}",
    "",
  ].join("\n");
}

/** The generated module's text for the .wat in the repository now. */
export async function buildModuleText(): Promise<string> {
  const text = await Deno.readTextFile(new URL(WAT_PATH, root));
  return moduleText(await optimize(await assemble(constantsToMemory(specializeByDtype(text)))));
}

if (import.meta.main) {
  const expected = await buildModuleText();
  const target = new URL(MODULE_PATH, root);
  let current: string | undefined;
  try {
    current = await Deno.readTextFile(target);
  } catch {
    current = undefined;
  }
  if (Deno.args.includes("--check")) {
    if (current !== expected) {
      console.error(`${MODULE_PATH} is stale: run \`deno task build:wasm\``);
      Deno.exit(1);
    }
    console.log(`${MODULE_PATH} is up to date`);
  } else if (current === expected) {
    console.log(`${MODULE_PATH} is up to date`);
  } else {
    await Deno.writeTextFile(target, expected);
    console.log(`wrote ${MODULE_PATH}`);
  }
}
