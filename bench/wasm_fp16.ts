/**
 * `deno task bench:fp16`: every kernel export of the WebAssembly kernels, that is every
 * operator stage the CPU backend runs (the row norms forward and backward; the BatchNorm
 * family's channel statistics, sums and normalize, gradient and scale writes, over NCHW rows
 * and channels-last pixels), float16 in the baseline build (kernels_wasm.ts) and in the FP16
 * build (kernels_fp16_wasm.ts), each against float32 in the baseline build: nanoseconds per
 * element on one thread, blocks of 4096 elements in cache (4 rows of 1024; 64 pixels of 64
 * channels), the rows interleaved in every round; each cell is the median over the rounds of
 * each round's median batch. The last line is the geometric mean over the kernels (issue
 * 37's targets: float16 at most 2.0x float32 in the baseline build, 1.25x in the FP16 build).
 * A second table times the channel writes again with the kernels' code 4 (the float16 writes
 * of training statistics and gradient sums, whose data is finite: no NaN choice in their loads
 * and stores; kernels/stage_types.ts FLOAT16_NO_NAN) beside code 1, over float32.
 *
 *   deno task bench:fp16 [--rounds 7] [--builds baseline,fp16]
 *
 * V8 keeps the FP16 proposal behind `--experimental-wasm-fp16`: when this engine rejects
 * the FP16 build, the script runs itself again in a child process (`Deno.execPath()`) with
 * that flag, and prints the child's table. `--builds baseline` times the baseline alone
 * (with `--no-child`, in this process).
 *
 * @module
 */

import { parseCommand, positiveInteger } from "../scripts/cli.ts";
import type { WasmState } from "../tests/fixtures/wasm_memory.ts";
import type { KernelCall } from "../tests/fixtures/kernel_calls.ts";

const flags = parseCommand({
  name: "bench:fp16",
  usage: `usage: deno task bench:fp16 [--rounds R] [--builds baseline,fp16] [--no-child]
  --rounds R     timed rounds, interleaved (default 7)
  --builds ...   which builds to time float16 in (default baseline,fp16)
  --no-child     do not start a child process with --experimental-wasm-fp16
  -h, --help     print this text`,
  options: {
    rounds: { type: "string", default: "7" },
    builds: { type: "string", default: "baseline,fp16" },
    "no-child": { type: "boolean", default: false },
  },
});
// The kernels load only after the checks above: --help and a bad flag answer without them.
const { kernelsWasmBytes } = await import("../src/backends/cpu/wasm/kernels_wasm.ts");
const { kernelsFp16WasmBytes } = await import("../src/backends/cpu/wasm/kernels_fp16_wasm.ts");
const { kernelCalls } = await import("../tests/fixtures/kernel_calls.ts");
const { ELEMENTS, K, median, nsPerElement, SHAPE, signalInstance } = await import(
  "./kernel_timing.ts"
);

/** A timed row: one kernel call on one instance. */
interface Row {
  readonly column: string;
  readonly call: KernelCall;
  readonly w: WasmState;
}

/** Per row, the median over `rounds` rounds (rows interleaved in each), after a warm-up. */
function measure(rows: readonly Row[], rounds: number): number[] {
  for (const row of rows) row.call.setup(row.w);
  const warmUntil = performance.now() + 1500;
  while (performance.now() < warmUntil) for (const row of rows) row.call.run(row.w);
  const samples = rows.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) {
    rows.forEach((row, i) => samples[i].push(nsPerElement(row.call, row.w)));
  }
  return samples.map(median);
}

const geomean = (v: number[]) => Math.exp(v.reduce((s, x) => s + Math.log(x), 0) / v.length);

