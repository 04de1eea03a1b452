/**
 * Builds the CPU backend's WebAssembly SIMD kernels: specialises
 * `src/backends/cpu/wasm/kernels.wat` by dtype and moves its vector constants to memory
 * (text passes: wat_text.ts), assembles it with wabt (npm:wabt, the WebAssembly Binary Toolkit
 * compiled to JavaScript), optimises it with Binaryen (npm:binaryen, inlining every
 * helper), and writes the bytes, base64-encoded, into the generated module
 * `src/backends/cpu/wasm/kernels_wasm.ts`, which is committed: the published package needs
 * no build step, no wabt and no Binaryen at run time.
 *
 * A second build, for engines with the WebAssembly FP16 proposal, goes the same way from
 * kernels.wat with the float16 conversion helpers of `kernels_fp16.wat` in place of its own
 * ({@linkcode overrideFunctions}) and the proposal's opcodes written over placeholders
 * after Binaryen ({@linkcode FP16_OPCODES}), into `kernels_fp16_wasm.ts`; kernels_module.ts
 * picks one of the two at load time.
 *
 * ```sh
 * deno task build:wasm            # rewrite kernels_wasm.ts and kernels_fp16_wasm.ts
 * deno task build:wasm --check    # exit 1 when either is stale (writes nothing)
 * ```
 *
 * tests/cpu/wasm_kernels.test.ts rebuilds the modules' text the same way and requires it to
 * equal the committed files, so CI detects a .wat edited without a rebuild.
 *
 * @module
 */

import { parseCommand } from "./cli.ts";
import { forEachSimdOpcode, rewriteSimdOpcodes } from "./wasm_opcodes.ts";
import {
  callsLeft,
  constantsToMemory,
  DTYPE_COPY_PATTERN,
  overrideFunctions,
  specializeByDtype,
  spliceFunctions,
} from "./wat_text.ts";

/** The wabt release the kernels are assembled with (its output is the committed bytes). */
export const WABT_VERSION = "1.0.37";

/** The Binaryen release that optimises them (deno.json imports pins the same). */
export const BINARYEN_VERSION = "123.0.0";

/** The kernels' source, relative to the repository root. */
export const WAT_PATH = "src/backends/cpu/wasm/kernels.wat";

/** The generated module, relative to the repository root. */
export const MODULE_PATH = "src/backends/cpu/wasm/kernels_wasm.ts";

/**
 * The kernels (the row norms: LayerNorm, RMSNorm, forward then backward; the BatchNorm
 * family's channel kernels, which use the row norms' helpers), relative to the repository
 * root: modules of functions spliced, in this order, into kernels.wat's
 * ({@linkcode spliceFunctions}) before every other pass (kernels.wat holds the header, the
 * memory and the codecs).
 */
export const ROWS_WAT_PATHS: readonly string[] = [
  "src/backends/cpu/wasm/row_sums.wat",
  "src/backends/cpu/wasm/row_norms.wat",
  "src/backends/cpu/wasm/row_norms_grad.wat",
  "src/backends/cpu/wasm/row_norms_rms_grad.wat",
  "src/backends/cpu/wasm/row_norms_add.wat",
  "src/backends/cpu/wasm/row_norms_cast.wat",
  "src/backends/cpu/wasm/row_norms_ada.wat",
  "src/backends/cpu/wasm/row_norms_add_grad.wat",
  "src/backends/cpu/wasm/row_norms_ada_grad.wat",
  "src/backends/cpu/wasm/channel_norms.wat",
  "src/backends/cpu/wasm/channel_units.wat",
  "src/backends/cpu/wasm/channel_pixel_blocks.wat",
  "src/backends/cpu/wasm/channel_pixels.wat",
  "src/backends/cpu/wasm/channel_swish.wat",
  "src/backends/cpu/wasm/channel_swish_grad.wat",
];

/** The FP16 build's replacement functions, relative to the repository root. */
export const FP16_WAT_PATH = "src/backends/cpu/wasm/kernels_fp16.wat";

/** The FP16 build's generated module, relative to the repository root. */
export const FP16_MODULE_PATH = "src/backends/cpu/wasm/kernels_fp16_wasm.ts";

