/**
 * Soak run of the NPU code path on the software CANN: tens of thousands of operator calls,
 * printing the simulator's live device allocations and the process RSS as it goes, for three
 * usage styles: results disposed (`using`), preallocated `out` tensors reused, and results left
 * to the garbage collector with an `await` now and then (FinalizationRegistry callbacks only
 * run when the event loop turns).
 *
 *   deno task build:sim
 *   deno run --allow-ffi --allow-env --allow-read bench/soak.ts [--calls 20000]
 *
 * @module
 */

import { parseArgs } from "node:util";
import { batchNormReduceBackward, groupNormBackward, Tensor } from "../mod.ts";
import { openSim, simStats } from "../tests/helpers/ffi_sim.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: { calls: { type: "string", default: "20000" } },
});
const calls = Number(flags.calls);
const npu = openSim();
const shape = [4, 16, 8, 8];
const x = Tensor.random(shape, { seed: 1, device: npu });
const dy = Tensor.random(shape, { seed: 2, device: npu });
const mean = Tensor.random([16], { seed: 3, device: npu });
const invstd = Tensor.ones([16], "float32", npu);
const gnMean = Tensor.zeros([4, 4], "float32", npu);
const gnRstd = Tensor.ones([4, 4], "float32", npu);

function report(style: string, i: number): void {
  const s = simStats();
  const rss = (Deno.memoryUsage().rss / 2 ** 20).toFixed(1);
  console.log(
    `${style.padEnd(10)} call ${String(i).padStart(6)}: live device allocations ${
      String(s.deviceAllocations).padStart(5)
    }, device bytes ${String(s.deviceBytes).padStart(9)}, RSS ${rss} MiB`,
  );
}

const every = Math.max(1, Math.floor(calls / 4));

// 1. Results disposed as soon as they are read.
for (let i = 1; i <= calls; i++) {
  const r = batchNormReduceBackward({ gradOut: dy, input: x, mean, invstd });
  using _a = r.sumDy!, _b = r.sumDyXmu!, _c = r.gradWeight!, _d = r.gradBias!;
  const g = groupNormBackward({ gradOut: dy, input: x, mean: gnMean, rstd: gnRstd, group: 4 });
  using _e = g.gradInput!, _f = g.gradGamma!, _g = g.gradBeta!;
  if (i % every === 0) report("dispose", i);
}

// 2. Preallocated outputs reused through `out`.
const out = {
  sumDy: Tensor.zeros([16], "float32", npu),
  sumDyXmu: Tensor.zeros([16], "float32", npu),
  gradWeight: Tensor.zeros([16], "float32", npu),
  gradBias: Tensor.zeros([16], "float32", npu),
};
for (let i = 1; i <= calls; i++) {
  batchNormReduceBackward({ gradOut: dy, input: x, mean, invstd, out });
  if (i % every === 0) report("out", i);
}

// 3. Nothing disposed: the FinalizationRegistry frees outputs once the event loop turns.
for (let i = 1; i <= calls; i++) {
  batchNormReduceBackward({ gradOut: dy, input: x, mean, invstd });
  if (i % 500 === 0) await new Promise((resolve) => setTimeout(resolve, 0));
  if (i % every === 0) report("gc", i);
}
npu.close();
const s = simStats();
console.log(`after close: live device allocations ${s.deviceAllocations}, tensors ${s.tensors}`);
