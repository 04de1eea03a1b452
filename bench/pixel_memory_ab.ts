/**
 * Two builds of the channels-last kernels side by side in one process, on data of any size:
 * `--pixels` pixels of `--channels` channels, called a block of pixels at a time as
 * src/backends/cpu/kernels/channel_stages.ts calls them (blocks of `pixelsPerBlock`: 32768
 * elements), so that past the last-level cache the kernels read from memory, where
 * `deno task bench:ab`'s 16 KB calls stay in L1. For each kernel: ns per element of build A
 * and build B (medians of interleaved rounds), the median B/A ratio, and whether the two
 * builds wrote the same bits (the outputs, or the statistics' and sums' float64 results).
 *
 *   deno task bench:ab:pixels --a A/kernels_wasm.ts --b B/kernels_wasm.ts
 *     [--kernels bn_stats_pix,bn_norm_pix] [--pixels 100352] [--channels 64]
 *     [--dtype float32|float16|bfloat16] [--cached 0|1] [--rounds 11]
 *
 * `--cached` is the flag the statistics and sums receive (1: the caller expects the data in
 * the caches, channel_stages.ts CACHED_CALL_MAX_BYTES); the writes take none. The default
 * size, 100352 pixels of 64 channels (25.7 MB of float32), is the [32,64,56,56] tensor.
 *
 * @module
 */

import { parseCommand, positiveInteger, usageError } from "../scripts/cli.ts";
import { FLOAT32 } from "../src/backends/cpu/kernels/stage_types.ts";
import { kernelDtypeCode } from "./kernel_dtypes.ts";
import { ITEM_ELEMENTS } from "../src/backends/cpu/kernels/layout_types.ts";
import { blockAt, instantiateWasm, slotAt, wasmReserve } from "../tests/fixtures/wasm_memory.ts";
import type { WasmState } from "../tests/fixtures/wasm_memory.ts";
import { K, median, writeSignal } from "./kernel_timing.ts";

const NAME = "bench:ab:pixels";
const KERNELS = [
  "bn_stats_pix",
  "bn_sums_pix",
  "bn_norm_pix",
  "bn_grad_pix",
  "bn_scale_pix",
  "bn_swish_pix",
];
const flags = parseCommand({
  name: NAME,
  usage: `usage: deno task ${NAME} --a PATH --b PATH [--kernels a,b] [--pixels P] [--channels C]
                         [--dtype float32|float16|bfloat16] [--cached 0|1] [--rounds R]
  --a PATH        build A: a generated kernels module (kernels_wasm.ts)
  --b PATH        build B, the same
  --kernels a,b   of ${KERNELS.join(", ")} (default all)
  --pixels P      pixels in all (default 100352: [32,64,56,56])
  --channels C    channels per pixel, a multiple of 4 (default 64)
  --dtype D       float32, float16 or bfloat16 (default float32)
  --cached F      the statistics' and sums' flag: 1 in the caches, 0 from memory (default 0)
  --rounds R      interleaved rounds (default 11)
  -h, --help      print this text`,
  options: {
    a: { type: "string", default: "" },
    b: { type: "string", default: "" },
    kernels: { type: "string", default: KERNELS.join(",") },
    pixels: { type: "string", default: "100352" },
    channels: { type: "string", default: "64" },
    dtype: { type: "string", default: "float32" },
    cached: { type: "string", default: "0" },
    rounds: { type: "string", default: "11" },
  },
});

const paths = [flags.a, flags.b];
if (paths.includes("")) usageError(NAME, "--a and --b name the two builds");
const dt = kernelDtypeCode(NAME, flags.dtype);
const pixels = positiveInteger(NAME, "pixels", flags.pixels);
const C = positiveInteger(NAME, "channels", flags.channels);
if (C % 4) usageError(NAME, `--channels ${C}: must be a multiple of 4`);
if (flags.cached !== "0" && flags.cached !== "1") usageError(NAME, "--cached must be 0 or 1");
const cached = Number(flags.cached);
const rounds = positiveInteger(NAME, "rounds", flags.rounds);
const kernels = flags.kernels.split(",");
for (const k of kernels) if (!KERNELS.includes(k)) usageError(NAME, `no kernel ${k}`);

