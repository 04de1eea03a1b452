/**
 * The text passes of the kernels' build (scripts/build_wasm.ts): functions spliced in from the
 * other .wat files and overridden by the FP16 build's, exports specialised by dtype, vector
 * constants moved to a table in memory. Each takes and returns WebAssembly text.
 *
 * @module
 */

import {
  WASM_CONSTANTS_AT,
  WASM_CONSTANTS_END,
} from "../src/backends/cpu/kernels/wasm_instance.ts";
import { HOST_HEAP_PAGES } from "../src/tensor/host_heap_size.ts";
import {
  BFLOAT16,
  BFLOAT16_NO_NAN_CONSTANTS,
  FLOAT16,
  FLOAT16_NO_NAN,
  FLOAT32,
} from "../src/backends/cpu/kernels/stage_types.ts";

/**
 * Replaces each function of kernels.wat named in `overrides` (a module of `(func $name ...)`
 * forms, comments allowed) by the one there: the FP16 build's conversion helpers. Each must
 * be defined in `text` exactly once; a name that is not is an error.
 */
export function overrideFunctions(text: string, overrides: string): string {
  let result = text;
  for (const at of funcStarts(overrides)) {
    const replacement = overrides.slice(at.start, formEnd(overrides, at.start));
    const found = funcStarts(result).filter((f) => f.name === at.name);
    if (found.length !== 1) {
      throw new Error(`override $${at.name}: ${found.length} definitions in kernels.wat`);
    }
    const { start } = found[0];
    result = result.slice(0, start) + replacement + result.slice(formEnd(result, start));
  }
  return result;
}

/**
 * kernels.wat's text with the functions of `extra` (a module of `(func ...)` forms, comments
 * allowed) added at the end of its module, so that they use its helpers and go through the
 * same passes. A name defined in both is an error.
 */