/** The table of one process: every kernel, float32 (baseline) and float16 per build. */
function table(builds: string[], rounds: number): string {
  const bytes: Record<string, Uint8Array> = {
    baseline: kernelsWasmBytes(),
    fp16: kernelsFp16WasmBytes(),
  };
  const columns: { name: string; bytes: Uint8Array; dt: number }[] = [
    { name: "float32", bytes: bytes.baseline, dt: 0 },
    ...builds.map((b) => ({ name: `float16 ${b}`, bytes: bytes[b], dt: 1 })),
  ];
  const rows: Row[] = [];
  for (const { name, bytes, dt } of columns) {
    const w = signalInstance(bytes, dt);
    for (const call of kernelCalls(dt, SHAPE, K)) rows.push({ column: name, call, w });
  }
  const ns = measure(rows, rounds);
  const at = (kernel: string, column: string) =>
    ns[rows.findIndex((r) => r.call.kernel === kernel && r.column === column)];
  const kernels = kernelCalls(0, SHAPE, K);
  const header = ["stage", "layout", "kernel", ...columns.map((c) => c.name)];
  header.push(...builds.map((b) => `f16 ${b}/f32`));
  if (builds.length === 2) header.push("fp16/baseline");
  const widths = [20, 8, 15, ...header.slice(3).map((h) => Math.max(h.length + 2, 10))];
  const line = (cells: string[]) =>
    cells.map((c, i) => (i < 3 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("");
  const ratios = builds.map(() => [] as number[]);
  const between: number[] = [];
  const lines = [line(header)];
  for (const { kernel, stage, layout } of kernels) {
    const f32 = at(kernel, "float32");
    const f16 = builds.map((b) => at(kernel, `float16 ${b}`));
    f16.forEach((v, i) => ratios[i].push(v / f32));
    const cells = [stage, layout, kernel, ...[f32, ...f16].map((v) => v.toFixed(3))];
    cells.push(...f16.map((v) => `${(v / f32).toFixed(2)}x`));
    if (builds.length === 2) {
      between.push(f16[1] / f16[0]);
      cells.push(`${(f16[1] / f16[0]).toFixed(2)}x`);
    }
    lines.push(line(cells));
  }
  const summary = ["geometric mean", "", "", ...columns.map(() => "")];
  summary.push(...ratios.map((r) => `${geomean(r).toFixed(2)}x`));
  if (builds.length === 2) summary.push(`${geomean(between).toFixed(2)}x`);
  lines.push(line(summary));
  lines.push("", ...finiteWrites(builds, rounds, bytes));
  return lines.join("\n");
}

/**
 * The channel writes again in float16, with the kernels' code 4 (stage_types.ts FLOAT16_NO_NAN:
 * the writes of training statistics and gradient sums whose constants are finite and bounded,
 * without the NaN choice of their loads and stores) beside code 1, over float32 per build.
 */
function finiteWrites(
  builds: string[],
  rounds: number,
  bytes: Record<string, Uint8Array>,
): string[] {
  const writes = (dt: number) =>
    kernelCalls(dt, SHAPE, K).filter((c) => WRITE_KERNEL.test(c.kernel));
  const rows: Row[] = [];
  const w32 = signalInstance(bytes.baseline, 0);
  for (const call of writes(0)) rows.push({ column: "float32", call, w: w32 });
  for (const b of builds) {
    for (const dt of [1, 4]) {
      const w = signalInstance(bytes[b], 1);
      for (const call of writes(dt)) rows.push({ column: `${b} ${dt}`, call, w });
    }
  }
  const ns = measure(rows, rounds);
  const at = (kernel: string, column: string) =>
    ns[rows.findIndex((r) => r.call.kernel === kernel && r.column === column)];
  const out = ["float16 over float32, channel writes, code 1 and code 4 (finite data):"];
  const ratios = builds.map(() => [[] as number[], [] as number[]]);
  for (const { kernel } of writes(0)) {
    const f32 = at(kernel, "float32");
    const cells = builds.map((b, i) => {
      const [one, four] = [at(kernel, `${b} 1`) / f32, at(kernel, `${b} 4`) / f32];
      ratios[i][0].push(one);
      ratios[i][1].push(four);
      return `${b} ${one.toFixed(2)}x / ${four.toFixed(2)}x`;
    });
    out.push(`  ${kernel.padEnd(15)} ${cells.join("   ")}`);
  }
  const means = builds.map((b, i) =>
    `${b} ${geomean(ratios[i][0]).toFixed(2)}x / ${geomean(ratios[i][1]).toFixed(2)}x`
  );
  out.push(`  ${"geometric mean".padEnd(15)} ${means.join("   ")}`);
  return out;
}

/** The channel writes' kernels (the stores code 4 reaches). */
const WRITE_KERNEL = /^bn_(norm|grad|scale|swish)_(rows|pix)$/;

async function main(): Promise<void> {
  const rounds = positiveInteger("bench:fp16", "rounds", flags.rounds);
  const builds = flags.builds.split(",");
  for (const b of builds) if (b !== "baseline" && b !== "fp16") throw new Error(`--builds: ${b}`);
  const engineHasFp16 = WebAssembly.validate(kernelsFp16WasmBytes() as Uint8Array<ArrayBuffer>);
  if (engineHasFp16 || flags["no-child"] || !builds.includes("fp16")) {
    console.log(`Deno ${Deno.version.deno}, V8 ${Deno.version.v8}, ns/element, one thread`);
    console.log(
      `FP16 proposal: ${engineHasFp16 ? "on" : "off"} in this process; ` +
        `${rounds} interleaved rounds, medians; ${ELEMENTS} elements a call`,
    );
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
