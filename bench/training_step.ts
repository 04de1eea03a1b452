/**
 * `deno task bench:step`: the training step of bench/step_model.ts (BatchNorm ×3, GroupNorm,
 * LayerNorm, RMSNorm; forward in order, backward in reverse, outputs allocated by each call)
 * on the CPU backend against the same step in PyTorch (bench/torch_step.py), side by side in
 * one run, rounds interleaved.
 *
 * Two call styles, the first as a PyTorch user writes a loop:
 * - `dropped`: results never disposed, and the loop never awaits (nothing the garbage
 *   collector finds can come back through finalizers until the loop ends);
 * - `disposed`: every result freed at once (`using`).
 *
 * Each style runs `--steps` steps after `--warmup` ones; a row gives the mean ms per step (the
 * collector's work included), the median, and the ratio to PyTorch's mean. PyTorch runs with
 * 2 threads (`--threads`) and glibc told to keep freed memory (the header prints the
 * settings), which is PyTorch at its best on this machine.
 *
 *   deno task bench:step [--dtypes float32,bfloat16] [--steps 60] [--warmup 10] [--rounds 2]
 *                        [--threads 2] [--no-torch]
 *
 * @module
 */

import { listOf, parseCommand, positiveInteger } from "../scripts/cli.ts";
import { type DType, hostHeapUsage, setCpuThreads } from "../mod.ts";
import { stepModel, trainingStep } from "./step_model.ts";
import { runTorch, torchSettings } from "./torch_process.ts";

const NAME = "bench:step";
const DTYPES = ["float32", "bfloat16", "float16"] as const;
const flags = parseCommand({
  name: NAME,
  usage: `usage: deno task bench:step [--dtypes D,...] [--steps N] [--warmup N] [--rounds N]
                        [--threads N] [--no-torch]
  --dtypes D,...  data dtypes (default float32,bfloat16; float16 also)
  --steps N       timed steps per style and round (default 60)
  --warmup N      untimed steps first (default 10)
  --rounds N      interleaved rounds (default 2)
  --threads N     CPU threads, both sides (default 2)
  --no-torch      skip PyTorch
  -h, --help      print this text`,
  options: {
    dtypes: { type: "string", default: "float32,bfloat16" },
    steps: { type: "string", default: "60" },
    warmup: { type: "string", default: "10" },
    rounds: { type: "string", default: "2" },
    threads: { type: "string", default: "2" },
    "no-torch": { type: "boolean", default: false },
  },
});
const dtypes = listOf(NAME, "dtypes", flags.dtypes, DTYPES);
const steps = positiveInteger(NAME, "steps", flags.steps);
const warmup = positiveInteger(NAME, "warmup", flags.warmup);
const rounds = positiveInteger(NAME, "rounds", flags.rounds);
const threads = positiveInteger(NAME, "threads", flags.threads);
setCpuThreads(threads);

interface Timing {
  readonly mean: number;
  readonly median: number;
}

function summarize(times: number[]): Timing {
  const sorted = [...times].sort((a, b) => a - b);
  return {
    mean: times.reduce((a, b) => a + b, 0) / times.length,
    median: sorted[Math.floor(sorted.length / 2)],
  };
}

async function torchStep(dtype: DType): Promise<Timing | string> {
  const row = await runTorch("./torch_step.py", [
    "--dtype",
    dtype,
    "--threads",
    String(threads),
    "--steps",
    String(steps),
    "--warmup",
    String(warmup),
  ]);
  if (typeof row === "string") return row;
  const { mean_ms, median_ms } = row as { mean_ms: number; median_ms: number };
  return { mean: mean_ms, median: median_ms };
}

/** Our step in one style: `steps` timed steps in a loop that never awaits. */
function ourStep(dtype: DType, style: "dropped" | "disposed"): Timing {
  const model = stepModel(dtype);
  const times: number[] = [];
  for (let i = 0; i < warmup + steps; i++) {
    const t0 = performance.now();
    const results = trainingStep(model);
    if (style === "disposed") { for (const r of results) r[Symbol.dispose](); }
    if (i >= warmup) times.push(performance.now() - t0);
  }
  return summarize(times);
}

/** Lets finalizers run between styles, as between a user's loops. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

const fmt = (ms: number) => ms.toFixed(2).padStart(8);
const ratio = (ours: Timing, torch: Timing | string) =>
  typeof torch === "string" ? "       -" : (ours.mean / torch.mean).toFixed(2).padStart(8);

console.log(
  `bench:step: ${steps} steps (+${warmup} warm-up) per style, ${rounds} round(s), ` +
    `${threads} threads; ${torchSettings(threads)}`,
);
console.log(
  "round dtype     | dropped mean  median   /torch | disposed mean median  /torch | " +
    "torch mean median | RSS MiB",
);
for (let round = 1; round <= rounds; round++) {
  for (const dtype of dtypes) {
    const torch = flags["no-torch"] ? "skipped" : await torchStep(dtype);
    await settle();
    const disposed = ourStep(dtype, "disposed");
    await settle();
    const dropped = ourStep(dtype, "dropped");
    const rss = Deno.memoryUsage().rss / 2 ** 20;
    await settle();
    const torchCols = typeof torch === "string"
      ? `${torch.slice(0, 17).padEnd(17)}`
      : `${fmt(torch.mean)} ${fmt(torch.median)}`;
    console.log(
      `${String(round).padStart(5)} ${dtype.padEnd(9)} | ${fmt(dropped.mean)} ${
        fmt(dropped.median)
      } ${ratio(dropped, torch)} | ${fmt(disposed.mean)} ${fmt(disposed.median)} ${
        ratio(disposed, torch)
      } | ${torchCols} | ${rss.toFixed(0).padStart(7)}`,
    );
  }
}
const heap = hostHeapUsage();
console.log(
  `host heap: ${(heap.bytesReserved / 2 ** 20).toFixed(0)} MiB reserved, ` +
    `${heap.cacheHits} cache hits, ${heap.fallbacks} fallbacks`,
);
