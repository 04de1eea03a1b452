/**
 * A/B of the NPU code path's per-call cost between this checkout and another one (`--base`,
 * e.g. a `git worktree` of an earlier commit), interleaved in one process on the software
 * CANN: both trees are imported, each opens the simulator, and rounds alternate between them.
 * Two styles of batchNormReduceBackward on [4, 16, 8, 8] float32: results allocated and
 * disposed (`dispose`), and preallocated outputs (`out`). Prints the median of the per-round
 * ratios (this checkout / base: below 1 is faster) with its quartiles, and the median
 * per-call times.
 *
 *   deno task build:sim
 *   deno run --allow-ffi --allow-env --allow-read bench/npu_dispatch_ab.ts --base <checkout>
 *     [--rounds 80] [--calls 500]
 *
 * @module
 */

import "../scripts/require_deno.ts";
import { parseArgs } from "node:util";
import * as current from "../mod.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    base: { type: "string" },
    rounds: { type: "string", default: "80" },
    calls: { type: "string", default: "500" },
  },
});
if (!flags.base) {
  console.error("--base <checkout> is required (a checkout of the commit to compare with)");
  Deno.exit(2);
}
const base = await import(new URL(`file://${Deno.realPathSync(flags.base)}/mod.ts`).href);
const simDir = new URL("../build/sim", import.meta.url).pathname;
if (!Deno.env.get("ASCEND_OPP_PATH")) Deno.env.set("ASCEND_OPP_PATH", simDir);
const rounds = Number(flags.rounds);
const calls = Number(flags.calls);

type Lib = typeof current;
function setup(m: Lib) {
  const npu = m.openAscend({ libDir: simDir });
  const shape = [4, 16, 8, 8];
  const args = {
    gradOut: m.Tensor.random(shape, { seed: 1, device: npu }),
    input: m.Tensor.random(shape, { seed: 2, device: npu }),
    mean: m.Tensor.random([16], { seed: 3, device: npu }),
    invstd: m.Tensor.ones([16], "float32", npu),
  };
  const out = {
    sumDy: m.Tensor.zeros([16], "float32", npu),
    sumDyXmu: m.Tensor.zeros([16], "float32", npu),
    gradWeight: m.Tensor.zeros([16], "float32", npu),
    gradBias: m.Tensor.zeros([16], "float32", npu),
  };
  return {
    npu,
    dispose: () => {
      const r = m.batchNormReduceBackward(args);
      r.sumDy?.dispose();
      r.sumDyXmu?.dispose();
      r.gradWeight?.dispose();
      r.gradBias?.dispose();
    },
    out: () => void m.batchNormReduceBackward({ ...args, out }),
  };
}
const sides = { base: setup(base as Lib), current: setup(current) };
type Style = "dispose" | "out";

function perCall(side: typeof sides.base, style: Style): number {
  const start = performance.now();
  for (let i = 0; i < calls; i++) side[style]();
  side.npu.synchronize();
  return ((performance.now() - start) / calls) * 1000;
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(q * (s.length - 1))];
};
for (const style of ["dispose", "out"] as const) {
  for (let i = 0; i < 4; i++) perCall(sides.base, style), perCall(sides.current, style);
  const ratios: number[] = [];
  const times = { base: [] as number[], current: [] as number[] };
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? (["base", "current"] as const) : (["current", "base"] as const);
    const t = { base: 0, current: 0 };
    for (const name of order) times[name].push(t[name] = perCall(sides[name], style));
    ratios.push(t.current / t.base);
  }
  console.log(
    `${style}: current/base median ${quantile(ratios, 0.5).toFixed(3)} (quartiles ${
      quantile(ratios, 0.25).toFixed(3)
    }-${quantile(ratios, 0.75).toFixed(3)}); per call: base ${
      quantile(times.base, 0.5).toFixed(1)
    } us, current ${quantile(times.current, 0.5).toFixed(1)} us`,
  );
}
sides.base.npu.close();
sides.current.npu.close();
