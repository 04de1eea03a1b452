/**
 * `deno task bench:fp16`: every kernel of the WebAssembly kernels, float16, in the baseline
 * build (kernels_wasm.ts) and the FP16 build (kernels_fp16_wasm.ts) side by side, with the
 * baseline's float32 for reference: nanoseconds per element on one thread, blocks of 4096
 * elements in cache (rows of 4096; pixels: 64 of 64 channels), interleaved.
 *
 *   deno task bench:fp16 [--rounds 7] [--builds baseline,fp16]
 *
 * V8 keeps the FP16 proposal behind `--experimental-wasm-fp16`: when this engine rejects
 * the FP16 build, the script runs itself again in a child process (`Deno.execPath()`) with
 * that flag, and prints the child's table. `--builds baseline` times the baseline alone
 * (with `--no-child`, in this process: to compare with a process started with the flag).
 *
 * @module
 */

import { parseCommand } from "../scripts/cli.ts";
import { kernelsWasmBytes } from "../src/backends/cpu/wasm/kernels_wasm.ts";
import { kernelsFp16WasmBytes } from "../src/backends/cpu/wasm/kernels_fp16_wasm.ts";
import { instantiateWasm, wasmReserve, type WasmState } from "../tests/fixtures/wasm_memory.ts";
import { packConstants } from "../src/backends/cpu/kernels/wasm_instance.ts";

const flags = parseCommand({
  name: "bench:fp16",
  usage: `usage: deno task bench:fp16 [--rounds R] [--builds baseline,fp16] [--no-child]
  --rounds R     timed rounds (default 7)
  --builds ...   which builds to time (default baseline,fp16)
  --no-child     do not start a child process with --experimental-wasm-fp16
  -h, --help     print this text`,
  options: {
    rounds: { type: "string", default: "7" },
    builds: { type: "string", default: "baseline,fp16" },
    "no-child": { type: "boolean", default: false },
  },
});

const N = 4096;
const C = 64;
const P = N / C;
const K = [1.2345678912, 0.2345678913, -0.5];
const MEAN = 0.1;

/** A timed row: a kernel, a dtype, a build. */
interface Row {
  readonly kernel: string;
  readonly dt: number;
  readonly build: string;
  readonly run: () => void;
}

/** An instance with a smooth signal in dy and x (dtype dt) and the per-channel arrays set. */
function instance(bytes: Uint8Array, dt: number): WasmState {
  const w = instantiateWasm(bytes)!;
  wasmReserve(w, 2 * N, 256);
  const value = (i: number, phase: number) => Math.sin(i * 0.37 + phase) * 3;
  for (const [at, phase] of [[w.dyAt, 0], [w.xAt, 1]]) {
    if (dt === 0) {
      new Float32Array(w.memory.buffer, at, N).forEach((_, i, a) => a[i] = value(i, phase));
    } else new Float16Array(w.memory.buffer, at, N).forEach((_, i, a) => a[i] = value(i, phase));
  }
  const acc = w.cst >> 3;
  w.f64.fill(0, acc, acc + 5 * C);
  w.f64.fill(MEAN, acc + 2 * C, acc + 3 * C);
  const constants = K.map((k, j) => Float64Array.from({ length: C }, (_, c) => k + 0.01 * (c + j)));
  packConstants(w.f64, (w.cst >> 3) + 5 * C, constants, C);
  return w;
}

/** The calls of every kernel on instance w (dtype dt). */
function kernels(w: WasmState, dt: number): [string, () => void][] {
  const e = w.exports;
  const { dyAt: dy, xAt: x, outAt: out, cst: acc } = w;
  const cst = w.cst + 5 * C * 8;
  return [
    ["row_sums", () => e.row_sums(dy, x, N, dt, MEAN, acc)],
    ["row_stats", () => e.row_stats(x, N, dt, acc)],
    ["row_normalize", () => e.row_normalize(x, out, N, dt, K[0], K[1])],
    ["row_gradient", () => e.row_gradient(dy, x, out, N, dt, K[0], K[1], K[2])],
    ["row_scale", () => e.row_scale(dy, out, N, dt, K[0])],
    ["pix_sums", () => e.pix_sums(dy, x, P, C, C, dt, acc)],
    ["pix_stats", () => e.pix_stats(x, P, C, C, dt, acc)],
    ["pix_normalize", () => e.pix_normalize(x, out, P, C, C, dt, cst)],
    ["pix_gradient", () => e.pix_gradient(dy, x, out, P, C, C, dt, cst)],
    ["pix_scale", () => e.pix_scale(dy, out, P, C, C, dt, cst)],
  ];
}

