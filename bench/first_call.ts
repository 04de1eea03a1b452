/**
 * `deno task bench:first`: what the first call of a new shape costs against its steady state,
 * on the CPU backend and in PyTorch (bench/torch_first_call.py), side by side in one run.
 *
 * A case is an operator, a shape A and a shape B (an epoch's smaller last batch, a new
 * sequence length): `--calls` calls on A (their median: A's steady state), the first call on B,
 * `--calls` calls on B (their median: B's steady state), then the first call on A again (the
 * shape coming back). Every call allocates its outputs, which are disposed at once. The
 * process's first call of each operator (kernel compilation, the worker pool's start) is made
 * on a small shape before the cases, on both sides.
 *
 * Columns: `first`, `steady` (B's, ms); `cold` (ms): B's calls each after the processor's caches
 * were evicted (reading 128 MiB on the calling thread alone), their median; `new` = B's first call / B's steady state;
 * `/cold` = B's first call / `cold`; `back` = A's return / A's steady state. A steady state of
 * shapes that fit in the last-level cache (32 MiB here) runs from it, a first call from memory:
 * `/cold` is what is left of a first call's cost beyond the caches.
 * PyTorch runs with 2 threads (`--threads`) and glibc told to keep freed memory (the header
 * prints the settings).
 *
 * Each case runs `--repeats` times, B with 0, 1, 2, ... fewer in its first dimension (a new
 * shape each time); the columns are medians over the repeats (a single first call is noisy).
 *
 *   deno task bench:first [--calls 30] [--repeats 5] [--threads 2] [--no-torch]
 *
 * @module
 */

import { parseCommand, positiveInteger, usageError } from "../scripts/cli.ts";
import { runTorch, torchSettings } from "./torch_process.ts";

type Tensor = import("../mod.ts").Tensor;

const NAME = "bench:first";
const flags = parseCommand({
  name: NAME,
  usage: `usage: deno task bench:first [--calls N] [--repeats N] [--threads N] [--no-torch]
  --calls N       calls per steady state (default 30)
  --repeats N     new shapes per case (default 5; at most the first dim of B)
  --threads N     CPU threads, both sides (default 2)
  --no-torch      skip PyTorch
  -h, --help      print this text`,
  options: {
    calls: { type: "string", default: "30" },
    repeats: { type: "string", default: "5" },
    threads: { type: "string", default: "2" },
    "no-torch": { type: "boolean", default: false },
  },
});
const calls = positiveInteger(NAME, "calls", flags.calls);
const repeats = positiveInteger(NAME, "repeats", flags.repeats);
const threads = positiveInteger(NAME, "threads", flags.threads);

type Op = "batchNorm" | "groupNorm" | "layerNorm";
/** The cases, declared once: [operator, shape A, shape B, groups (groupNorm)]. */
const CASES: readonly (readonly [Op, number[], number[], number])[] = [
  ["batchNorm", [16, 64, 32, 32], [11, 64, 32, 32], 0],
  ["batchNorm", [16, 128, 16, 16], [5, 128, 16, 16], 0],
  ["batchNorm", [32, 64, 28, 28], [20, 64, 28, 28], 0],
  ["groupNorm", [16, 64, 32, 32], [11, 64, 32, 32], 32],
  ["layerNorm", [2048, 768], [1500, 768], 0],
];
/** The most repeats: each takes one more off B's first dimension. */
const MAX_REPEATS = Math.min(...CASES.map(([, , b]) => b[0]));
if (repeats > MAX_REPEATS) usageError(NAME, `--repeats must be at most ${MAX_REPEATS}`);
// The library loads only after the checks above: --help and a bad flag answer without it.
const { batchNorm, groupNorm, layerNorm, setCpuThreads, Tensor } = await import("../mod.ts");
setCpuThreads(threads);

/** One case's figures (ms), and the medians of the ratios over the repeats. */
interface Row {
  readonly first: number;
  readonly steady: number;
  readonly back: number;
  readonly steadyA: number;
  /** B's calls each after the caches were evicted ({@linkcode evictCaches}): their median. */
  readonly cold: number;
  readonly newRatio?: number;
  readonly coldRatio?: number;
  readonly backRatio?: number;
}

/** Bytes read to evict the processor's caches: more than any last-level cache here (32 MiB). */
const EVICT_BYTES = 128 * 2 ** 20;
const evictBuffer = new Float32Array(EVICT_BYTES / 4).fill(1);

/** Reads every cache line of a buffer larger than the caches (the previous call's data leave). */
function evictCaches(): number {
  let sum = 0;
  for (let i = 0; i < evictBuffer.length; i += 16) sum += evictBuffer[i];
  return sum;
}