export function spliceFunctions(text: string, extra: string): string {
  const label = (form: string) =>
    /^\(func (?:\$(\w+)|\(export "(\w+)"\))/.exec(form)?.slice(1).join("");
  const known = new Set<string>();
  for (const m of text.matchAll(/^[ \t]*\(func[\s(]/gm)) {
    known.add(label(text.slice(m.index! + m[0].indexOf("("))) ?? "");
  }
  const forms: string[] = [];
  for (const m of extra.matchAll(/^[ \t]*\(func[\s(]/gm)) {
    const start = m.index! + m[0].indexOf("(");
    const form = extra.slice(start, formEnd(extra, start));
    const name = label(form);
    if (!name || known.has(name)) throw new Error(`splice ${name}: unnamed or already defined`);
    known.add(name);
    forms.push(`  ${form}`);
  }
  const close = text.lastIndexOf(")");
  return `${text.slice(0, close)}\n${forms.join("\n\n")}\n${text.slice(close)}`;
}

/** Where each `(func $name` of a module's text starts (outside comments). */
function funcStarts(text: string): { name: string; start: number }[] {
  const starts: { name: string; start: number }[] = [];
  for (const m of text.matchAll(/^[ \t]*\(func \$(\w+)[\s)]/gm)) {
    starts.push({ name: m[1], start: m.index! + m[0].indexOf("(") });
  }
  return starts;
}

/**
 * The end (exclusive) of the parenthesised form opening at `start`, skipping `;;` line
 * comments and strings (kernels.wat has no block comments; one is an error).
 */
function formEnd(text: string, start: number): number {
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (c === ";" && text[i + 1] === ";") {
      i = text.indexOf("\n", i) < 0 ? text.length : text.indexOf("\n", i);
    } else if (c === '"') i = text.indexOf('"', i + 1);
    else if (c === "(" && text[i + 1] === ";") throw new Error("block comments are not supported");
    else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i + 1;
  }
  throw new Error(`unbalanced form at ${start}`);
}

/**
 * The calls an optimised module's text (Binaryen's `emitText`) still makes from its exported
 * kernels, as "export k calls $f" findings: an export may call only functions that
 * `copyPattern` names (a glob, as Binaryen's `no-inline` pass takes it: the dtype copies of
 * {@linkcode specializeByDtype}), and those call nothing. A helper left as a function of its
 * own runs with its flags and dtype as run-time values: ln_bwd's rows, left so by an inlining
 * limit too low, took 1.21x (float32) and 1.29x (bfloat16) their inlined time
 * (bench/RESULTS.md, twenty-third session).
 */
export function callsLeft(text: string, copyPattern: string): string[] {
  const glob = copyPattern.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"));
  const isCopy = new RegExp(`^${glob.join(".*")}$`);
  const callees = new Map<string, Set<string>>();
  for (const { name, start } of funcStarts(text)) {
    const body = text.slice(start, formEnd(text, start));
    callees.set(name, new Set([...body.matchAll(/\(call \$(\w+)/g)].map((m) => m[1])));
  }
  const found: string[] = [];
  for (const [, kernel, fn] of text.matchAll(/\(export "(\w+)" \(func \$(\w+)\)\)/g)) {
    for (const callee of callees.get(fn) ?? []) {
      if (!isCopy.test(callee)) found.push(`export ${kernel} calls $${callee}`);
      for (const inner of isCopy.test(callee) ? callees.get(callee) ?? [] : []) {
        found.push(`export ${kernel}'s copy $${callee} calls $${inner}`);
      }
    }
  }
  return found;
}

/** The dtype codes a kernel's copies are made for (see {@linkcode specializeByDtype}). */
export const DTYPE_CODES: readonly number[] = [
  FLOAT32,
  FLOAT16,
  BFLOAT16,
  BFLOAT16_NO_NAN_CONSTANTS,
  FLOAT16_NO_NAN,
];

/** The dtype codes of bfloat16 (kernels.wat `$bits4`). */
const BFLOAT16_CODES: readonly number[] = [BFLOAT16, BFLOAT16_NO_NAN_CONSTANTS];

/**
 * The name pattern of the dtype copies {@linkcode specializeByDtype} makes, for Binaryen's
 * `no-inline` pass (build_wasm.ts `optimize`).
 */
export const DTYPE_COPY_PATTERN = "*__dt*";

/**
 * Specialises every exported kernel that takes the dtype code `$dt` (0 float32, 1 float16,
 * 2 bfloat16, 3 and 4 bfloat16 and float16 stored without the NaN lanes' choice: kernels.wat
 * `$bits4`) into one loop per code, without a dtype branch per vector (measured: bfloat16 row
 * sums 0.84 -> 0.63 ns per element), while kernels.wat keeps one body per kernel and the
 * drivers one export per kernel. `(func (export "k") ...)` becomes:
 * - `$k__any`, which a new export `k` with the same parameters calls with `$dt` as a constant
 *   (0, 2, 3, 4, and 1 for any other code); Binaryen inlines each call and folds the constant;
 * - or, where the kernel's body calls a function `$f` that has a bfloat16 variant `$f__bf16`
 *   (written, or cloned by {@linkcode withBfloat16Clones} for a helper that reaches one), five
 *   copies `$k__dt0` .. `$k__dt4`, each setting `$dt` to its code before its first
 *   instruction, the bfloat16 ones (2 and 3) calling `$f__bf16` in place of `$f`; the export
 *   calls the copy of its code. These copies stay functions of their own (never inlined:
 *   {@linkcode DTYPE_COPY_PATTERN}), so that the other dtypes' loops are optimised as they
 *   were: inlined together into one function, a bfloat16 change made Binaryen treat the
 *   float16 copy's locals differently (bn_scale_rows float16 1.06-1.10x slower), and copies
 *   of their own for every kernel moved others (float16 ln_fwd 1.04x, 1.14x in the FP16 build;
 *   bench/RESULTS.md, nineteenth session).
 */
export function specializeByDtype(source: string): string {
  const header = /\(func \(export "(\w+)"\)((?:\s*\(param \$\w+ \w+\))+)/g;
  const dispatchers: string[] = [];
  const { text, variants } = withBfloat16Clones(source);
  let out = "";
  let last = 0;
  for (const m of text.matchAll(header)) {
    const [match, name, params] = m;
    const names = [...params.matchAll(/\(param \$(\w+) \w+\)/g)].map((p) => p[1]);
    if (!names.includes("dt")) continue;
    const start = m.index!;
    const end = formEnd(text, start);
    const body = text.slice(start + match.length, end);
    const bfloat16Body = callBfloat16Variants(body, variants);
    out += text.slice(last, start);
    last = end;
    // The arguments of a call from the export: its own, or `$dt` as the constant `dt`.
    const args = (dt?: number) =>
      names.map((p) => p === "dt" && dt !== undefined ? `(i32.const ${dt})` : `(local.get $${p})`)
        .join(" ");
    let call: (dt: number) => string;
    if (bfloat16Body === body) {
      // One body for every code, inlined into the export with the code as a constant.
      out += `(func $${name}__any${params}${body}`;
      call = (dt) => `(call $${name}__any ${args(dt)})`;
    } else {
      const at = afterDeclarations(body);
      for (const dt of DTYPE_CODES) {
        const own = BFLOAT16_CODES.includes(dt) ? bfloat16Body : body;
        out += `(func $${name}__dt${dt}${params}${own.slice(0, at)}\n` +
          `    (local.set $dt (i32.const ${dt}))${own.slice(at)}\n  `;
      }
      call = (dt) => `(call $${name}__dt${dt} ${args()})`;
    }
    // Each code but float16's tested in turn; float16's copy takes any other.
    const tests = DTYPE_CODES.filter((dt) => dt !== FLOAT16).map((dt) => {
      const test = dt === FLOAT32
        ? "(i32.eqz (local.get $dt))"
        : `(i32.eq (local.get $dt) (i32.const ${dt}))`;
      return `    (if ${test} (then ${call(dt)} (return)))\n`;
    });
    dispatchers.push(
      `  (func (export "${name}")${params}\n${tests.join("")}    ${call(FLOAT16)})`,
    );
  }
  out += text.slice(last);
  const close = out.lastIndexOf(")");
  return `${out.slice(0, close)}\n${dispatchers.join("\n")}\n)\n`;
}

/**
 * `text` with a `__bf16` clone of every function that calls, directly or through others, a
 * function that has a bfloat16 variant `$f__bf16` (written in the .wat files), its calls made to
 * the variants and clones; and the names that have one (written or cloned). So a variant is
 * written once, where the loop differs, and the helpers between it and the kernels follow.
 */
function withBfloat16Clones(text: string): { text: string; variants: Set<string> } {
  const forms = new Map<string, string>();
  for (const at of funcStarts(text)) {
    forms.set(at.name, text.slice(at.start, formEnd(text, at.start)));
  }
  const variants = new Set([...forms.keys()].filter((name) => forms.has(`${name}__bf16`)));
  const written = new Set(variants);
  const calls = (form: string) => [...form.matchAll(/\(call \$(\w+)(?=[\s)])/g)].map((m) => m[1]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [name, form] of forms) {
      if (variants.has(name) || name.endsWith("__bf16")) continue;
      if (calls(form).some((callee) => variants.has(callee))) {
        variants.add(name);
        grew = true;
      }
    }
  }
  const clones: string[] = [];
  for (const name of variants) {
    if (written.has(name)) continue;
    const form = forms.get(name)!.replace(`(func $${name}`, `(func $${name}__bf16`);
    clones.push(`  ${callBfloat16Variants(form, variants)}`);
  }
  // The written variants' own calls follow too (a variant may call a helper that has one).
  let result = text;
  for (const name of written) {
    const form = forms.get(`${name}__bf16`)!;
    result = result.replace(form, callBfloat16Variants(form, variants));
  }
  const close = result.lastIndexOf(")");
  return {
    text: `${result.slice(0, close)}\n${clones.join("\n\n")}\n${result.slice(close)}`,
    variants,
  };
}

/** `body` with each call of a function named in `variants` made to its `__bf16` variant. */
function callBfloat16Variants(body: string, variants: ReadonlySet<string>): string {
  return body.replace(
    /\(call \$(\w+)(?=[\s)])/g,
    (call, name: string) => variants.has(name) ? `(call $${name}__bf16` : call,
  );
}

/**
 * The offset in a function's text after its header (`body`: what follows the parameters) past
 * its `(result ...)` and `(local ...)` declarations, where its first instruction may go.
 */
function afterDeclarations(body: string): number {
  let i = 0;
  for (;;) {
    const rest = body.slice(i).match(/^(\s|;;[^\n]*\n)*/)![0].length;
    if (!/^\((result|local)[\s)]/.test(body.slice(i + rest))) return i;
    i = formEnd(body, i + rest);
  }
}

/**
 * Moves every non-zero `v128.const` into a table in memory (an active data segment at
 * {@linkcode WASM_CONSTANTS_AT}) and reads it with `v128.load`. V8 rebuilds a vector constant
 * from general registers at each use inside a loop (it does not hoist it), which cost more
 * than the arithmetic: the float16 row sums ran at 2.7 ns per element with constants and
 * 1.1 ns with loads from the table (an L1 hit folded into the instruction). All-zero
 * constants stay, as V8 makes them with one `pxor`. The table's room is the drivers' layout
 * (`WASM_CONSTANTS_AT`/`WASM_CONSTANTS_END` in wasm_instance.ts).
 *
 * The table holds the constants of `tableText` (by default `text`) in order of first use,
 * and `text` may only use those: both builds pass the baseline's text followed by the FP16
 * build's overrides, so that both write the same table, and a memory that instances of both
 * share (the host heap) holds the constants each expects.
 */
export function constantsToMemory(text: string, tableText: string = text): string {
  const constant = /\(v128\.const (i32x4|f32x4) ([^)]*)\)/g;
  const nonZero = (lanes: string) => lanes.trim().split(/\s+/).some((v) => Number(v) !== 0);
  const table: string[] = [];
  const bytes: number[] = [];
  for (const [match, shape, lanes] of tableText.matchAll(constant)) {
    if (!nonZero(lanes) || table.includes(match)) continue;
    table.push(match);
    const lane = new DataView(new ArrayBuffer(16));
    lanes.trim().split(/\s+/).forEach((v, i) => {
      if (shape === "i32x4") lane.setUint32(4 * i, Number(v) >>> 0, true);
      else lane.setFloat32(4 * i, parseWatFloat(v), true);
    });
    bytes.push(...new Uint8Array(lane.buffer));
  }
  const replaced = text.replace(constant, (match: string, _shape: string, lanes: string) => {
    if (!nonZero(lanes)) return match;
    const index = table.indexOf(match);
    if (index < 0) throw new Error(`${match} is not in the constants table`);
    return `(v128.load offset=${WASM_CONSTANTS_AT + 16 * index} (i32.const 0))`;
  });
  if (WASM_CONSTANTS_AT + bytes.length > WASM_CONSTANTS_END) {
    throw new Error(`${table.length} vector constants overflow the table at ${WASM_CONSTANTS_AT}`);
  }
  const data = bytes.map((b) => `\\${b.toString(16).padStart(2, "0")}`).join("");
  const memory = `(import "env" "memory" (memory ${HOST_HEAP_PAGES} ${HOST_HEAP_PAGES} shared))`;
  if (!replaced.includes(memory)) {
    throw new Error(`kernels.wat does not import the host heap's memory: ${memory}`);
  }
  return replaced.replace(
    memory,
    () => `${memory}\n  (data (i32.const ${WASM_CONSTANTS_AT}) "${data}")`,
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
