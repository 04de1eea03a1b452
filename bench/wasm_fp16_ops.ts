/**
 * The operators (bench/cpu_cases.ts, as `deno task bench:cpu` times them: outputs allocated
 * by the call, the result disposed) in float32 and float16, with the baseline build of the
 * WebAssembly kernels and with the FP16 build, in one process: every round times each case
 * with one build, then at once with the other (the pool restarted in between), and the
 * table keeps each case's lowest median. One process, so both builds meet the same machine, and the
 * float16/float32 ratios of each build and the FP16/baseline ratio of float16 are not
 * process-to-process noise.
 *
 *   deno run --allow-read --allow-run bench/wasm_fp16_ops.ts [--rounds 3] [--threads 2]
 *       [--ops a,b] [--shapes 8x64x32x32,32x64x56x56] [--layouts contiguous,channels_last]
 *       [--min-time 0.2]
 *
 * V8 keeps the FP16 proposal behind `--experimental-wasm-fp16`: when this engine rejects
 * the FP16 build, the script runs itself again in a child process with that flag.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { renewCpuThreads } from "../src/backends/cpu/pool/pool.ts";
import { setCpuThreads, startCpuPool } from "../src/backends/cpu/threads.ts";
import {
  type KernelsWasmBuild,
  kernelsWasmBuild,
  useKernelsWasmBuild,
} from "../src/backends/cpu/wasm/kernels_module.ts";
import { type BenchLayout, CPU_OPS, type CpuOp } from "./cpu_case_names.ts";
import { cpuCase } from "./cpu_cases.ts";

const { values: flags } = parseArgs({
  args: Deno.args.filter((arg) => arg !== "--"),
  options: {
    rounds: { type: "string", default: "3" },
    threads: { type: "string", default: "2" },
    ops: { type: "string", default: CPU_OPS.join(",") },
    shapes: { type: "string", default: "8x64x32x32,32x64x56x56" },
    layouts: { type: "string", default: "contiguous,channels_last" },
    "min-time": { type: "string", default: "0.2" },
  },
});

/** Median of one case's calls after a warm-up, `budget` seconds of calls (at least 5). */
function median(run: () => void, budget: number): number {
  const warmUntil = performance.now() + 50;
  for (let i = 0; i < 3 || performance.now() < warmUntil; i++) run();
  const times: number[] = [];
  let total = 0;
  while (times.length < 5 || (total < budget * 1000 && times.length < 1000)) {
    const start = performance.now();
    run();
    const t = performance.now() - start;
    times.push(t);
    total += t;
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
}

interface Case {
  readonly op: CpuOp;
  readonly shape: number[];
  readonly layout: BenchLayout;
}

const BUILDS: KernelsWasmBuild[] = ["baseline", "fp16"];
const DTYPES = ["float32", "float16"] as const;

async function main(): Promise<void> {
  const cases: Case[] = [];
  for (const shape of flags.shapes.split(",").map((s) => s.split("x").map(Number))) {
    for (const layout of flags.layouts.split(",") as BenchLayout[]) {
      for (const op of flags.ops.split(",") as CpuOp[]) {
        if (op === "batchNormBackwardDescriptor" && layout !== "contiguous") continue;
        if (op === "batchNormGatherStatsWithCounts") continue; // per-channel only
        cases.push({ op, shape, layout });
      }
    }
  }
  /** best[case][build][dtype], milliseconds. */
  const best = cases.map(() => BUILDS.map(() => DTYPES.map(() => Infinity)));
  setCpuThreads(Number(flags.threads));
  for (let r = 0; r < Number(flags.rounds); r++) {
    for (const [i, c] of cases.entries()) {
      // Both builds back to back on each case (the order alternating by round), so that
      // load from other processes meets both alike.
      for (const b of r % 2 === 0 ? [0, 1] : [1, 0]) {
        useKernelsWasmBuild(BUILDS[b]);
        // Threads with the build's bytes: a fresh calling-thread state and pool.
        renewCpuThreads();
        await startCpuPool();
        for (const [d, dtype] of DTYPES.entries()) {
          const built = cpuCase(c.op, dtype, c.shape, c.layout)!;
          try {
            const ms = median(built.runNatural, Number(flags["min-time"]));
            best[i][b][d] = Math.min(best[i][b][d], ms);
          } finally {
            built.dispose();
          }
        }
      }
    }
  }
  useKernelsWasmBuild(undefined);
  renewCpuThreads();
  console.log(
    `Deno ${Deno.version.deno}, V8 ${Deno.version.v8}, ${flags.threads} thread(s), ms ` +
      `(lowest median of ${flags.rounds} rounds)`,
  );
  const head = ["f32 base", "f16 base", "f32 fp16", "f16 fp16", "r base", "r fp16", "f16 fp/base"];
  console.log(
    `${"op".padEnd(28)}${"shape".padEnd(13)}${"layout".padEnd(14)}` +
      head.map((h) => h.padStart(11)).join(""),
  );
  const ratios = new Map<string, number[][]>();
  for (const [i, c] of cases.entries()) {
    const [[f32b, f16b], [f32f, f16f]] = best[i];
    const row = [f16b / f32b, f16f / f32f, f16f / f16b];
    const shape = c.shape.join("x");
    if (!ratios.has(shape)) ratios.set(shape, []);
    ratios.get(shape)!.push(row);
    console.log(
      `${c.op.padEnd(28)}${shape.padEnd(13)}${c.layout.padEnd(14)}` +
        [f32b, f16b, f32f, f16f].map((v) => v.toPrecision(4).padStart(11)).join("") +
        row.map((v) => v.toFixed(2).padStart(11)).join(""),
    );
  }
  const geomean = (xs: number[]) => Math.exp(xs.reduce((a, x) => a + Math.log(x), 0) / xs.length);
  for (const [shape, rows] of ratios) {
    const [base, fp16, speedup] = [0, 1, 2].map((k) => geomean(rows.map((r) => r[k])));
    console.log(
      `${shape}: geometric mean float16/float32 ${base.toFixed(2)} (baseline build), ` +
        `${fp16.toFixed(2)} (FP16 build); float16 FP16/baseline ${speedup.toFixed(2)}`,
    );
  }
}

if (kernelsWasmBuild() === "fp16") await main();
else {
  const child = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--v8-flags=--experimental-wasm-fp16",
      "--allow-read",
      new URL(import.meta.url).pathname,
      ...Deno.args,
    ],
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!child.success) Deno.exit(1);
}
