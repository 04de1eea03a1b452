/**
 * `deno task bench:cpu`: the CPU backend against its float64 reference kernels and against
 * PyTorch's CPU kernels, side by side in one run. For every operator, dtype, shape and layout
 * it prints our medians in two call styles, the reference median, and (when
 * `/usr/bin/python3 bench/torch_baseline.py --json` works, run as bench/torch_process.ts says) the PyTorch median and our/PyTorch
 * ratios; then the geometric means of our/PyTorch over the comparable rows, the worst rows,
 * and each float16 row against the float32 row of the same case.
 *
 *   deno task bench:cpu [--threads 2] [--ops a,b] [--dtypes float32,bfloat16]
 *                       [--shapes 4x16x8x8,...] [--layouts contiguous,channels_last]
 *                       [--min-time 0.3] [--repeat 1] [--no-reference] [--no-torch]
 *
 * Both sides use the same thread count (`--threads`, default 2; PyTorch through
 * torch.set_num_threads). Both sides time what users run: outputs allocated by every call
 * (PyTorch's aten functions allocate theirs). The first column leaves each result to the
 * garbage collector in a loop that never awaits ("dropped", as a PyTorch user writes); the
 * second disposes it at once, as `using` does ("disposed"); beside them the same call into
 * preallocated outputs (`out`, in the inputs' layout). `--repeat N` times every case N times
 * (interleaved with the others) and keeps the lowest median, on both sides (PyTorch runs N
 * times too), which filters out load from other processes on a shared machine. The
 * estimated total time comes first, then each row as its case finishes (bench/progress.ts).
 *
 * @module
 */

import { listOf, parseCommand, positiveInteger, positiveNumber } from "../scripts/cli.ts";
import type { DType } from "../mod.ts";
import { type BenchLayout, CPU_OPS, CPU_SHAPES, type CpuOp } from "./cpu_case_names.ts";
import { Progress, timingMs, type TimingRule } from "./progress.ts";
import { runTorch, torchSettings } from "./torch_process.ts";

const NAME = "bench:cpu";
const flags = parseCommand({
  name: NAME,
  usage: `usage: deno task bench:cpu [--threads N] [--ops a,b] [--dtypes float32,bfloat16]
                        [--shapes 4x16x8x8,...] [--layouts contiguous,channels_last]
                        [--min-time S] [--repeat N] [--no-reference] [--no-torch]
  --threads N      threads on both sides (default 2)
  --ops a,b        operators (default all: ${CPU_OPS.join(", ")})
  --dtypes ...     float32, float16, bfloat16 (default all)
  --shapes ...     NxCxHxW shapes (default ${CPU_SHAPES.map((s) => s.join("x")).join(", ")})
  --layouts ...    contiguous, channels_last (default both)
  --min-time S     seconds of timed calls per case (default 0.3)
  --repeat N       time every case N times, keep the lowest median (default 1)
  --no-reference   skip the float64 oracle's kernels (tests/oracle)
  --no-torch       skip PyTorch (bench/torch_baseline.py with /usr/bin/python3)
  -h, --help       print this text`,
  options: {
    threads: { type: "string", default: "2" },
    ops: { type: "string", default: CPU_OPS.join(",") },
    dtypes: { type: "string", default: "float32,float16,bfloat16" },
    shapes: { type: "string", default: CPU_SHAPES.map((s) => s.join("x")).join(",") },
    layouts: { type: "string", default: "contiguous,channels_last" },
    "min-time": { type: "string", default: "0.3" },
    repeat: { type: "string", default: "1" },
    "no-reference": { type: "boolean", default: false },
    "no-torch": { type: "boolean", default: false },
  },
});
const threads = positiveInteger(NAME, "threads", flags.threads);
const ops = listOf(NAME, "ops", flags.ops, CPU_OPS);
const dtypes = listOf(NAME, "dtypes", flags.dtypes, ["float32", "float16", "bfloat16"] as const);
const shapes = flags.shapes.split(",").map((s) =>
  s.split("x").map((d) => positiveInteger(NAME, "shapes", d))
);
const layouts = listOf(NAME, "layouts", flags.layouts, ["contiguous", "channels_last"] as const);
const minTime = positiveNumber(NAME, "min-time", flags["min-time"]) * 1000;
const repeat = positiveInteger(NAME, "repeat", flags.repeat);
// The library loads only after the checks above: --help and a bad flag answer without it.
const { cpuBackend, cpuKernels } = await import("../src/backends/cpu/mod.ts");
const { referenceKernels } = await import("../tests/oracle/kernels/mod.ts");
const { setCpuThreads, startCpuPool } = await import("../src/backends/cpu/threads.ts");
const { cpuCase, probeCase } = await import("./cpu_cases.ts");