/** Nanoseconds per element: the median of 15 timed batches of about 0.1 ms each. */
function time(run: () => void): number {
  const calls = Math.max(1, Math.round(100_000 / N));
  const samples: number[] = [];
  for (let r = 0; r < 15; r++) {
    const start = performance.now();
    for (let c = 0; c < calls; c++) run();
    samples.push((performance.now() - start) * 1e6 / (calls * N));
  }
  return samples.sort((a, b) => a - b)[7];
}

/** The lowest of `rounds` medians per row, the rows interleaved, after a warm-up. */
function measure(rows: readonly Row[], rounds: number): number[] {
  const warmUntil = performance.now() + 1500;
  while (performance.now() < warmUntil) for (const row of rows) row.run();
  const best = rows.map(() => Infinity);
  for (let r = 0; r < rounds; r++) {
    rows.forEach((row, i) => best[i] = Math.min(best[i], time(row.run)));
  }
  return best;
}

/** The table of one process: every kernel, float32 (baseline) and float16 per build. */
function table(builds: string[], rounds: number): string {
  const bytes: Record<string, Uint8Array> = {
    baseline: kernelsWasmBytes(),
    fp16: kernelsFp16WasmBytes(),
  };
  const rows: Row[] = [];
  const f32 = instance(bytes.baseline, 0);
  for (const [kernel, run] of kernels(f32, 0)) rows.push({ kernel, dt: 0, build: "baseline", run });
  for (const build of builds) {
    const w = instance(bytes[build], 1);
    for (const [kernel, run] of kernels(w, 1)) rows.push({ kernel, dt: 1, build, run });
  }
  const ns = measure(rows, rounds);
  const at = (kernel: string, dt: number, build: string) =>
    ns[rows.findIndex((r) => r.kernel === kernel && r.dt === dt && r.build === build)];
  const header = ["kernel", "float32", ...builds.map((b) => `float16 ${b}`)];
  if (builds.length === 2) header.push("fp16/baseline");
  header.push(...builds.map((b) => `f16/f32 ${b}`));
  const lines = [header.map((h, i) => i === 0 ? h.padEnd(14) : h.padStart(18)).join("")];
  for (const [kernel] of kernels(f32, 0)) {
    const f16 = builds.map((b) => at(kernel, 1, b));
    const cells = [at(kernel, 0, "baseline"), ...f16].map((v) => v.toFixed(3));
    if (builds.length === 2) cells.push(`${(f16[1] / f16[0]).toFixed(2)}x`);
    cells.push(...f16.map((v) => `${(v / at(kernel, 0, "baseline")).toFixed(2)}x`));
    lines.push(kernel.padEnd(14) + cells.map((c) => c.padStart(18)).join(""));
  }
  return lines.join("\n");
}

async function main(): Promise<void> {
  const rounds = Number(flags.rounds);
  const builds = flags.builds.split(",");
  for (const b of builds) if (b !== "baseline" && b !== "fp16") throw new Error(`--builds: ${b}`);
  const engineHasFp16 = WebAssembly.validate(kernelsFp16WasmBytes() as Uint8Array<ArrayBuffer>);
  if (engineHasFp16 || flags["no-child"] || !builds.includes("fp16")) {
    console.log(`Deno ${Deno.version.deno}, V8 ${Deno.version.v8}, ns/element, one thread`);
    console.log(`FP16 proposal: ${engineHasFp16 ? "on" : "off"} in this process`);
    console.log(table(builds, rounds));
    return;
  }
  console.log("(in a child process started with --experimental-wasm-fp16)");
  const child = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--v8-flags=--experimental-wasm-fp16",
      "--allow-read",
      new URL(import.meta.url).pathname,
      `--rounds=${rounds}`,
      `--builds=${flags.builds}`,
    ],
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!child.success) Deno.exit(1);
}

if (import.meta.main) await main();
