/**
 * `deno task bench:dispatch`: what one small operator call costs on the NPU code path, set
 * against the same sequence of CANN calls made from C, in one run on this machine (issue 8,
 * "dispatch at C speed"). Both run against the software CANN in build/sim, so the simulator's
 * own kernel time is on both sides.
 *
 * Rows (per call, batchNormReduceBackward on [2, 4, 3] float32 with preallocated outputs):
 * - C, full sequence: 9 aclCreateTensor, phase 1, phase 2, 9 aclDestroyTensor;
 * - C, repeatable executor: phase 2 only;
 * - library, repeated call: the same arguments again (the common case in a training loop);
 * - library, first call of a signature: every call has a new shape (cache misses).
 *
 *   deno task bench:dispatch [--calls 20000]
 *
 * Needs `cc` to build bench/native/dispatch.c (it says so and exits 1 without it).
 *
 * @module
 */

import "../scripts/require_deno.ts";
import { parseCommand, positiveInteger } from "../scripts/cli.ts";

type Tensor = import("../mod.ts").Tensor;

const flags = parseCommand({
  name: "bench:dispatch",
  usage: `usage: deno task bench:dispatch [--calls N]
  --calls N    calls per timed loop, at least 1000 (default 20000)
  -h, --help   print this text`,
  options: { calls: { type: "string", default: "20000" } },
});
const calls = Math.max(1000, positiveInteger("bench:dispatch", "calls", flags.calls));
// The library loads only after the checks above: --help and a bad flag answer without it.
const { batchNormReduceBackward, openAscend, Tensor } = await import("../mod.ts");
const root = new URL("..", import.meta.url).pathname;
const simDir = `${root}build/sim`;
const binary = `${root}build/bench/dispatch`;
Deno.env.set("ASCEND_OPP_PATH", simDir);

async function run(cmd: string, args: string[], env: Record<string, string> = {}) {
  try {
    const out = await new Deno.Command(cmd, { args, env, stdout: "piped", stderr: "piped" })
      .output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    if (out.code !== 0) throw new Error(`${cmd} ${args.join(" ")} failed:\n${text}`);
    return text;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      console.error(`bench:dispatch needs a C compiler (cc) to build its C baseline; none found.`);
      Deno.exit(1);
    }
    throw e;
  }
}

await Deno.mkdir(`${root}build/bench`, { recursive: true });
await run("cc", [
  "-O2",
  "-std=c11",
  `-I${root}tests/sim`,
  `${root}bench/native/dispatch.c`,
  `-L${simDir}`,
  "-lacl_rt",
  "-lnnopbase",
  "-lopapi_nn",
  "-lopapi_math",
  "-laclsim_core",
  // RPATH (not RUNPATH): the simulator libraries have no RPATH of their own, and an
  // executable's RPATH also serves the libraries it loads.
  "-Wl,--disable-new-dtags",
  `-Wl,-rpath,${simDir}`,
  "-o",
  binary,
]);
const c = JSON.parse(
  (await run(binary, [String(calls)], { ASCEND_OPP_PATH: simDir })).trim().split("\n").at(-1)!,
);

const npu = openAscend({ libDir: simDir });
function problem(shape: number[]) {
  const C = shape[1];
  const on = (t: Tensor) => t.to(npu);
  return {
    gradOut: on(Tensor.random(shape, { seed: 1 })),
    input: on(Tensor.random(shape, { seed: 2 })),
    mean: on(Tensor.zeros([C])),
    invstd: on(Tensor.ones([C])),
    weight: on(Tensor.ones([C])),
    out: {
      sumDy: on(Tensor.zeros([C])),
      sumDyXmu: on(Tensor.zeros([C])),
      gradWeight: on(Tensor.zeros([C])),
      gradBias: on(Tensor.zeros([C])),
    },
  };
}

/** Best of three rounds of `n` calls, in microseconds per call (stream drained each round). */
function perCall(n: number, call: (i: number) => void): number {
  let best = Infinity;
  for (let round = 0; round < 3; round++) {
    const start = performance.now();
    for (let i = 0; i < n; i++) call(i);
    npu.synchronize();
    best = Math.min(best, ((performance.now() - start) * 1000) / n);
  }
  return best;
}

const same = problem([2, 4, 3]);
const repeated = perCall(calls, () => batchNormReduceBackward(same));
// 80 distinct signatures > the 64-entry call cache: every call is a first call.
const shapes = Array.from({ length: 80 }, (_, i) => problem([2, 4, 3 + i]));
const first = perCall(Math.min(calls, 8000), (i) => batchNormReduceBackward(shapes[i % 80]));
npu.close();

const rows: [string, number][] = [
  ["C, full sequence per call", c.fullUs],
  ["C, repeatable executor", c.repeatableUs],
  ["library, repeated call", repeated],
  ["library, first call of a signature", first],
];
console.log(`dispatch of batchNormReduceBackward [2, 4, 3] f32, ${calls} calls, best of 3`);
for (const [name, us] of rows) {
  console.log(
    `${name.padEnd(36)} ${us.toFixed(2).padStart(7)} us  ${
      (us / c.fullUs).toFixed(2).padStart(5)
    }x C full  ${(us / c.repeatableUs).toFixed(2).padStart(5)}x C repeatable`,
  );
}
