/**
 * `deno task bench:norm`: the CPU backend's LayerNorm / RMSNorm operators against PyTorch's CPU,
 * side by side (issue 31), and the fused row norms (addLayerNorm, deepNorm, addRmsNorm,
 * gemmaRmsNorm, adaLayerNorm) against the PyTorch composition each replaces (issue 39's target:
 * at most 1.5x). PyTorch runs `bench/torch_norm_baseline.py`: aten.native_layer_norm and
 * native_layer_norm_backward, and for RMSNorm the composition a PyTorch 1.13 user writes
 * (`x * rsqrt(mean(x^2) + eps) * g` and its autograd backward). Here: layerNorm,
 * layerNormBackward, rmsNorm and rmsNormGrad as users call them (outputs allocated by the call),
 * parameters in the data's dtype, in two styles: results dropped in a loop that never awaits (the
 * first column, as a PyTorch user writes) and freed with `using`.
 *
 *   deno task bench:norm [--threads 2] [--rounds 3] [--min-time 0.3] [--markdown]
 *
 * The machine is shared: `--rounds N` alternates the two sides N times (PyTorch's whole run, then
 * ours) and keeps each case's lowest median per side. Prints each case, then the geometric mean of
 * here / PyTorch for LayerNorm (forward and backward) and for RMSNorm, per dtype and overall. On
 * stderr (bench/progress.ts): the estimated total time first, then each step as it finishes.
 *
 * @module
 */

import { listOf, parseCommand, positiveInteger, positiveNumber } from "../scripts/cli.ts";
import type { DType } from "../mod.ts";
import { duration, Progress, timingMs, type TimingRule } from "./progress.ts";
import { runTorch, torchSettings } from "./torch_process.ts";

type Tensor = import("../mod.ts").Tensor;

const NAME = "bench:norm";
const OPS = [
  "layerNorm",
  "layerNormBackward",
  "rmsNorm",
  "rmsNormGrad",
  "addLayerNorm",
  "deepNorm",
  "addRmsNorm",
  "gemmaRmsNorm",
  "adaLayerNorm",
] as const;
/** The fused operators, timed against the PyTorch composition they replace (issue 39). */
const FUSED: readonly Op[] = [
  "addLayerNorm",
  "deepNorm",
  "addRmsNorm",
  "gemmaRmsNorm",
  "adaLayerNorm",
];
type Op = typeof OPS[number];
const SHAPES = [[64, 1024], [2048, 1024], [8192, 768]];

/** One case's call in the two styles. */
interface Runs {
  readonly dropped: () => void;
  readonly disposed: () => void;
}

const flags = parseCommand({
  name: NAME,
  usage: `usage: deno task bench:norm [--threads N] [--rounds N] [--min-time S] [--ops a,b]
                         [--dtypes float32,bfloat16] [--markdown] [--no-torch]
  --threads N     threads on both sides (default 2)
  --rounds N      alternate PyTorch's run and ours N times, keep the lowest medians (default 3)
  --min-time S    seconds of timed calls per case and round (default 0.3)
  --ops a,b       ${OPS.join(", ")} (default all)
  --dtypes ...    float32, bfloat16 (default both)
  --markdown      print the results as a Markdown table (bench/RESULTS.md)
  --no-torch      skip PyTorch
  -h, --help      print this text`,
  options: {
    threads: { type: "string", default: "2" },
    rounds: { type: "string", default: "3" },
    "min-time": { type: "string", default: "0.3" },
    ops: { type: "string", default: OPS.join(",") },
    dtypes: { type: "string", default: "float32,bfloat16" },
    markdown: { type: "boolean", default: false },
    "no-torch": { type: "boolean", default: false },
  },
});
const threads = positiveInteger(NAME, "threads", flags.threads);
const rounds = positiveInteger(NAME, "rounds", flags.rounds);
const minTime = positiveNumber(NAME, "min-time", flags["min-time"]) * 1000;
const ops = listOf(NAME, "ops", flags.ops, OPS);
const dtypes = listOf(NAME, "dtypes", flags.dtypes, ["float32", "bfloat16"] as const);
// The library loads only after the checks above: --help and a bad flag answer without it.
const {
  adaLayerNorm,
  addLayerNorm,
  addRmsNorm,
  deepNorm,
  gemmaRmsNorm,
  layerNorm,
  layerNormBackward,
  rmsNorm,
  rmsNormGrad,
  setCpuThreads,
  Tensor,
} = await import("../mod.ts");

