/**
 * Two builds of the WebAssembly kernels side by side in one process: each kernel's time per
 * element in build A and in build B, interleaved call by call over many rounds, and the median
 * of each round's B/A ratio; then whether one call of each kernel (its arrays written first)
 * writes the same bytes in both builds. This VM slows every process down by 50-60% in bursts of a
 * second or two (both builds of one process slow together: bench/RESULTS.md, seventeenth
 * session), so timings from separate processes need many runs each way; ratios within one
 * round do not.
 *
 *   deno task bench:ab --a A/kernels_wasm.ts --b B/kernels_wasm.ts
 *     [--kernels ln_bwd,bn_grad_rows] [--dtype float32|float16|bfloat16] [--rounds 30]
 *
 * A and B are generated kernels modules (src/backends/cpu/wasm/kernels_wasm.ts of a worktree
 * or a copy), each exporting `kernelsWasmBytes()`, or FP16 builds (kernels_fp16_wasm.ts,
 * `kernelsFp16WasmBytes()`), which need the engine's flag:
 * `deno run --v8-flags=--experimental-wasm-fp16 --allow-read bench/kernel_ab.ts ...`. Both run on
 * a memory of the host heap's size, which either build's import accepts.
 *
 * @module
 */

import { parseCommand, positiveInteger, usageError } from "../scripts/cli.ts";
// The dtype codes alone (a module of constants): the kernels load after the flags.
import { kernelDtypeCode } from "./kernel_dtypes.ts";

const flags = parseCommand({
  name: "bench:ab",
  usage: `usage: deno task bench:ab --a PATH --b PATH [--kernels a,b]
                         [--dtype float32|float16|bfloat16] [--rounds R]
  --a PATH        build A: a generated kernels module (kernels_wasm.ts, or kernels_fp16_wasm.ts
                  under --v8-flags=--experimental-wasm-fp16)
  --b PATH        build B, the same
  --kernels a,b   kernel exports to time (default all)
  --dtype D       float32, float16 or bfloat16 (default float32; bfloat16 as the drivers pass it
                  when no constant is NaN, code 3)
  --rounds R      interleaved rounds (default 30)
  -h, --help      print this text`,
  options: {
    a: { type: "string", default: "" },
    b: { type: "string", default: "" },
    kernels: { type: "string", default: "" },
    dtype: { type: "string", default: "float32" },
    rounds: { type: "string", default: "30" },
  },
});

const paths: string[] = [flags.a, flags.b];
if (paths.includes("")) usageError("bench:ab", "--a and --b name the two builds");
const dt = kernelDtypeCode("bench:ab", flags.dtype);
const rounds = positiveInteger("bench:ab", "rounds", flags.rounds);
// The kernels load only after the checks above: --help and a bad flag answer without them.
const { kernelCalls } = await import("../tests/fixtures/kernel_calls.ts");
const { K, median, nsPerElement, SHAPE, signalInstance } = await import("./kernel_timing.ts");

/** The bytes of a generated kernels module at `path` (relative to the working directory). */
async function buildAt(path: string): Promise<Uint8Array> {
  const url = new URL(path, `file://${Deno.cwd()}/`).href;
  const module = await import(url);
  const bytes = module.kernelsWasmBytes ?? module.kernelsFp16WasmBytes;
  if (typeof bytes !== "function") {
    throw new Error(`${path}: exports neither kernelsWasmBytes() nor kernelsFp16WasmBytes()`);
  }
  return bytes();
}

const sides = await Promise.all(paths.map(async (path) => {
  const w = signalInstance(await buildAt(path), dt);
  return { w, calls: kernelCalls(dt, SHAPE, K) };
}));
const all = sides[0].calls.map((c) => c.kernel);
const wanted: string[] = flags.kernels ? flags.kernels.split(",") : all;
for (const name of wanted) {
  if (!all.includes(name)) {
    usageError("bench:ab", `no kernel ${name} (kernels: ${all.join(", ")})`);
  }
}
const callOf = (side: number, name: string) => sides[side].calls.find((c) => c.kernel === name)!;

const warmUntil = performance.now() + 1500;
while (performance.now() < warmUntil) {
  for (const name of wanted) for (const side of [0, 1]) callOf(side, name).run(sides[side].w);
}
const times = wanted.map(() => [[], []] as number[][]);
const ratios = wanted.map(() => [] as number[]);
for (let r = 0; r < rounds; r++) {
  wanted.forEach((name, k) => {
    // Alternate which build goes first.
    for (const side of r % 2 ? [1, 0] : [0, 1]) {
      times[k][side].push(nsPerElement(callOf(side, name), sides[side].w, 5));
    }
    ratios[k].push(times[k][1].at(-1)! / times[k][0].at(-1)!);
  });
}
/** Whether one call of `name` (its arrays written first) writes the same bytes in A and B. */
function sameBits(name: string): boolean {
  const written = [0, 1].map((side) => {
    const { w } = sides[side];
    const call = callOf(side, name);
    call.setup(w);
    call.run(w);
    const bytes = new Uint8Array(w.memory.buffer);
    return call.outputs(w).map(([at, length]) => bytes.slice(at, at + length));
  });
  return written[0].length === written[1].length &&
    written[0].every((a, i) =>
      a.length === written[1][i].length && a.every((x, j) => x === written[1][i][j])
    );
}

console.log(
  `${flags.dtype}, ${rounds} rounds, ns per element (medians), B/A the median ratio, ` +
    "and whether one call writes the same bits in both",
);
console.log(`${"kernel".padEnd(20)}${"A".padStart(8)}${"B".padStart(8)}${"B/A".padStart(8)}  bits`);
wanted.forEach((name, k) => {
  const [a, b] = times[k].map(median);
  console.log(
    `${name.padEnd(20)}${a.toFixed(3).padStart(8)}${b.toFixed(3).padStart(8)}` +
      `${median(ratios[k]).toFixed(3).padStart(8)}  ${sameBits(name) ? "same" : "DIFFERENT"}`,
  );
});