/**
 * The placeholders of kernels_fp16.wat (SIMD opcodes after the 0xfd prefix: i16x8.abs,
 * i16x8.neg) and the FP16 proposal's opcodes they stand for (f32x4.promote_low_f16x8,
 * f16x8.demote_f32x4_zero; V8's src/wasm/wasm-opcodes.h, F32x4PromoteLowF16x8 and
 * F16x8DemoteF32x4Zero). kernels.wat must not use the placeholders itself.
 */
export const FP16_OPCODES: ReadonlyMap<number, number> = new Map([[0x80, 0x14b], [0x81, 0x149]]);

/** The mnemonics of the placeholders in {@linkcode FP16_OPCODES}. */
const FP16_PLACEHOLDERS = ["i16x8.abs", "i16x8.neg"];

const root = new URL("../", import.meta.url);

/** Assembles WebAssembly text (with SIMD, relaxed SIMD and threads) to a binary module. */
export async function assemble(text: string, name = "kernels.wat"): Promise<Uint8Array> {
  const init = (await import("wabt")).default; // npm:wabt@1.0.37 (deno.json imports)
  const wabt = await init();
  const features = { simd: true, threads: true, relaxed_simd: true };
  const module = wabt.parseWat(name, text, features);
  try {
    // wabt's validate takes the features too (its .d.ts omits the argument): without
    // `threads` it rejects the shared memory the kernels import.
    (module.validate as (features: object) => void)(features);
    // With the functions' names, which Binaryen's `no-inline` pass matches (see optimize; the
    // optimised module it emits carries none).
    return new Uint8Array(module.toBinary({ write_debug_names: true }).buffer);
  } finally {
    module.destroy();
  }
}

/**
 * Optimises an assembled module with Binaryen (`-O3`, inlining every helper): kernels.wat
 * keeps its codecs and formulas as small functions, and V8 calls them as written (it does
 * not inline them), which measured 8x slower: the float32 row sums ran at 3.5 ns per element
 * as assembled and 0.45 ns inlined (Deno 2.9.6, AMD EPYC). Binaryen keeps IEEE semantics (no
 * fast-math), so the kernels keep their bits. Every helper is inlined except the kernels'
 * dtype copies (wat_text.ts `DTYPE_COPY_PATTERN`), which stay functions of their own; a
 * module whose exports still call anything else is an error (wat_text.ts `callsLeft`).
 */
export async function optimize(bytes: Uint8Array): Promise<Uint8Array> {
  const binaryen = (await import("binaryen")).default; // npm:binaryen (deno.json imports)
  const module = binaryen.readBinary(bytes);
  try {
    module.setFeatures(
      binaryen.Features.MVP | binaryen.Features.SIMD128 | binaryen.Features.Atomics |
        binaryen.Features.RelaxedSIMD,
    );
    binaryen.setOptimizeLevel(3);
    binaryen.setShrinkLevel(0);
    binaryen.setFastMath(false);
    binaryen.setAlwaysInlineMaxSize(INLINE_MAX_SIZE);
    binaryen.setFlexibleInlineMaxSize(INLINE_MAX_SIZE);
    binaryen.setOneCallerInlineMaxSize(INLINE_MAX_SIZE);
    binaryen.setPassArgument("no-inline", DTYPE_COPY_PATTERN);
    module.runPasses(["no-inline"]);
    module.optimize();
    if (!module.validate()) throw new Error("binaryen produced an invalid module");
    const left = callsLeft(module.emitText(), DTYPE_COPY_PATTERN);
    if (left.length > 0) {
      throw new Error(
        `Binaryen left helpers uninlined (raise INLINE_MAX_SIZE, or make the kernel smaller): ${
          left.join("; ")
        }`,
      );
    }
    return module.emitBinary();
  } finally {
    module.dispose();
  }
}

