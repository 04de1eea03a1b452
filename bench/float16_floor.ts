/**
 * `deno task bench:float16`: how fast a float16 write can be in WebAssembly on this engine,
 * against the library's float32 write, side by side in one run (issue 9's float16 target,
 * "float16 rows no slower than 1.25x the same op in float32").
 *
 *   deno task bench:float16 [--n 4096] [--rounds 7]
 *
 * Each kernel writes y = x * s + t over n elements in cache (the library's blocks are 4096
 * elements), and the table gives nanoseconds per element (the lowest of the rounds'
 * medians) and the ratio to the library's float32 write:
 * - `library float32|float16|bfloat16`: the shipped module's row_normalize (float64
 *   arithmetic, one rounding to the output type; float16 through its scaled path);
 * - `library float16 no test`: the same kernel built from the library's sources with
 *   bench/float16_no_test.wat's `$inexact`, a test that never sends a vector to the exact
 *   conversion (wrong for ties, subnormal, overflowing and NaN results): what any cheaper
 *   test could at most save, with the float64 arithmetic kept;
 * - `float16 float32 math` (bench/float16_floor.wat): float32 arithmetic and a branch-free
 *   correct float16 conversion, checked here on all 65536 float16 inputs: what giving up
 *   the float64 arithmetic would buy (measured: nothing, the library's conversion is faster);
 * - `float16 rebias only`: only the rebias, rounding and sign of that conversion (wrong for
 *   zero, subnormal, overflowing and NaN results): a bound below any conversion built from
 *   integer operations on the bits, correct or not;
 * - `float16 no encode`: float16 in, float32 out, to show where the time goes;
 * - `float16 FP16 proposal` (bench/float16_fp16.wat): the hardware conversions of the
 *   WebAssembly FP16 proposal. V8 keeps them behind `--experimental-wasm-fp16`; when this
 *   engine rejects them, the row comes from a child process (`Deno.execPath()`) started with
 *   that flag, which a library cannot set for its users;
 * - `library float16 FP16 build [no test]` (child): the library's FP16 build
 *   (kernels_fp16.wat), alone and with the no-test `$inexact`: what the test costs there.
 *
 * @module
 */

import { parseCommand } from "../scripts/cli.ts";
import {
  assemble,
  buildBaseline,
  buildFp16,
  constantsToMemory,
  FP16_WAT_PATH,
  optimize,
  overrideFunctions,
  splicedKernels,
} from "../scripts/build_wasm.ts";
import { kernelsWasmBytes } from "../src/backends/cpu/wasm/kernels_wasm.ts";

const flags = parseCommand({
  name: "bench:float16",
  usage: `usage: deno task bench:float16 [--n N] [--rounds R]
  --n N        elements per block, a multiple of 4 from 4 to 65536 (default 4096)
  --rounds R   timed rounds (default 7)
  -h, --help   print this text`,
  options: {
    n: { type: "string", default: "4096" },
    rounds: { type: "string", default: "7" },
    "fp16-child": { type: "boolean", default: false },
  },
});

/** A write kernel's signature: (x, out, n, s, t), byte addresses, n a multiple of 4. */
export type Write = (x: number, out: number, n: number, s: number, t: number) => void;

const N = Number(flags.n);
if (!Number.isInteger(N) || N < 4 || N % 4 !== 0 || N > 65536) {
  throw new RangeError(`--n: a multiple of 4 from 4 to 65536, got ${flags.n}`);
}
/** Input and output, apart by an odd number of cache lines (no 4 KiB aliasing). */
const X = 1 << 16, OUT = (1 << 19) + 1088;
const S = 1.2345678912, T = 0.2345678913;
const FP16_OPCODES: ReadonlyArray<readonly [number[], number[]]> = [
  [[0xfd, 0x80, 0x01], [0xfd, 0xcb, 0x02]], // i16x8.abs -> f32x4.promote_low_f16x8
  [[0xfd, 0x81, 0x01], [0xfd, 0xc9, 0x02]], // i16x8.neg -> f16x8.demote_f32x4_zero
];

/** A shared memory like the library's, for one instance. */
export function newMemory(): WebAssembly.Memory {
  return new WebAssembly.Memory({ initial: 32, maximum: 65536, shared: true });
}

/** An instance of the module `bytes` on `memory`, its exports. */
export function instantiate(bytes: Uint8Array, memory: WebAssembly.Memory): WebAssembly.Exports {
  return new WebAssembly.Instance(new WebAssembly.Module(bytes as BufferSource), {
    env: { memory },
  }).exports;
}

async function readWat(name: string): Promise<string> {
  return await Deno.readTextFile(new URL(name, import.meta.url));
}

