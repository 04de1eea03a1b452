/**
 * `deno task bench:loop`: a CPU training step (BatchNorm forward + backward, float32
 * [16,32,28,28] by default) repeated in the three ways users write a loop, printing ms/step
 * and RSS every `--every` steps:
 *
 * - `using`: every result disposed with `using` (blocks go back to the host cache at once);
 * - `tidy`: each step inside `tidy()`;
 * - `dropped`: results left to the garbage collector, the loop yielding to the event loop after
 *   each step (the collector's callbacks run between tasks);
 * - `dropped-sync`: results left to the garbage collector in a loop that never yields: their
 *   blocks come back once the collector has cleared them (src/tensor/liveness.ts; the
 *   finalizers would wait for the loop to end), and until then new tensors take memory never
 *   used; once the host heap is full storage falls back to buffers of its own (`fallbacks`).
 *
 *   deno task bench:loop [--style using|tidy|dropped|dropped-sync|all] [--steps 1500]
 *                        [--every 300] [--shape 16x32x28x28]
 *
 * @module
 */

import { listOf, parseCommand, positiveInteger, usageError } from "../scripts/cli.ts";

const STYLES = ["using", "tidy", "dropped", "dropped-sync"] as const;
type Style = typeof STYLES[number];

const NAME = "bench:loop";
const flags = parseCommand({
  name: NAME,
  usage: `usage: deno task bench:loop [--style ${STYLES.join("|")}|all] [--steps N] [--every N]
                         [--shape NxCxHxW]
  --style S      one loop style, or all (default)
  --steps N      steps per style (default 1500)
  --every N      print a line every N steps (default 300)
  --shape ...    the data shape (default 16x32x28x28)
  -h, --help     print this text`,
  options: {
    style: { type: "string", default: "all" },
    steps: { type: "string", default: "1500" },
    every: { type: "string", default: "300" },
    shape: { type: "string", default: "16x32x28x28" },
  },
});
const styles = flags.style === "all" ? [...STYLES] : listOf(NAME, "style", flags.style, STYLES);
const steps = positiveInteger(NAME, "steps", flags.steps);
const every = positiveInteger(NAME, "every", flags.every);
const shape = flags.shape.split("x").map((d) => positiveInteger(NAME, "shape", d));
if (shape.length < 2 || shape.length > 8) usageError(NAME, "--shape needs 2 to 8 dimensions");
// The library loads only after the checks above: --help and a bad flag answer without it.
const { batchNorm, batchNormBackward, hostHeapUsage, Tensor, tidy } = await import("../mod.ts");

const C = shape[1];
const x = Tensor.random(shape, { seed: 1 });
const dy = Tensor.random(shape, { seed: 2 });
const weight = Tensor.ones([C]);
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0).padStart(5);

/** One training step in `style` (the results are dropped or freed as the style says). */
function step(style: Style): void {
  if (style === "using") {
    using f = batchNorm({ input: x, weight, training: true });
    using _b = batchNormBackward({
      gradOut: dy,
      input: x,
      weight,
      saveMean: f.saveMean,
      saveInvstd: f.saveInvstd,
      training: true,
    });
    return;
  }
  const body = () => {
    const f = batchNorm({ input: x, weight, training: true });
    batchNormBackward({
      gradOut: dy,
      input: x,
      weight,
      saveMean: f.saveMean,
      saveInvstd: f.saveInvstd,
      training: true,
    });
  };
  if (style === "tidy") tidy(body);
  else body();
}

console.log(`BatchNorm forward + backward, float32 [${shape}], ${steps} steps`);
console.log(
  "style          step  ms/step  RSS MiB  heap in use  fallbacks  cache hits  reclaimed in job",
);
for (const style of styles) {
  let start = performance.now();
  for (let s = 1; s <= steps; s++) {
    step(style);
    if (style === "dropped") await new Promise((resolve) => setTimeout(resolve, 0));
    if (s % every === 0) {
      const u = hostHeapUsage();
      console.log(
        `${style.padEnd(13)} ${String(s).padStart(5)} ${
          ((performance.now() - start) / every).toFixed(3).padStart(8)
        } ${mib(Deno.memoryUsage().rss)}    ${mib(u.bytesInUse)}     ${
          String(u.fallbacks).padStart(6)
        }  ${String(u.cacheHits).padStart(10)}  ${String(u.droppedReclaimed).padStart(16)}`,
      );
      start = performance.now();
    }
  }
  // Let the collector return what the style dropped before the next one starts.
  (globalThis as { gc?: () => void }).gc?.();
  await new Promise((resolve) => setTimeout(resolve, 0));
}