/**
 * Binaryen's inlining limit (in its size units): above every helper of kernels.wat and above
 * the rows' loops that a dispatcher calls with constant flags (row_norms_add_grad.wat
 * `$alb_rows`, row_norms_ada_grad.wat `$adg_rows`, about 5000-9000), so that each dtype's and
 * flags' copy folds its constants (at 4000 they stayed one function each with both as run-time
 * values: add_ln_bwd [64,768] float32 0.85 ns per element against 0.67 inlined; module 197 ->
 * 234 KB; bench/RESULTS.md, ninth session). 20000 since ln_bwd's rows hold two copies of their
 * gradInput loop (row_norms_grad.wat `$lnb_row_dx`, float16 loaded as found finite or not): at
 * 10000 `$lnb_rows` stayed a function called with its flags and dtype as run-time values,
 * 1.21x (float32) and 1.29x (bfloat16) ln_bwd's time (bench/RESULTS.md, twenty-third session).
 */
const INLINE_MAX_SIZE = 20000;

/** Base64 of `bytes` (RFC 4648, with padding). */
function base64(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(text);
}

/** How the two builds differ in their generated module's text. */
export interface ModuleFlavour {
  /** The sources, for the header comment. */
  readonly from: string;
  /** The module's JSDoc: the rest of its first line, then whole lines. */
  readonly doc: readonly string[];
  /** The binary's name in comments. */
  readonly file: string;
  /** The name of the exported base64 constant. */
  readonly constant: string;
  /** The name of the exported function that decodes it. */
  readonly bytesFunction: string;
}

/** The baseline build's generated module (kernels_wasm.ts). */
export const BASELINE_FLAVOUR: ModuleFlavour = {
  from: "kernels.wat",
  doc: [
    " (kernels.wat), assembled: the bytes each",
    " * thread instantiates when the engine has no FP16 conversions (see kernels_module.ts and",
    " * src/backends/cpu/kernels/wasm_kernels.ts).",
  ],
  file: "kernels.wasm",
  constant: "KERNELS_WASM_BASE64",
  bytesFunction: "kernelsWasmBytes",
};

/** The FP16 build's generated module (kernels_fp16_wasm.ts). */
export const FP16_FLAVOUR: ModuleFlavour = {
  from: "kernels.wat and kernels_fp16.wat",
  doc: [
    ", FP16 build (kernels.wat with the",
    " * float16 conversions of kernels_fp16.wat), assembled: the bytes each thread instantiates",
    " * when the engine validates them (see kernels_module.ts); same results as kernels_wasm.ts.",
  ],
  file: "kernels_fp16.wasm",
  constant: "KERNELS_FP16_WASM_BASE64",
  bytesFunction: "kernelsFp16WasmBytes",
};

/** The text of the generated module holding `bytes` (formatted as `deno fmt` leaves it). */
export function moduleText(
  bytes: Uint8Array,
  flavour: ModuleFlavour = BASELINE_FLAVOUR,
): string {
  const encoded = base64(bytes);
  const lines: string[] = [];
  for (let i = 0; i < encoded.length; i += 88) lines.push(`  "${encoded.slice(i, i + 88)}",`);
  return [
    `// Generated by \`deno task build:wasm\` (scripts/build_wasm.ts) from ${flavour.from} with`,
    `// npm:wabt@${WABT_VERSION} and npm:binaryen@${BINARYEN_VERSION}. Do not edit: edit the .wat`,
    "// and rebuild.",
    "",
    "/**",
    ` * The CPU backend's WebAssembly SIMD kernels${flavour.doc[0]}`,
    ...flavour.doc.slice(1),
    " *",
    " * @module",
    " */",
    "",
    `/** ${flavour.file} (${bytes.length} bytes), base64. */`,
    `export const ${flavour.constant}: string = [`,
    ...lines,
    '].join("");',
    "",
    `/** The bytes of ${flavour.file} (a fresh copy). */`,
    `export function ${flavour.bytesFunction}(): Uint8Array {`,
    `  const text = atob(${flavour.constant});`,
    "  const bytes = new Uint8Array(text.length);",
    "  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);",
    "  return bytes;",
    "}",
    "",
  ].join("\n");
}

/** How many times each SIMD opcode in `keys` occurs in the code of `bytes`. */
function countSimd(bytes: Uint8Array, keys: Iterable<number>): Map<number, number> {
  const counts = new Map<number, number>([...keys].map((k) => [k, 0]));
  forEachSimdOpcode(bytes, (op) => {
    if (counts.has(op)) counts.set(op, counts.get(op)! + 1);
  });
  return counts;
}