/** The FP16 module's bytes: the placeholders rewritten, each found exactly once. */
async function fp16Bytes(): Promise<Uint8Array> {
  const bytes = Array.from(await assemble(await readWat("float16_fp16.wat"), "float16_fp16.wat"));
  for (const [from, to] of FP16_OPCODES) {
    const at: number[] = [];
    for (let i = 0; i + from.length <= bytes.length; i++) {
      if (from.every((b, k) => bytes[i + k] === b)) at.push(i);
    }
    if (at.length !== 1) throw new Error(`float16_fp16.wat: ${at.length} placeholders ${from}`);
    bytes.splice(at[0], from.length, ...to);
  }
  return new Uint8Array(bytes);
}

/** Fills the input with every float16 pattern in turn (n of them, from `first`). */
function fillPatterns(memory: WebAssembly.Memory, first: number, n: number): void {
  const u16 = new Uint16Array(memory.buffer, X, n);
  for (let i = 0; i < n; i++) u16[i] = (first + i) & 0xffff;
}

/** Fills the input with n values of a smooth signal in dtype 0 (float32), 1 or 2. */
function fillSignal(memory: WebAssembly.Memory, dt: number, n: number): void {
  const value = (i: number) => Math.sin(i * 0.37) * 3;
  if (dt === 0) new Float32Array(memory.buffer, X, n).forEach((_, i, a) => a[i] = value(i));
  else if (dt === 1) new Float16Array(memory.buffer, X, n).forEach((_, i, a) => a[i] = value(i));
  else {
    const f = new Float32Array(1), u = new Uint32Array(f.buffer);
    const u16 = new Uint16Array(memory.buffer, X, n);
    for (let i = 0; i < n; i++) {
      f[0] = value(i);
      u16[i] = u[0] >>> 16; // truncation is fine for timing input
    }
  }
}

/**
 * Checks a float16 write on all 65536 inputs against Math.f16round of the float32
 * arithmetic (NaN against NaN); `normalOnly` skips results outside [2^-14, 65504].
 */
export function checkFloat16(
  name: string,
  write: Write,
  memory: WebAssembly.Memory,
  normalOnly = false,
): void {
  const block = 4096;
  const s = Math.fround(S), t = Math.fround(T);
  for (let first = 0; first < 65536; first += block) {
    fillPatterns(memory, first, block);
    write(X, OUT, block, S, T);
    const x = new Float16Array(memory.buffer, X, block);
    const y = new Float16Array(memory.buffer, OUT, block);
    for (let i = 0; i < block; i++) {
      const want = Math.f16round(Math.fround(Math.fround(x[i] * s) + t));
      if (normalOnly && !(Math.abs(want) >= 2 ** -14 && Math.abs(want) <= 65504)) continue;
      if (!(Object.is(y[i], want) || (Number.isNaN(y[i]) && Number.isNaN(want)))) {
        throw new Error(`${name}: 0x${(first + i).toString(16)} gave ${y[i]}, want ${want}`);
      }
    }
  }
}

/** Nanoseconds per element: the median of 15 timed batches of about 0.1 ms each. */
function time(write: Write): number {
  const calls = Math.max(1, Math.round(100_000 / N));
  const samples: number[] = [];
  for (let r = 0; r < 15; r++) {
    const start = performance.now();
    for (let c = 0; c < calls; c++) write(X, OUT, N, S, T);
    samples.push((performance.now() - start) * 1e6 / (calls * N));
  }
  return samples.sort((a, b) => a - b)[7];
}

/** A timed row: its kernel, the dtype its input is filled with, and its own memory. */
interface Row {
  readonly name: string;
  readonly write: Write;
  readonly dt: number;
  readonly memory: WebAssembly.Memory;
}

/** Times the rows interleaved, `rounds` times after a warm-up (V8 tiers up in background). */
function measure(rows: readonly Row[], rounds: number): number[] {
  for (const row of rows) fillSignal(row.memory, row.dt, N);
  const warmUntil = performance.now() + 1000;
  while (performance.now() < warmUntil) for (const row of rows) row.write(X, OUT, N, S, T);
  const best = rows.map(() => Infinity);
  for (let r = 0; r < rounds; r++) {
    rows.forEach((row, i) => best[i] = Math.min(best[i], time(row.write)));
  }
  return best;
}

function fp16Row(exports: WebAssembly.Exports, memory: WebAssembly.Memory): Row {
  const write = exports.float16_fp16 as Write;
  checkFloat16("float16 FP16 proposal", write, memory);
  return { name: "float16 FP16 proposal", write, dt: 1, memory };
}

/**
 * Runs this script's FP16 rows in a child process with V8's `--experimental-wasm-fp16`
 * (`--fp16-child`: it checks the proposal's kernel, then prints `{"rows": [{"name", "ns"}]}`:
 * that kernel, the library's FP16 build and that build with the no-test `$inexact`).
 */