const es = dt === FLOAT32 ? 4 : 2;
const per = Math.max(1, Math.ceil(ITEM_ELEMENTS / C));
const elements = pixels * C;
/** Calls per timed batch: about 4M elements (at least one pass over the data). */
const passes = Math.max(1, Math.round(4e6 / elements));

/** The signal of the kernel benchmarks about 0.5 in dy and x, and their constants at slot 7. */
function fill(w: WasmState): void {
  writeSignal(w, dt, elements, 0.5);
  const k = new Float32Array(w.memory.buffer, slotAt(w, 7), 4 * C);
  for (let i = 0; i < k.length; i++) k[i] = K[(i >> 2) & 3];
}

async function load(path: string): Promise<WasmState> {
  const module = await import(new URL(path, `file://${Deno.cwd()}/`).href);
  if (typeof module.kernelsWasmBytes !== "function") {
    usageError(NAME, `${path}: exports no kernelsWasmBytes()`);
  }
  const w = instantiateWasm(module.kernelsWasmBytes())!;
  wasmReserve(w, elements, 64 * C);
  fill(w);
  return w;
}

/** One pass of `kernel` over the data, a block at a time. */
function pass(w: WasmState, kernel: string): void {
  // deno-lint-ignore no-explicit-any
  const e = w.exports as any;
  const [x, dy, out] = [blockAt(w, "x"), blockAt(w, "dy"), blockAt(w, "out")];
  const [o1, o2, acc, k] = [slotAt(w, 4), slotAt(w, 5), slotAt(w, 6), slotAt(w, 7)];
  for (let q = 0; q < pixels; q += per) {
    const pix = Math.min(per, pixels - q);
    const at = q * C * es;
    if (kernel === "bn_stats_pix") e.bn_stats_pix(x + at, C, dt, pix, o1, o2, acc, cached);
    else if (kernel === "bn_sums_pix") {
      e.bn_sums_pix(dy + at, x + at, C, dt, pix, k, o1, o2, acc, cached);
    } else if (kernel === "bn_grad_pix") e.bn_grad_pix(dy + at, x + at, out + at, C, dt, pix, k);
    else if (kernel === "bn_scale_pix") e.bn_scale_pix(dy + at, out + at, C, dt, pix, k);
    else e[kernel](x + at, out + at, C, dt, pix, k);
  }
}

/** What a pass leaves: the output block's bytes and the float64 results. */
function result(w: WasmState): Uint8Array {
  const out = new Uint8Array(w.memory.buffer, blockAt(w, "out"), elements * es);
  const sums = new Uint8Array(w.memory.buffer, slotAt(w, 4), 16 * C);
  return new Uint8Array([...out, ...sums]);
}

const builds = [await load(paths[0]), await load(paths[1])];
const warmUntil = performance.now() + 1500;
while (performance.now() < warmUntil) {
  for (const kernel of kernels) for (const w of builds) pass(w, kernel);
}
console.log(
  `${flags.dtype}, ${pixels} pixels of ${C} channels (${
    (elements * es / 2 ** 20).toFixed(1)
  } MiB), cached ${cached}, ${rounds} rounds; ns per element (medians), B/A the median ratio`,
);
for (const kernel of kernels) {
  const bytes = builds.map((w) => {
    new Uint8Array(w.memory.buffer, blockAt(w, "out"), elements * es).fill(0);
    pass(w, kernel);
    return result(w);
  });
  const same = bytes[0].every((v, i) => v === bytes[1][i]);
  const times: number[][] = [[], []];
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    for (const side of r % 2 ? [1, 0] : [0, 1]) {
      const start = performance.now();
      for (let p = 0; p < passes; p++) pass(builds[side], kernel);
      times[side].push((performance.now() - start) * 1e6 / (passes * elements));
    }
    ratios.push(times[1].at(-1)! / times[0].at(-1)!);
  }
  const [a, b] = times.map(median);
  console.log(
    `${kernel.padEnd(14)} A ${a.toFixed(3)}  B ${b.toFixed(3)}  B/A ${
      median(ratios).toFixed(3)
    }  ` +
      (same ? "same bits" : "DIFFERENT BITS"),
  );
}
