/**
 * `deno run bench/cpu_threads.ts`: the CPU backend on 2 threads against 1 thread, interleaved
 * in one run, for the calls large enough to use the worker pool. For every case (operator,
 * dtype, shape, layout, built once as bench/cpu_cases.ts builds them, with preallocated
 * outputs) it times R rounds; each round runs the case three ways (in rotating order), long
 * enough for `--min-time` each: on 1 thread; on 2 threads always on the pool ("pooled", the
 * governor's "always" policy); on 2 threads as users get it ("measured": the governor runs
 * the pool where it measured it faster, pool/governor.ts). It prints the median ratios to the
 * 1-thread time (below 1: faster), the range of pooled/1, and the 1-thread median.
 *
 *   deno run --allow-read --allow-sys=loadavg bench/cpu_threads.ts [--ops a,b] [--dtypes float32,bfloat16]
 *     [--shapes 4x16x32x32,...] [--layouts contiguous,channels_last] [--rounds 9]
 *     [--min-time 0.05] [--markdown]
 *
 * `--markdown` prints the rows as a table for bench/RESULTS.md. The load average is printed at
 * the start and the end: on a shared machine, other processes' load decides what a second
 * thread can win.
 *
 * @module
 */

import { parseArgs } from "node:util";
import type { DType } from "../mod.ts";
import { setCpuThreads, startCpuPool } from "../src/backends/cpu/threads.ts";
import { withCpuPolicy } from "../src/backends/cpu/pool/pool.ts";
import type { BenchLayout, CpuOp } from "./cpu_case_names.ts";
import { cpuCase } from "./cpu_cases.ts";

const { values: flags } = parseArgs({
  args: Deno.args.filter((arg) => arg !== "--"),
  options: {
    ops: {
      type: "string",
      default: "batchNormReduceBackward,batchNormBackward,groupNormBackward,batchNorm,groupNorm",
    },
    dtypes: { type: "string", default: "float32" },
    shapes: { type: "string", default: "4x16x32x32,8x16x32x32,8x64x32x32,32x64x56x56" },
    layouts: { type: "string", default: "contiguous,channels_last" },
    rounds: { type: "string", default: "9" },
    "min-time": { type: "string", default: "0.05" },
    markdown: { type: "boolean", default: false },
  },
});
const ops = flags.ops.split(",") as CpuOp[];
const dtypes = flags.dtypes.split(",") as DType[];
const shapes = flags.shapes.split(",").map((s) => s.split("x").map(Number));
const layouts = flags.layouts.split(",") as BenchLayout[];
const rounds = Math.max(1, Number(flags.rounds));
const minTime = Number(flags["min-time"]) * 1000;

/** Per-call milliseconds of `run` over at least `minTime` ms (at least `calls` calls). */
function perCall(run: () => void, calls: number): { ms: number; calls: number } {
  let n = 0;
  const start = performance.now();
  let elapsed = 0;
  while (n < calls || elapsed < minTime) {
    run();
    n++;
    elapsed = performance.now() - start;
  }
  return { ms: elapsed / n, calls: n };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

interface Row {
  name: string;
  /** Median of pooled / 1 thread, its range, median of measured / 1 thread. */
  pooled: number;
  low: number;
  high: number;
  measured: number;
  /** Median per-call ms on 1 thread. */
  one: number;
}

type Way = "1" | "pooled" | "measured";
/** `body`'s calls made the way `way` says (the pool stays up: only its use changes). */
function use<T>(way: Way, body: () => T): T {
  setCpuThreads(way === "1" ? 1 : 2);
  return withCpuPolicy({ pool: way === "pooled" ? "always" : "measured" }, body);
}
const rows: Row[] = [];
setCpuThreads(2);
await startCpuPool({ idleMs: Infinity });
/** The 1-minute load average, to tell a shared machine's state ("?" without the permission). */
function load(): string {
  try {
    return Deno.loadavg()[0].toFixed(2);
  } catch {
    return "?";
  }
}
console.log(
  `CPU threads, 2 vs 1, interleaved: ${rounds} rounds, >= ${minTime} ms per way per round; ` +
    `${navigator.hardwareConcurrency} cores, Deno ${Deno.version.deno}, load average ${load()}`,
);
for (const shape of shapes) {
  for (const dtype of dtypes) {
    for (const layout of layouts) {
      for (const op of ops) {
        const c = cpuCase(op, dtype, shape, layout);
        if (!c) continue;
        try {
          // Warm-up of every way (the measured one past the governor's first runs); calls
          // per side so that one round takes minTime.
          const { calls } = use("1", () => perCall(c.run, 3));
          use("pooled", () => perCall(c.run, 3));
          use("measured", () => perCall(c.run, 20));
          const ways: Way[] = ["1", "pooled", "measured"];
          const ms: Record<Way, number[]> = { "1": [], pooled: [], measured: [] };
          const pooledRatio: number[] = [];
          const measuredRatio: number[] = [];
          for (let r = 0; r < rounds; r++) {
            const order = [...ways.slice(r % 3), ...ways.slice(0, r % 3)];
            const t = {} as Record<Way, number>;
            for (const way of order) {
              t[way] = use(way, () => perCall(c.run, calls)).ms;
              ms[way].push(t[way]);
            }
            pooledRatio.push(t.pooled / t["1"]);
            measuredRatio.push(t.measured / t["1"]);
          }
          const name = `${op} ${dtype} [${shape.join(",")}] ${layout}`;
          const row: Row = {
            name,
            pooled: median(pooledRatio),
            low: Math.min(...pooledRatio),
            high: Math.max(...pooledRatio),
            measured: median(measuredRatio),
            one: median(ms["1"]),
          };
          rows.push(row);
          if (!flags.markdown) {
            console.log(
              `${name.padEnd(62)} pooled/1 ${row.pooled.toFixed(2)} (${row.low.toFixed(2)}-${
                row.high.toFixed(2)
              })  measured/1 ${row.measured.toFixed(2)}  1 thread ${row.one.toFixed(3)} ms`,
            );
          }
        } finally {
          c.dispose();
        }
      }
    }
  }
}
setCpuThreads(2);
if (flags.markdown) {
  console.log("| case | pooled / 1 thread | range | measured / 1 thread | 1 thread ms |");
  console.log("|---|---|---|---|---|");
  for (const r of rows) {
    console.log(
      `| ${r.name} | ${r.pooled.toFixed(2)} | ${r.low.toFixed(2)}-${r.high.toFixed(2)} | ${
        r.measured.toFixed(2)
      } | ${r.one.toFixed(3)} |`,
    );
  }
}
console.log(`load average at the end: ${load()}`);
const geo = (xs: number[]) => Math.exp(xs.reduce((a, x) => a + Math.log(x), 0) / xs.length);
const slower = rows.filter((r) => r.measured > 1.05);
console.log(
  `geometric means over ${rows.length} cases: pooled/1 ${
    geo(rows.map((r) => r.pooled)).toFixed(2)
  }, ` +
    `measured/1 ${geo(rows.map((r) => r.measured)).toFixed(2)}; measured more than 5% slower ` +
    `than 1 thread: ${slower.length === 0 ? "none" : slower.map((r) => r.name).join("; ")}`,
);
