/**
 * `deno task bench:step`: the training step of bench/step_model.ts (BatchNorm ×3, GroupNorm,
 * LayerNorm, RMSNorm; forward in order, backward in reverse, outputs allocated by each call)
 * on the CPU backend against the same step in PyTorch (bench/torch_step.py), side by side in
 * one run, rounds interleaved. `--model fused` times issue 39's fused operators instead
 * (bench/step_model_fused.ts: addLayerNorm, deepNorm, addRmsNorm, gemmaRmsNorm, adaLayerNorm,
 * groupNormSilu, groupNormSwish, with the backwards they have) against their PyTorch
 * compositions (bench/torch_step_fused.py).
 *
 * Two call styles, the first as a PyTorch user writes a loop:
 * - `dropped`: results never disposed, and the loop never awaits (nothing the garbage
 *   collector finds can come back through finalizers until the loop ends: the heap takes the
 *   blocks back itself after each collection, src/tensor/liveness.ts);
 * - `disposed`: every result freed at once (`using`).
 *
 * Each style runs `--steps` steps after `--warmup` ones; a row gives the mean ms per step (the
 * collector's work included), the median, and the ratio to PyTorch's mean. PyTorch runs with
 * 2 threads (`--threads`) and glibc told to keep freed memory (the header prints the
 * settings), which is PyTorch at its best on this machine.
 *
 *   deno task bench:step [--model norms|fused] [--dtypes float32,bfloat16] [--steps 60]
 *                        [--warmup 10] [--rounds 2] [--threads 2] [--no-torch]
 *
 * @module
 */

import { listOf, parseCommand, positiveInteger, usageError } from "../scripts/cli.ts";
import type { DType } from "../mod.ts";
import type { StepResults } from "./step_model.ts";
import { runTorch, torchSettings } from "./torch_process.ts";

const NAME = "bench:step";
const DTYPES = ["float32", "bfloat16", "float16"] as const;
const MODELS = ["norms", "fused"] as const;
const flags = parseCommand({
  name: NAME,
  usage: `usage: deno task bench:step [--model M] [--dtypes D,...] [--steps N] [--warmup N]
                        [--rounds N] [--threads N] [--no-torch]
  --model M       norms (BatchNorm, GroupNorm, LayerNorm, RMSNorm; default) or fused
                  (issue 39's fused operators against their PyTorch compositions)
  --dtypes D,...  data dtypes (default float32,bfloat16; float16 also)
  --steps N       timed steps per style and round (default 60)
  --warmup N      untimed steps first (default 10)
  --rounds N      interleaved rounds (default 2)
  --threads N     CPU threads, both sides (default 2)
  --no-torch      skip PyTorch
  -h, --help      print this text`,
  options: {
    model: { type: "string", default: "norms" },
    dtypes: { type: "string", default: "float32,bfloat16" },
    steps: { type: "string", default: "60" },
    warmup: { type: "string", default: "10" },
    rounds: { type: "string", default: "2" },
    threads: { type: "string", default: "2" },
    "no-torch": { type: "boolean", default: false },
  },
});
const [model, ...more] = listOf(NAME, "model", flags.model, MODELS);
if (more.length > 0) usageError(NAME, `--model takes one of ${MODELS.join(", ")}`);
const dtypes = listOf(NAME, "dtypes", flags.dtypes, DTYPES);
const steps = positiveInteger(NAME, "steps", flags.steps);
const warmup = positiveInteger(NAME, "warmup", flags.warmup);
const rounds = positiveInteger(NAME, "rounds", flags.rounds);
const threads = positiveInteger(NAME, "threads", flags.threads);
// The library loads only after the checks above: --help and a bad flag answer without it.
const { hostHeapUsage, setCpuThreads } = await import("../mod.ts");
const { stepModel, trainingStep } = await import("./step_model.ts");
const { fusedStepModel, fusedTrainingStep } = await import("./step_model_fused.ts");
setCpuThreads(threads);

/** A model: its step over one dtype's tensors (made once), its PyTorch script and layers. */
interface Model {
  readonly prepare: (dtype: DType) => () => StepResults;
  readonly script: string;
  readonly layers: string;
}

const MODEL: Model = model === "norms"
  ? {
    prepare: (dtype) => {
      const m = stepModel(dtype);
      return () => trainingStep(m);
    },
    script: "./torch_step.py",
    layers: "BatchNorm x3, GroupNorm, LayerNorm, RMSNorm",
  }
  : {
    prepare: (dtype) => {
      const m = fusedStepModel(dtype);
      return () => fusedTrainingStep(m);
    },
    script: "./torch_step_fused.py",
    layers: "addLayerNorm, deepNorm, addRmsNorm, gemmaRmsNorm, adaLayerNorm, groupNormSilu, " +
      "groupNormSwish",
  };

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
  const row = await runTorch(MODEL.script, [
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
  const step = MODEL.prepare(dtype);
  const times: number[] = [];
  for (let i = 0; i < warmup + steps; i++) {
    const t0 = performance.now();
    const results = step();
    if (style === "disposed") { for (const r of results) r[Symbol.dispose](); }
    if (i >= warmup) times.push(performance.now() - t0);
  }
  return summarize(times);
}

/** Lets the collector and the finalizers run between styles, as between a user's loops. */
const settle = () => {
  // A collection first (the task passes --expose-gc): the collector does not see the heap's
  // blocks behind the dropped results, and may otherwise leave them to the next style's run.
  (globalThis as { gc?: () => void }).gc?.();
  return new Promise((resolve) => setTimeout(resolve, 50));
};

const fmt = (ms: number) => ms.toFixed(2).padStart(8);
const ratio = (ours: Timing, torch: Timing | string) =>
  typeof torch === "string" ? "       -" : (ours.mean / torch.mean).toFixed(2).padStart(8);

console.log(
  `bench:step: model ${model} (${MODEL.layers}), ${steps} steps (+${warmup} warm-up) per ` +
    `style, ${rounds} round(s), ${threads} threads; ${torchSettings(threads)}`,
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
    `${heap.cacheHits} cache hits, ${heap.fallbacks} fallbacks, ` +
    `${heap.droppedReclaimed} blocks of dropped results given back inside their loop`,
);
