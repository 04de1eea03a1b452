/**
 * The TypeScript row and pixel kernels of this tree against those of another revision, in
 * one process: for every kernel family, dtype and layout, both versions run on the same
 * in-cache block (rows: 2 rows of 4096 elements; pixels: 128 pixels of 64 channels), warmed
 * up, then timed alternately (old, new, new, old, ...) for several rounds, and each side's
 * median ns per element is printed with new/old. Calls go through one call site that sees every kernel, as the
 * drivers' primed call sites do (drivers.ts), so no kernel is inlined into the timing loop.
 *
 *   deno run --allow-read --allow-run=git bench/kernels_ab.ts [--base REV] [--rounds N] [--only a,b]
 *
 * The old kernels are `git show REV:<path>` of row_kernels.ts and pixel_kernels.ts, imported
 * with their imports pointed at this tree's modules (codecs, formulas, ...).
 *
 * @module
 */

import { parseCommand, positiveInteger } from "../scripts/cli.ts";
import { type CodecScratch, createCodecScratch } from "../src/backends/cpu/kernels/codecs.ts";
import type { PixelKernel, RowKernel } from "../src/backends/cpu/kernels/drivers.ts";
import type { Layout, TensorAddress } from "../src/backends/cpu/kernels/layout_types.ts";
import { type KernelStage, uniformStage } from "../src/backends/cpu/kernels/stage_types.ts";
import * as newPixels from "../src/backends/cpu/kernels/pixel_kernels.ts";
import * as newRows from "../src/backends/cpu/kernels/row_kernels.ts";
import { numberToBf16 } from "../src/tensor/dtype.ts";

const NAME = "kernels_ab";
const flags = parseCommand({
  name: NAME,
  usage:
    `usage: deno run --allow-read --allow-run=git bench/kernels_ab.ts [--base REV] [--rounds N] [--only a,b]
  --base REV     the revision whose kernels are "old" (default HEAD)
  --rounds N     alternations of old and new per kernel (default 21)
  --only a,b     only these kernels, by name (default all)
  -h, --help     print this text`,
  options: {
    base: { type: "string", default: "HEAD" },
    rounds: { type: "string", default: "21" },
    only: { type: "string", default: "" },
  },
});
const rounds = positiveInteger(NAME, "rounds", flags.rounds);

const KERNELS = "src/backends/cpu/kernels/";
const kernelsDir = new URL(`../${KERNELS}`, import.meta.url);

/** Module `file` of revision `rev`, its relative imports pointed at this tree's modules. */
async function oldModule(file: string): Promise<Record<string, unknown>> {
  const show = await new Deno.Command("git", {
    args: ["show", `${flags.base}:${KERNELS}${file}`],
    cwd: new URL("../", import.meta.url),
    stdout: "piped",
  }).output();
  if (!show.success) throw new Error(`git show ${flags.base}:${KERNELS}${file} failed`);
  const text = new TextDecoder().decode(show.stdout)
    .replace(/from "\.\/([\w.]+)"/g, (_, name) => `from "${new URL(name, kernelsDir).href}"`);
  const bytes = new TextEncoder().encode(text);
  const base64 = btoa(Array.from(bytes, (b) => String.fromCharCode(b)).join(""));
  return await import(`data:application/typescript;base64,${base64}`);
}

const C_ROWS = 2, INNER_ROWS = 4096;
const C_PIXELS = 64, PIXELS = 128;
const ELEMENTS = C_ROWS * INNER_ROWS; // = C_PIXELS * PIXELS

/** Dtype code -> the stage's read array of `values`, and a fresh write array. */
function arrays(code: number, values: Float64Array): { read: Float32Array | Uint16Array } {
  if (code === 0) return { read: Float32Array.from(values) };
  if (code === 1) return { read: new Uint16Array(Float16Array.from(values).buffer) };
  return { read: Uint16Array.from(values, (v) => numberToBf16(v)) };
}