/** How a case is timed: warm-up (3 calls and 50 ms), then >= 15 calls and --min-time. */
const RULE: TimingRule = {
  warmupCalls: 3,
  warmupMs: 50,
  minRuns: 15,
  minTimeMs: minTime,
  maxRuns: 1000,
};

/** Median ms of `run` after warm-up, over the calls {@linkcode RULE} asks for. */
function median(run: () => void): number {
  const warm = performance.now();
  for (let i = 0; i < RULE.warmupCalls || performance.now() - warm < RULE.warmupMs; i++) run();
  const times: number[] = [];
  let total = 0;
  while (
    times.length < RULE.maxRuns && (times.length < RULE.minRuns || total < RULE.minTimeMs)
  ) {
    const start = performance.now();
    run();
    const t = performance.now() - start;
    times.push(t);
    total += t;
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

/**
 * The inputs of one dtype and shape, made once and shared by the four operators: the host heap
 * (256 MiB by default) then holds every case's inputs, as the WebAssembly kernels need them
 * there (a copy per operator overflowed it, and the later cases ran on storage outside it).
 */
const inputs = new Map<string, Tensor[]>();

/** The call of one case, its inputs made once (outputs allocated and freed by every call). */
function call(op: Op, dtype: DType, [rows, cols]: number[]): Runs {
  const k = `${dtype}|${rows}x${cols}`;
  if (!inputs.has(k)) {
    inputs.set(k, [
      Tensor.random([rows, cols], { seed: 1, dtype, distribution: "normal" }),
      Tensor.random([rows, cols], { seed: 2, dtype, distribution: "normal" }),
      Tensor.random([cols], { seed: 3, dtype, distribution: "normal" }),
      Tensor.random([cols], { seed: 4, dtype, distribution: "normal" }),
    ]);
  }
  const [x, dy, w, b] = inputs.get(k)!;
  const normalizedShape = [cols];
  // Each call in both styles: the result dropped, or freed at once.
  const both = <R extends Disposable>(run: () => R): Runs => ({
    dropped: () => void run(),
    disposed: () => run()[Symbol.dispose](),
  });
  switch (op) {
    case "layerNorm":
      return both(() => layerNorm({ input: x, normalizedShape, weight: w, bias: b, eps: 1e-5 }));
    case "layerNormBackward": {
      const f = layerNorm({ input: x, normalizedShape, weight: w, bias: b, eps: 1e-5 });
      f.output.dispose(); // the backward reads mean and rstd only
      const args = {
        gradOut: dy,
        input: x,
        normalizedShape,
        mean: f.mean,
        rstd: f.rstd,
        weight: w,
      };
      return both(() => layerNormBackward({ ...args, bias: b }));
    }
    case "rmsNorm":
      return both(() => rmsNorm({ x, gamma: w, epsilon: 1e-6 }));
    case "rmsNormGrad": {
      const { y, rstd } = rmsNorm({ x, gamma: w, epsilon: 1e-6 });
      y.dispose();
      return both(() => rmsNormGrad({ dy, x, rstd, gamma: w }));
    }
    // The fused ones: x and dy are the two summands (x1 + x2; alpha * x + gx).
    case "addLayerNorm":
      return both(() =>
        addLayerNorm({ x1: x, x2: dy, gamma: w, beta: b, epsilon: 1e-5, additionalOutput: true })
      );
    case "deepNorm":
      return both(() => deepNorm({ x, gx: dy, beta: b, gamma: w, alpha: 0.3, epsilon: 1e-5 }));
    case "addRmsNorm":
      return both(() => addRmsNorm({ x1: x, x2: dy, gamma: w, epsilon: 1e-6 }));
    case "gemmaRmsNorm":
      return both(() => gemmaRmsNorm({ x, gamma: w, epsilon: 1e-6 }));
    case "adaLayerNorm": {
      // One batch of `rows` tokens: scale and shift [1, cols], broadcast over the rows.
      const scale = w.view([1, cols]);
      const shift = b.view([1, cols]);
      return both(() => adaLayerNorm({ x, scale, shift, weight: w, bias: b, epsilon: 1e-5 }));
    }
  }
}

interface TorchRow {
  op: Op;
  dtype: string;
  shape: number[];
  median_ms: number;
  torch: string;
}

async function torchRun(): Promise<TorchRow[]> {
  const rows = await runTorch("./torch_norm_baseline.py", [
    "--json",
    "--threads",
    String(threads),
    "--min-time",
    String(minTime / 1000),
    "--ops",
    ops.join(","),
    "--dtypes",
    dtypes.join(","),
  ]);
  if (typeof rows === "string") throw new Error(`bench/torch_norm_baseline.py failed: ${rows}`);
  return rows as TorchRow[];
}

const fmt = (ms: number | undefined) =>
  ms === undefined ? "" : ms >= 100 ? ms.toFixed(1) : ms >= 1 ? ms.toFixed(2) : ms.toFixed(4);
const key = (op: string, dtype: string, shape: readonly number[]) =>
  `${op}|${dtype}|${shape.join("x")}`;
const here = new Map<string, number>();
const dropped = new Map<string, number>();
const torch = new Map<string, number>();
let torchVersion = "";
const keep = (m: Map<string, number>, k: string, ms: number) =>
  m.set(k, Math.min(m.get(k) ?? Infinity, ms));

/** PyTorch's start-up per run (python3, import torch), for the estimate. */
const TORCH_START_MS = 3000;

setCpuThreads(threads);
const calls = new Map<string, Runs>();
for (const op of ops) {
  for (const dtype of dtypes) {
    for (const shape of SHAPES) calls.set(key(op, dtype, shape), call(op, dtype, shape));
  }
}
// The estimate: each case's call timed once (after one call), as the rule then times it, on
// every side of every round (PyTorch's calls assumed to take as long as ours).
const expected = new Map<string, number>();
for (const [k, run] of calls) {
  run.disposed();
  const start = performance.now();
  run.disposed();
  // Two styles per case, each timed as the rule says.
  expected.set(k, 2 * timingMs(RULE, performance.now() - start));
}
const roundMs = [...expected.values()].reduce((a, b) => a + b, 0);
const withTorch = !flags["no-torch"];
const ours = 1;
const sides = ours + (withTorch ? 1 : 0);
// Steps: PyTorch's run (one per round), and each of our cases per round and kernels.
const progress = new Progress(NAME, rounds * ((withTorch ? 1 : 0) + calls.size * ours));
progress.estimate(
  `${calls.size} cases x ${rounds} round(s) x ${sides} side(s)`,
  rounds * (roundMs * sides + (withTorch ? TORCH_START_MS : 0)),
);
const hereMs = (k: string, ms: number) => {
  const t = torch.get(k);
  return `here ${fmt(ms)} ms${t === undefined ? "" : `, PyTorch ${fmt(t)} ms`}`;
};
for (let r = 0; r < rounds; r++) {
  const round = `round ${r + 1}/${rounds}`;
  if (withTorch) {
    const start = performance.now();
    const rows = await torchRun();
    for (const row of rows) {
      keep(torch, key(row.op, row.dtype, row.shape), row.median_ms);
      torchVersion = row.torch;
    }
    progress.step(
      `${round}: PyTorch's run, ${rows.length} cases in ${duration(performance.now() - start)}`,
      roundMs + TORCH_START_MS,
    );
  }
  for (const [k, run] of calls) {
    // Disposed first: a disposed run after a dropped one would find the heap still full of the
    // dropped results until the collector has run and its finalizers have given them back.
    // Then a collection (the task passes --expose-gc) and a turn of the event loop, so that the
    // next case's disposed run, like a program that disposes, does not start with this case's
    // dropped results in the heap: the collector does not see the heap's blocks, only their
    // small typed arrays, and may leave them for many cases (a disposed deepNorm [8192,768]
    // then took 11-12 ms a call on buffers of its own, 2-3 ms in the heap).
    const ms = median(run.disposed);
    keep(here, k, ms);
    keep(dropped, k, median(run.dropped));
    (globalThis as { gc?: () => void }).gc?.();
    await new Promise((resolve) => setTimeout(resolve, 0));
    progress.step(`${round}: ${k.replaceAll("|", " ")} ${hereMs(k, ms)}`, expected.get(k)!);
  }
}

const ratios: { op: Op; dtype: string; ratio: number }[] = [];
const droppedRatios: { op: Op; dtype: string; ratio: number }[] = [];
const lines: string[] = [];
for (const op of ops) {
  for (const shape of SHAPES) {
    const cells = dtypes.flatMap((dtype) => {
      const k = key(op, dtype, shape);
      const a = here.get(k);
      const d = dropped.get(k);
      const t = torch.get(k);
      if (a !== undefined && t !== undefined) ratios.push({ op, dtype, ratio: a / t });
      if (d !== undefined && t !== undefined) droppedRatios.push({ op, dtype, ratio: d / t });
      const r = (v?: number) => (v !== undefined && t ? (v / t).toFixed(2) : "");
      return [fmt(d), fmt(a), fmt(t), r(d), r(a)];
    });
    lines.push([op, `[${shape.join(",")}]`, ...cells].join(" | "));
  }
}
const geomean = (rs: number[]) =>
  rs.length === 0 ? NaN : Math.exp(rs.reduce((s, r) => s + Math.log(r), 0) / rs.length);
const group = (name: string, pick: (o: Op) => boolean, rs = ratios, style = "disposed") => {
  const parts = dtypes.map((d) => {
    const g = geomean(rs.filter((r) => pick(r.op) && r.dtype === d).map((r) => r.ratio));
    return `${d} ${g.toFixed(2)}`;
  });
  const all = geomean(rs.filter((r) => pick(r.op)).map((r) => r.ratio));
  const worst = Math.max(...rs.filter((r) => pick(r.op)).map((r) => r.ratio));
  return `${name}, ${style}: geometric mean here / PyTorch ${all.toFixed(2)} (${
    parts.join(", ")
  }), worst ${worst.toFixed(2)}`;
};

const head = `CPU backend, ${threads} thread(s), ${navigator.hardwareConcurrency} cores; ` +
  (flags["no-torch"] ? "PyTorch skipped" : `${torchSettings(threads)} (torch ${torchVersion})`) +
  `; lowest median of ${rounds} interleaved round(s)`;
console.log(head);
const columns = dtypes.flatMap((d) => [
  `${d} dropped ms`,
  `${d} disposed ms`,
  `${d} PyTorch ms`,
  "dropped/PyTorch",
  "disposed/PyTorch",
]);
if (flags.markdown) {
  console.log(`| operator | shape | ${columns.join(" | ")} |`);
  console.log(`| --- | --- | ${columns.map(() => "---:").join(" | ")} |`);
  for (const l of lines) console.log(`| ${l} |`);
} else {
  console.log(["operator", "shape", ...columns].join(" | "));
  for (const l of lines) console.log(l);
}
if (ratios.length > 0) {
  for (const [rs, style] of [[droppedRatios, "dropped"], [ratios, "disposed"]] as const) {
    const groups: [string, (o: Op) => boolean][] = [
      ["LayerNorm (forward, backward)", (o) => o.startsWith("layerNorm")],
      ["RMSNorm (forward, backward)", (o) => o.startsWith("rmsNorm")],
      ["Fused, against their composition", (o) => FUSED.includes(o)],
    ];
    for (const [name, pick] of groups) {
      if (ops.some(pick)) console.log(group(name, pick, rs, style));
    }
  }
}
