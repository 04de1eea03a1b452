/**
 * Soak run of the NPU code path on the software CANN: many small operator calls in four usage
 * styles, reporting the device allocator's figures (`device.memory()`), the simulator's native
 * allocations and the process RSS at the start and end of each, and whether it stayed flat:
 *
 * 1. `dispose`: results disposed once read;
 * 2. `using/tidy`: results bound with `using` (even the result object), and a `tidy` scope;
 * 3. `out`: preallocated outputs reused;
 * 4. `gc`: nothing disposed, the loop yielding to the event loop every 200 calls (the
 *    FinalizationRegistry backstop then frees what became garbage). With `--v8-flags=--expose-gc`
 *    its end is taken after two full collections, each followed by two turns of the event loop,
 *    so that it shows what the backstop frees rather than when V8 chose to collect.
 *
 *   deno task build:sim
 *   deno run --allow-ffi --allow-env --allow-read bench/soak.ts [--calls 20000] [--json]
 *
 * tests/tensor/memory.test.ts runs it with fewer calls and asserts every style stays flat.
 *
 * @module
 */

import { parseCommand } from "../scripts/cli.ts";
import "../scripts/require_deno.ts";

const flags = parseCommand({
  name: "bench/soak.ts",
  usage: `usage: deno run --allow-ffi --allow-env --allow-read bench/soak.ts [--calls N] [--json]
  --calls N    calls per loop style (default 20000)
  --json       print the results as JSON
  -h, --help   print this text`,
  options: { calls: { type: "string", default: "20000" }, json: { type: "boolean" } },
});
const calls = Number(flags.calls);
// The library loads only after the checks above: --help and a bad flag answer without it.
const { batchNormReduceBackward, groupNormBackward, Tensor, tidy } = await import("../mod.ts");
const { openSim, simStats } = await import("../tests/helpers/ffi_sim.ts");
const npu = openSim();
const shape = [4, 16, 8, 8];
const x = Tensor.random(shape, { seed: 1, device: npu });
const dy = Tensor.random(shape, { seed: 2, device: npu });
const mean = Tensor.random([16], { seed: 3, device: npu });
const invstd = Tensor.ones([16], "float32", npu);
const gnMean = Tensor.zeros([4, 4], "float32", npu);
const gnRstd = Tensor.ones([4, 4], "float32", npu);

/** What one style held at its start and end. */
interface Snapshot {
  blocksInUse: number;
  bytesInUse: number;
  bytesCached: number;
  nativeAllocations: number;
  rssMiB: number;
}

function snapshot(): Snapshot {
  npu.synchronize(); // settle deferred releases, so the figures are the steady state
  const m = npu.memory();
  return {
    blocksInUse: m.blocksInUse,
    bytesInUse: m.bytesInUse,
    bytesCached: m.bytesCached,
    nativeAllocations: simStats().deviceAllocations,
    rssMiB: Math.round(Deno.memoryUsage().rss / 2 ** 20),
  };
}

const results: { style: string; start: Snapshot; end: Snapshot; peakBlocksInUse: number }[] = [];

/**
 * With `--expose-gc`: twice, a synchronisation, a full collection and two turns of the event
 * loop for the finalizers. The first collection cannot take what the loop's last job still
 * reaches (the WeakRefs made in a job hold their targets until it ends); the second can.
 */
async function collect(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return;
  for (let round = 0; round < 2; round++) {
    npu.synchronize();
    gc();
    for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setTimeout(resolve, 0));
  }
}

async function style(
  name: string,
  body: (i: number) => void | Promise<void>,
  beforeEnd?: () => Promise<void>,
): Promise<void> {
  // A warm-up pass first: the allocator's cache and V8's heap reach their steady size.
  for (let i = 0; i < Math.min(500, calls); i++) await body(i);
  npu.resetPeakMemory();
  const start = snapshot();
  for (let i = 1; i <= calls; i++) await body(i);
  await beforeEnd?.();
  const end = snapshot();
  results.push({ style: name, start, end, peakBlocksInUse: npu.memory().peakBytesInUse });
}

await style("dispose", () => {
  const r = batchNormReduceBackward({ gradOut: dy, input: x, mean, invstd });
  r.sumDy?.dispose();
  r.sumDyXmu?.dispose();
  r.gradWeight?.dispose();
  r.gradBias?.dispose();
});

await style("using/tidy", (i) => {
  if (i % 2 === 0) {
    using _r = batchNormReduceBackward({ gradOut: dy, input: x, mean, invstd });
    using _g = groupNormBackward({ gradOut: dy, input: x, mean: gnMean, rstd: gnRstd, group: 4 });
  } else {
    tidy(() => batchNormReduceBackward({ gradOut: dy, input: x, mean, invstd }).sumDy?.shape);
  }
});

const out = {
  sumDy: Tensor.zeros([16], "float32", npu),
  sumDyXmu: Tensor.zeros([16], "float32", npu),
  gradWeight: Tensor.zeros([16], "float32", npu),
  gradBias: Tensor.zeros([16], "float32", npu),
};
await style("out", () => {
  batchNormReduceBackward({ gradOut: dy, input: x, mean, invstd, out });
});

await style("gc", async (i) => {
  batchNormReduceBackward({ gradOut: dy, input: x, mean, invstd });
  if (i % 200 === 0) await new Promise((resolve) => setTimeout(resolve, 0));
}, collect);
npu.close();
const final = simStats();

if (flags.json) {
  console.log(JSON.stringify({ calls, results, final }));
} else {
  console.log(`soak: ${calls} calls per style (device figures after a synchronisation)`);
  for (const { style, start, end } of results) {
    console.log(
      `${style.padEnd(11)} blocks in use ${start.blocksInUse} -> ${end.blocksInUse}, cached ` +
        `${start.bytesCached} -> ${end.bytesCached} B, native allocations ` +
        `${start.nativeAllocations} -> ${end.nativeAllocations}, RSS ${start.rssMiB} -> ` +
        `${end.rssMiB} MiB`,
    );
  }
  console.log(
    `after close: native allocations ${final.deviceAllocations}, tensors ${final.tensors}`,
  );
}