/** A stage over the block in `kind` layout with dtype `code`. */
function stage(kind: "rows" | "pixels", code: number): KernelStage {
  const [C, inner] = kind === "rows" ? [C_ROWS, INNER_ROWS] : [C_PIXELS, PIXELS];
  const layout: Layout = { kind, N: 1, C, inner, innerShape: [inner], perSample: false };
  const at: TensorAddress = kind === "rows"
    ? { base: 0, strideN: C * inner, strideC: inner, strideI: 1, innerStrides: [1] }
    : { base: 0, strideN: C * inner, strideC: 1, strideI: C, innerStrides: [C] };
  const noise = (seed: number) =>
    Float64Array.from({ length: ELEMENTS }, (_, i) => Math.sin(i * 12.9898 + seed) * 2);
  const out = code === 0
    ? new Float32Array(ELEMENTS)
    : code === 1
    ? new Float16Array(ELEMENTS)
    : new Uint16Array(ELEMENTS);
  return uniformStage({
    op: "sums",
    layout,
    dtype: code as 0 | 1 | 2,
    items: 1,
    dy: arrays(code, noise(1)).read,
    dyAt: at,
    x: arrays(code, noise(2)).read,
    xAt: at,
    out,
    outAt: at,
    mean: new Float64Array(C),
    partials: new Float64Array(2),
  } as never);
}

/** Runs `kernel` over the whole block `calls` times (one call site for every kernel). */
function runRows(kernel: RowKernel, s: KernelStage, scratch: CodecScratch, calls: number) {
  const k = scratch.k;
  for (let r = 0; r < calls; r++) {
    for (let c = 0; c < C_ROWS; c++) {
      k[0] = 0.5;
      k[1] = 0.75;
      k[2] = 0.25;
      k[3] = 0;
      kernel(s, 0, c, k, scratch);
    }
  }
}

/** Pixel counterpart of {@linkcode runRows}: pixels [0, PIXELS) with per-channel arrays. */
function runPixels(kernel: PixelKernel, s: KernelStage, scratch: CodecScratch, calls: number) {
  const p = [0, 1, 2].map((j) => new Float64Array(C_PIXELS).fill(0.25 + j / 4));
  for (let r = 0; r < calls; r++) kernel(s, 0, PIXELS, p, scratch);
}

/** Median of `values`. */
function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}

const old = {
  rows: await oldModule("row_kernels.ts"),
  pixels: await oldModule("pixel_kernels.ts"),
};
const current: Record<"rows" | "pixels", Record<string, unknown>> = {
  rows: newRows,
  pixels: newPixels,
};
const scratch = createCodecScratch();
const CALLS = 200;
console.log(`| kernel | layout | dtype | old ns/element | new ns/element | new/old |`);
console.log(`| --- | --- | --- | ---: | ---: | ---: |`);
for (const layout of ["rows", "pixels"] as const) {
  const only = flags.only.split(",").filter((n) => n !== "");
  const names = Object.keys(current[layout]).sort()
    .filter((n) => only.length === 0 || only.includes(n));
  for (const name of names) {
    const code = /F32$/.test(name) ? 0 : /Bf16$/.test(name) ? 2 : 1;
    const codes = /U16$/.test(name) ? [1, 2] : [code];
    for (const dtype of codes) {
      const s = stage(layout, dtype);
      const kernels = [old[layout][name], current[layout][name]];
      const run = (k: unknown, calls: number) =>
        layout === "rows"
          ? runRows(k as RowKernel, s, scratch, calls)
          : runPixels(k as PixelKernel, s, scratch, calls);
      // Warm up, alternating, until both are optimized (the compiler thread may be slow to
      // get a core on a loaded machine).
      for (let r = 0; r < 10; r++) kernels.forEach((k) => run(k, CALLS));
      const times: number[][] = [[], []];
      for (let r = 0; r < rounds; r++) {
        // old, new, then new, old: neither side always runs first.
        for (const side of r % 2 === 0 ? [0, 1] : [1, 0]) {
          const t0 = performance.now();
          run(kernels[side], CALLS);
          times[side].push(((performance.now() - t0) * 1e6) / (CALLS * ELEMENTS));
        }
      }
      const [a, b] = times.map(median);
      const dtypeName = ["float32", "float16", "bfloat16"][dtype];
      console.log(
        `| ${name} | ${layout} | ${dtypeName} | ${a.toFixed(3)} | ${b.toFixed(3)} | ` +
          `${(b / a).toFixed(3)} |`,
      );
    }
  }
}