/** Calls timed after evicting the caches, per repeat. */
const COLD_CALLS = 9;

/** A call of `op` on `x` (weights ones, biases zeros), its outputs allocated by the call. */
function caller(op: Op, x: Tensor, groups: number): () => Disposable {
  const c = op === "layerNorm" ? x.shape.at(-1)! : x.shape[1];
  const w = Tensor.ones([c]);
  const b = Tensor.zeros([c]);
  if (op === "batchNorm") return () => batchNorm({ input: x, weight: w, bias: b, training: true });
  if (op === "groupNorm") return () => groupNorm({ input: x, gamma: w, beta: b, group: groups });
  return () => layerNorm({ input: x, normalizedShape: [c], weight: w, bias: b });
}

function timed(f: () => Disposable): number {
  const t = performance.now();
  f()[Symbol.dispose]();
  return performance.now() - t;
}

/** The middle value of `xs` (sorted in place). */
function middle(xs: number[]): number {
  return xs.sort((a, b) => a - b)[xs.length >> 1];
}

/** The median time of `n` calls of `f`, each after `before` (untimed) when given. */
function medianTime(f: () => Disposable, n = calls, before?: () => unknown): number {
  return middle(Array.from({ length: n }, () => (before?.(), timed(f))));
}

function ours(): Row[] {
  for (const [op, a, , groups] of CASES) {
    const small = op === "layerNorm" ? [2, a.at(-1)!] : [2, a[1], 2, 2];
    timed(caller(op, Tensor.random(small, { seed: 9 }), groups));
  }
  return CASES.map(([op, a, b, groups]) => {
    const fa = caller(op, Tensor.random(a, { seed: 1 }), groups);
    const runs: Row[] = [];
    for (let r = 0; r < repeats; r++) {
      // A new shape each repeat: B with r fewer in its first dimension.
      const fb = caller(op, Tensor.random([b[0] - r, ...b.slice(1)], { seed: 2 + r }), groups);
      const steadyA = medianTime(fa);
      const first = timed(fb);
      const steady = medianTime(fb);
      const back = timed(fa);
      runs.push({ first, steady, back, steadyA, cold: medianTime(fb, COLD_CALLS, evictCaches) });
    }
    return medianRow(runs);
  });
}

/** The median of each column of `runs`, and of the two ratios. */
function medianRow(runs: readonly Row[]): Row {
  return {
    first: middle(runs.map((r) => r.first)),
    steady: middle(runs.map((r) => r.steady)),
    back: middle(runs.map((r) => r.back)),
    steadyA: middle(runs.map((r) => r.steadyA)),
    cold: middle(runs.map((r) => r.cold)),
    newRatio: middle(runs.map((r) => r.first / r.steady)),
    coldRatio: middle(runs.map((r) => r.first / r.cold)),
    backRatio: middle(runs.map((r) => r.back / r.steadyA)),
  };
}

async function torch(): Promise<Row[] | string> {
  const rows = await runTorch("./torch_first_call.py", [
    "--cases",
    JSON.stringify(CASES),
    "--calls",
    String(calls),
    "--threads",
    String(threads),
    "--repeats",
    String(repeats),
  ]);
  if (typeof rows === "string") return rows;
  return (rows as Record<string, number>[][]).map((runs) =>
    medianRow(runs.map((r) => ({
      first: r.first_ms,
      steady: r.steady_ms,
      back: r.return_ms,
      steadyA: r.steady_a_ms,
      cold: r.cold_ms,
    })))
  );
}

const fmt = (ms: number) => ms.toFixed(2).padStart(6);
const times = (x: number) => `${x.toFixed(1).padStart(5)}x`;
const cols = (r: Row) =>
  `${fmt(r.first)} ${fmt(r.steady)} ${fmt(r.cold)} ${times(r.newRatio!)} ${times(r.coldRatio!)} ` +
  times(r.backRatio!);

console.log(
  `${NAME}: ${calls} calls per steady state, ${threads} threads; ${torchSettings(threads)}`,
);
const torchRows = flags["no-torch"] ? "skipped" : await torch();
const ourRows = ours();
const head = "first steady   cold    new  /cold   back";
console.log(`${"case".padEnd(38)} | ours  ${head} | torch ${head}`);
CASES.forEach(([op, a, b], i) => {
  const name = `${op} ${a.join("x")} -> ${b.join("x")}`;
  const t = typeof torchRows === "string" ? torchRows.slice(0, 40) : cols(torchRows[i]);
  console.log(`${name.padEnd(38)} | ${cols(ourRows[i])} | ${t}`);
});