/** A PyTorch baseline row (bench/torch_baseline.py --json). */
interface TorchRow {
  op: string;
  dtype: string;
  shape: number[];
  layout: BenchLayout;
  median_ms?: number;
  error?: string;
  torch?: string;
  threads?: number;
}

/** Warm-up before timing: at least this many calls and {@linkcode WARMUP_MS}. */
const WARMUP_CALLS = 3;

/**
 * Warm-up time: V8 optimises a kernel after some calls, so 3 calls left small cases timed
 * in its lower tiers (a small float32 call measured 55 us, against 12-20 us once warm).
 * torch_baseline.py warms up the same way, so both sides are timed in steady state.
 */
const WARMUP_MS = 50;

/** Most timed calls per case (as torch_baseline.py's --max-runs). */
const MAX_RUNS = 1000;

/** How a case is timed: the warm-up, then at least 5 runs and --min-time, at most MAX_RUNS. */
const RULE: TimingRule = {
  warmupCalls: WARMUP_CALLS,
  warmupMs: WARMUP_MS,
  minRuns: 5,
  minTimeMs: minTime,
  maxRuns: MAX_RUNS,
};

/** Median ms of `run` after warm-up, over the runs {@linkcode RULE} asks for. */
function median(run: () => void): number {
  const warmStart = performance.now();
  for (let i = 0; i < WARMUP_CALLS || performance.now() - warmStart < WARMUP_MS; i++) run();
  const times: number[] = [];
  let total = 0;
  while (times.length < MAX_RUNS && (times.length < RULE.minRuns || total < RULE.minTimeMs)) {
    const start = performance.now();
    run();
    const t = performance.now() - start;
    times.push(t);
    total += t;
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

/** Runs `body` with the CPU backend's kernels replaced by `kernels`. */
function withKernels<T>(kernels: typeof cpuKernels, body: () => T): T {
  Object.assign(cpuBackend, kernels);
  try {
    return body();
  } finally {
    Object.assign(cpuBackend, cpuKernels);
  }
}

/** The operators bench/torch_baseline.py times. */
const torchOps = ops.filter((op) =>
  [
    "batchNormReduceBackward",
    "batchNormBackward",
    "groupNormBackward",
    "batchNorm",
    "groupNorm",
    "groupNormSilu",
  ].includes(op)
);

async function torchRows(): Promise<{ rows: TorchRow[]; note: string }> {
  if (flags["no-torch"]) return { rows: [], note: "PyTorch: skipped (--no-torch)" };
  if (torchOps.length === 0) return { rows: [], note: "PyTorch: no comparable op selected" };
  const rows = await runTorch("./torch_baseline.py", [
    "--json",
    "--threads",
    String(threads),
    "--ops",
    torchOps.join(","),
    "--dtypes",
    dtypes.join(","),
    "--layouts",
    layouts.join(","),
    "--shapes",
    flags.shapes,
  ]);
  if (typeof rows === "string") {
    return { rows: [], note: `PyTorch: bench/torch_baseline.py failed (${rows})` };
  }
  const torch = rows as TorchRow[];
  const version = torch.find((r) => r.torch)?.torch ?? "?";
  return {
    rows: torch,
    note: `${torchSettings(torch[0]?.threads ?? threads)} (torch ${version})`,
  };
}

setCpuThreads(threads);
await startCpuPool();
const key = (op: string, dtype: string, shape: readonly number[], layout: string) =>
  `${op}|${dtype}|${shape.join("x")}|${layout}`;
type Case = { op: CpuOp; dtype: DType; shape: number[]; layout: BenchLayout };
const cases: Case[] = [];
for (const shape of shapes) {
  for (const dtype of dtypes) {
    for (const layout of layouts) {
      for (const op of ops) {
        if (op === "batchNormBackwardDescriptor" && layout !== "contiguous") continue;
        cases.push({ op, dtype, shape, layout });
      }
    }
  }
}
const caseName = (c: Case) => `${c.op} ${c.dtype} ${c.shape.join("x")} ${c.layout}`;

// The estimate: each operator and shape built once (its first dtype and layout) and one call
// timed (with the reference kernels too), as the rule then times every column of every case of
// that operator and shape, each column building its case; PyTorch's calls are taken to cost
// ours, plus its start-up.
console.error(`${NAME}: timing one call of each operator and shape for the estimate`);
const probe = new Map<string, { build: number; fast: number; reference: number }>();
const probeKey = (c: Case) => `${c.op}|${c.shape.join("x")}`;
for (const c of cases) {
  if (probe.has(probeKey(c))) continue;
  const reference = flags["no-reference"]
    ? undefined
    : <T>(body: () => T) => withKernels(referenceKernels, body);
  probe.set(probeKey(c), probeCase(c.op, c.dtype, c.shape, c.layout, reference));
}
const fastStepMs = (c: Case) => {
  const { build, fast, reference } = probe.get(probeKey(c))!;
  const columns = 3; // dropped, disposed, out
  return (timingMs(RULE, fast) + build) * columns +
    (flags["no-reference"] ? 0 : timingMs(RULE, reference) + build);
};
const tsStepMs = (c: Case) => {
  const { build, fast } = probe.get(probeKey(c))!;
  return timingMs(RULE, fast) + build;
};
const torchRuns = !flags["no-torch"] && torchOps.length > 0;
/** PyTorch's start-up per run (python3, import torch), for the estimate. */
const TORCH_START_MS = 3000;
const torchStepMs = TORCH_START_MS +
  cases.filter((c) => torchOps.includes(c.op)).reduce((a, c) => a + tsStepMs(c), 0);
const perRepeat = (torchRuns ? torchStepMs : 0) + cases.reduce((a, c) => a + fastStepMs(c), 0);
const progress = new Progress(NAME, repeat * ((torchRuns ? 1 : 0) + cases.length));
progress.estimate(
  `${cases.length} cases x ${repeat} repeat(s)${torchRuns ? ", PyTorch first" : ""}`,
  repeat * perRepeat,
);

// Torch runs first, alone, so that neither side times the other's load.
const torchMs = new Map<string, number>();
let torch = { rows: [] as TorchRow[], note: "" };
for (let r = 0; r < repeat; r++) {
  torch = await torchRows();
  for (const row of torch.rows) {
    if (row.median_ms === undefined) continue;
    const k = key(row.op, row.dtype, row.shape, row.layout);
    torchMs.set(k, Math.min(torchMs.get(k) ?? Infinity, row.median_ms));
  }
  if (torchRuns) progress.step(`repeat ${r + 1}/${repeat}: ${torch.note}`, torchStepMs);
}

interface Row {
  op: CpuOp;
  dtype: DType;
  shape: readonly number[];
  layout: BenchLayout;
  fast: number;
  out: number;
  dropped: number;
  reference?: number;
  torch?: number;
}
const rows: Row[] = [];
const fmt = (ms: number | undefined) =>
  ms === undefined ? "" : ms >= 100 ? ms.toFixed(1) : ms >= 1 ? ms.toFixed(2) : ms.toFixed(4);
const ratio = (a?: number, b?: number) => (a !== undefined && b ? (a / b).toFixed(2) : "");
console.log(
  `CPU backend, ${threads} thread(s), ${navigator.hardwareConcurrency} cores; ${torch.note}`,
);
console.log(
  [
    "op".padEnd(30),
    "dtype".padEnd(9),
    "shape".padEnd(12),
    "layout".padEnd(14),
    "drop ms".padStart(9),
    "disp ms".padStart(9),
    "out ms".padStart(9),
    "ref ms".padStart(9),
    "torch ms".padStart(9),
    "drop/torch".padStart(10),
    "disp/torch".padStart(10),
  ].join(" "),
);

/**
 * Builds case `c`, times it with `time`, and frees its tensors: one case at a time, so every
 * case finds room in the host heap (256 MiB by default), as a program that disposes would.
 */
function timed(
  c: Case,
  time: (run: () => void) => number,
  calls: "natural" | "out" | "dropped" = "natural",
): number {
  const built = cpuCase(c.op, c.dtype, c.shape, c.layout)!;
  const run = calls === "out"
    ? built.run
    : calls === "dropped"
    ? built.runDropped
    : built.runNatural;
  try {
    return time(run);
  } finally {
    built.dispose();
  }
}
const best = cases.map(() => ({
  fast: Infinity,
  out: Infinity,
  dropped: Infinity,
  reference: Infinity,
}));
/**
 * Lets the garbage collector return the host heap blocks of dropped results before the next
 * case (a synchronous loop never gives them back): a collection when `--v8-flags=--expose-gc`
 * made `gc` available (the task does), then a turn of the event loop for the
 * FinalizationRegistry callbacks.
 */
async function settle(): Promise<void> {
  (globalThis as { gc?: () => void }).gc?.();
  await new Promise((resolve) => setTimeout(resolve, 0));
}

/** Prints case `i`'s row (its timings are final). */
function printRow(i: number): void {
  const { op, dtype, shape, layout } = cases[i];
  const row: Row = {
    op,
    dtype,
    shape,
    layout,
    fast: best[i].fast,
    out: best[i].out,
    dropped: best[i].dropped,
    reference: flags["no-reference"] ? undefined : best[i].reference,
    torch: torchMs.get(key(op, dtype, shape, layout)),
  };
  rows.push(row);
  console.log(
    [
      op.padEnd(30),
      dtype.padEnd(9),
      shape.join("x").padEnd(12),
      layout.padEnd(14),
      fmt(row.dropped).padStart(9),
      fmt(row.fast).padStart(9),
      fmt(row.out).padStart(9),
      fmt(row.reference).padStart(9),
      fmt(row.torch).padStart(9),
      ratio(row.dropped, row.torch).padStart(10),
      ratio(row.fast, row.torch).padStart(10),
    ].join(" "),
  );
}

// Each row is printed as its case finishes its last repeat.
for (let r = 0; r < repeat; r++) {
  const round = `repeat ${r + 1}/${repeat}`;
  for (const [i, c] of cases.entries()) {
    const dropped = timed(c, (run) => median(run), "dropped");
    best[i].dropped = Math.min(best[i].dropped, dropped);
    await settle();
    best[i].fast = Math.min(best[i].fast, timed(c, (run) => median(run)));
    best[i].out = Math.min(best[i].out, timed(c, (run) => median(run), "out"));
    if (!flags["no-reference"]) {
      const ref = timed(c, (run) => withKernels(referenceKernels, () => median(run)));
      best[i].reference = Math.min(best[i].reference, ref);
    }
    progress.step(`${round}: ${caseName(c)}`, fastStepMs(c));
    if (r === repeat - 1) printRow(i);
  }
}

/** The geometric mean of positive ratios. */
function geometricMean(values: readonly number[]): number {
  return Math.exp(values.reduce((sum, v) => sum + Math.log(v), 0) / values.length);
}

const compared = rows.filter((r) => r.torch !== undefined);
const styles = [["dropped", (r: Row) => r.dropped], ["disposed", (r: Row) => r.fast]] as const;
for (const [style, of] of styles) {
  if (compared.length === 0) break;
  const ratios = compared.map((r) => of(r) / r.torch!);
  const worst = compared[ratios.indexOf(Math.max(...ratios))];
  const target = compared.filter((r) => r.dtype === "float32" || r.dtype === "bfloat16");
  const targetRatios = target.map((r) => of(r) / r.torch!);
  console.log(
    `\n${style}/PyTorch over ${compared.length} rows: geometric mean ${
      geometricMean(ratios).toFixed(2)
    }, worst ${Math.max(...ratios).toFixed(2)} (${worst.op} ${worst.dtype} ` +
      `${worst.shape.join("x")} ${worst.layout}); float32 + bfloat16 rows (${target.length}): ` +
      (target.length
        ? `geometric mean ${geometricMean(targetRatios).toFixed(2)}, worst ${
          Math.max(...targetRatios).toFixed(2)
        }, rows above 2x ${targetRatios.filter((v) => v > 2).length}`
        : "none"),
  );
}
const outRows = rows.filter((r) => r.shape[0] * r.shape[1] >= 8 * 64);
if (outRows.length > 0) {
  const ratios = outRows.map((r) => r.fast / r.out);
  const worst = outRows[ratios.indexOf(Math.max(...ratios))];
  console.log(
    `disposed / out, shapes above the smallest: geometric mean ${
      geometricMean(ratios).toFixed(2)
    }, worst ${Math.max(...ratios).toFixed(2)} (${worst.op} ${worst.dtype} ` +
      `${worst.shape.join("x")} ${worst.layout})`,
  );
}
const halfRows = rows.filter((r) => r.dtype === "float16");
if (halfRows.length > 0) {
  console.log("\nfloat16 / float32 of the same case:");
  const pairs: number[] = [];
  for (const h of halfRows) {
    const f = rows.find((r) =>
      r.dtype === "float32" && r.op === h.op && r.layout === h.layout &&
      r.shape.join() === h.shape.join()
    );
    if (!f) continue;
    pairs.push(h.fast / f.fast);
    console.log(
      `  ${h.op.padEnd(30)} ${h.shape.join("x").padEnd(12)} ${h.layout.padEnd(14)} ` +
        (h.fast / f.fast).toFixed(2),
    );
  }
  if (pairs.length > 0) {
    const worst = Math.max(...pairs);
    const geomean = geometricMean(pairs);
    console.log(`  geometric mean ${geomean.toFixed(2)}, worst ${worst.toFixed(2)}`);
  }
}