export async function runFp16Child(
  n: number,
  rounds: number,
  stderr: "inherit" | "piped",
): Promise<Deno.CommandOutput> {
  return await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--v8-flags=--experimental-wasm-fp16",
      `--config=${new URL("../deno.json", import.meta.url).pathname}`,
      "--allow-read",
      new URL(import.meta.url).pathname,
      "--fp16-child",
      `--n=${n}`,
      `--rounds=${rounds}`,
    ],
    stderr,
  }).output();
}

/** bench/float16_floor.wat's kernels, built as the library's module is, on `memory`. */
export async function floorKernels(memory: WebAssembly.Memory): Promise<WebAssembly.Exports> {
  const text = constantsToMemory(await readWat("float16_floor.wat"));
  return instantiate(await optimize(await assemble(text, "float16_floor.wat")), memory);
}

/** The library's module with bench/float16_no_test.wat's `$inexact` in place of its own. */
export async function noTestBytes(): Promise<Uint8Array> {
  return await buildBaseline(
    overrideFunctions(await splicedKernels(), await readWat("float16_no_test.wat")),
  );
}

/** A row timing row_normalize of a build of the library's module (`bytes`) on dtype dt. */
function library(dt: number, bytes = kernelsWasmBytes(), suffix = ""): Row {
  const memory = newMemory();
  const e = instantiate(bytes, memory);
  const normalize = e.row_normalize as (...a: number[]) => void;
  const name = `library ${["float32", "float16", "bfloat16"][dt]}${suffix}`;
  return { name, write: (x, out, n, s, t) => normalize(x, out, n, dt, s, t), dt, memory };
}

/** The library's FP16 build (with kernels_fp16.wat), with or without the no-test `$inexact`. */
async function fp16LibraryBytes(noTest: boolean): Promise<Uint8Array> {
  const text = await splicedKernels();
  const overrides = await Deno.readTextFile(new URL(`../${FP16_WAT_PATH}`, import.meta.url));
  return await buildFp16(
    noTest ? overrideFunctions(text, await readWat("float16_no_test.wat")) : text,
    overrides,
  );
}

async function main(): Promise<void> {
  const rounds = Number(flags.rounds);
  const fp16 = await fp16Bytes();
  if (flags["fp16-child"]) {
    const memory = newMemory();
    const fp16Rows = [
      fp16Row(instantiate(fp16, memory), memory),
      library(1, await fp16LibraryBytes(false), " FP16 build"),
      library(1, await fp16LibraryBytes(true), " FP16 build no test"),
    ];
    const ns = measure(fp16Rows, rounds);
    console.log(
      JSON.stringify({ rows: fp16Rows.map((row, i) => ({ name: row.name, ns: ns[i] })) }),
    );
    return;
  }
  const floorMemory = newMemory();
  const floor = await floorKernels(floorMemory);
  /** A row of bench/float16_floor.wat, checked first (`normalOnly`: see checkFloat16). */
  const floorRow = (name: string, kernel: string, normalOnly = false): Row => {
    const write = floor[kernel] as Write;
    checkFloat16(name, write, floorMemory, normalOnly);
    return { name, write, dt: 1, memory: floorMemory };
  };
  const rows = [
    library(0),
    library(1),
    library(2),
    library(1, await noTestBytes(), " no test"),
    floorRow("float16 float32 math", "float16_float32_math"),
    floorRow("float16 rebias only", "float16_rebias_only", true),
    {
      name: "float16 no encode",
      write: floor.float16_no_encode as Write,
      dt: 1,
      memory: floorMemory,
    },
  ];
  const engineHasFp16 = WebAssembly.validate(fp16 as BufferSource);
  if (engineHasFp16) {
    const memory = newMemory();
    rows.push(fp16Row(instantiate(fp16, memory), memory));
  }
  const results = measure(rows, rounds).map((ns, i) => ({ name: rows[i].name, ns }));
  let fp16Note = "";
  if (!engineHasFp16) {
    const child = await runFp16Child(N, rounds, "inherit");
    if (child.success) {
      const { rows } = JSON.parse(new TextDecoder().decode(child.stdout)) as {
        rows: { name: string; ns: number }[];
      };
      for (const { name, ns } of rows) results.push({ name: `${name} (child)`, ns });
      fp16Note = "the FP16 rows ran in a child process started with --experimental-wasm-fp16";
    } else fp16Note = "the FP16 child process failed; no FP16 rows";
  }
  console.log(`Deno ${Deno.version.deno}, V8 ${Deno.version.v8}, n = ${N}, ${rounds} rounds`);
  console.log(`${"kernel".padEnd(42)} ${"ns/element".padStart(10)}  vs library float32`);
  for (const { name, ns } of results) {
    const ratio = (ns / results[0].ns).toFixed(2);
    console.log(`${name.padEnd(42)} ${ns.toFixed(3).padStart(10)}  ${ratio}x`);
  }
  if (fp16Note) console.log(fp16Note);
}

if (import.meta.main) await main();