/**
 * The baseline build's bytes from kernels.wat's text; its constants table also holds those of
 * kernels_fp16.wat's text `overrides` (see {@linkcode constantsToMemory}).
 */
export async function buildBaseline(text: string, overrides: string): Promise<Uint8Array> {
  for (const name of FP16_PLACEHOLDERS) {
    if (text.includes(name)) throw new Error(`kernels.wat uses ${name}, an FP16 placeholder`);
  }
  const specialized = specializeByDtype(text);
  const bytes = await optimize(
    await assemble(constantsToMemory(specialized, `${specialized}\n${overrides}`)),
  );
  for (const [op, n] of countSimd(bytes, FP16_OPCODES.keys())) {
    if (n > 0) throw new Error(`Binaryen wrote the FP16 placeholder 0x${op.toString(16)}`);
  }
  return bytes;
}

/**
 * The FP16 build's bytes from kernels.wat's and kernels_fp16.wat's text: the overrides in
 * place, the baseline's constants table, and the placeholders rewritten (each must occur).
 */
export async function buildFp16(text: string, overrides: string): Promise<Uint8Array> {
  const merged = specializeByDtype(overrideFunctions(text, overrides));
  const table = `${specializeByDtype(text)}\n${overrides}`;
  const placeholders = await optimize(await assemble(constantsToMemory(merged, table)));
  const { bytes, counts } = rewriteSimdOpcodes(placeholders, FP16_OPCODES);
  for (const [op, n] of counts) {
    if (n === 0) throw new Error(`kernels_fp16.wat: no placeholder 0x${op.toString(16)} left`);
  }
  return bytes;
}

/**
 * kernels.wat with the kernels of {@linkcode ROWS_WAT_PATHS} spliced in, as in the
 * repository: the text {@linkcode buildBaseline} takes.
 */
export async function splicedKernels(): Promise<string> {
  let text = await Deno.readTextFile(new URL(WAT_PATH, root));
  for (const path of ROWS_WAT_PATHS) {
    text = spliceFunctions(text, await Deno.readTextFile(new URL(path, root)));
  }
  return text;
}

/** The sources in the repository now. */
async function sources(): Promise<{ text: string; overrides: string }> {
  return {
    text: await splicedKernels(),
    overrides: await Deno.readTextFile(new URL(FP16_WAT_PATH, root)),
  };
}

/** The generated module's text for the .wat in the repository now. */
export async function buildModuleText(): Promise<string> {
  const { text, overrides } = await sources();
  return moduleText(await buildBaseline(text, overrides));
}

/** The FP16 build's generated module text for the .wat files in the repository now. */
export async function buildFp16ModuleText(): Promise<string> {
  const { text, overrides } = await sources();
  return moduleText(await buildFp16(text, overrides), FP16_FLAVOUR);
}

/** Writes (or with `check`, compares) one generated module; false when stale in a check. */
async function update(path: string, expected: string, check: boolean): Promise<boolean> {
  const target = new URL(path, root);
  let current: string | undefined;
  try {
    current = await Deno.readTextFile(target);
  } catch {
    current = undefined;
  }
  if (current === expected) {
    console.log(`${path} is up to date`);
  } else if (check) {
    console.error(`${path} is stale: run \`deno task build:wasm\``);
    return false;
  } else {
    await Deno.writeTextFile(target, expected);
    console.log(`wrote ${path}`);
  }
  return true;
}

if (import.meta.main) {
  const flags = parseCommand({
    name: "build:wasm",
    usage: `usage: deno task build:wasm [-- --check]
  --check      exit 1 when a committed module differs from a rebuild (writes nothing)
  -h, --help   print this text`,
    options: { check: { type: "boolean", default: false } },
  });
  const check = flags.check;
  const fresh = [
    await update(MODULE_PATH, await buildModuleText(), check),
    await update(FP16_MODULE_PATH, await buildFp16ModuleText(), check),
  ];
  if (!fresh.every(Boolean)) Deno.exit(1);
}
