/**
 * Synchronous soak of the NPU code path on the software CANN: `--calls` calls of
 * batchNormReduceBackward in one synchronous job (the loop never awaits), every result
 * disposed (`dispose` style) or freed by a `tidy` scope per call (`tidy` style). Every
 * `--every` calls it prints the process RSS and the JavaScript heap, after a full garbage
 * collection when `gc` is exposed (run with `--v8-flags=--expose-gc`), plus the device's
 * live buffers and blocks in use after a synchronisation.
 *
 * What it checks: nothing the library makes per call may outlive the call once its results
 * are disposed, so the heap and RSS stay flat however long the job runs without yielding.
 *
 *   deno task build:sim
 *   deno run --allow-ffi --allow-env --allow-read --v8-flags=--expose-gc bench/npu_soak.ts \
 *     [--calls 60000] [--every 10000] [--style dispose|tidy] [--json]
 *
 * `--json` prints one JSON line at the end: `{ style, calls, rows: [{ calls, rssMiB, heapMiB,
 * liveBuffers, blocksInUse }] }` (tests/ffi/npu_soak.test.ts runs a bounded version).
 *
 * @module
 */

import { parseCommand } from "../scripts/cli.ts";
import "../scripts/require_deno.ts";

const flags = parseCommand({
  name: "bench/npu_soak.ts",
  usage:
    `usage: deno run --allow-ffi --allow-env --allow-read --v8-flags=--expose-gc bench/npu_soak.ts
         [--calls N] [--every N] [--style dispose|tidy] [--json]
  --calls N     synchronous calls (default 60000)
  --every N     a row every N calls (default 10000)
  --style S     dispose (default) or tidy
  --json        print the rows as JSON
  -h, --help    print this text`,
  options: {
    calls: { type: "string", default: "60000" },
    every: { type: "string", default: "10000" },
    style: { type: "string", default: "dispose" },
    json: { type: "boolean" },
  },
});
const calls = Number(flags.calls);
const every = Number(flags.every);
const style = flags.style;
if (style !== "dispose" && style !== "tidy") {
  throw new RangeError(`--style ${style}: expected dispose or tidy`);
}
// The library loads only after the checks above: --help and a bad flag answer without it.
const { batchNormReduceBackward, Tensor, tidy } = await import("../mod.ts");
const { openSim } = await import("../tests/helpers/ffi_sim.ts");

const gc = (globalThis as { gc?: () => void }).gc;
const npu = openSim();
const shape = [4, 16, 8, 8];
const gradOut = Tensor.random(shape, { seed: 1, device: npu });
const input = Tensor.random(shape, { seed: 2, device: npu });
const mean = Tensor.random([16], { seed: 3, device: npu });
const invstd = Tensor.ones([16], "float32", npu);
const args = { gradOut, input, mean, invstd };

function call(): void {
  if (style === "tidy") {
    tidy(() => void batchNormReduceBackward(args));
    return;
  }
  const r = batchNormReduceBackward(args);
  r.sumDy?.dispose();
  r.sumDyXmu?.dispose();
  r.gradWeight?.dispose();
  r.gradBias?.dispose();
}

/** One printed row. */
interface Row {
  calls: number;
  rssMiB: number;
  heapMiB: number;
  liveBuffers: number;
  blocksInUse: number;
}

const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
function row(done: number): Row {
  npu.synchronize(); // frees the releases that waited for the stream: settled figures
  gc?.(); // inside the job: what survives it is what the job keeps alive
  const m = npu.memory();
  const usage = Deno.memoryUsage();
  return {
    calls: done,
    rssMiB: mib(usage.rss),
    heapMiB: mib(usage.heapUsed),
    liveBuffers: m.liveBuffers,
    blocksInUse: m.blocksInUse,
  };
}

const rows: Row[] = [row(0)];
if (!flags.json) {
  console.log(
    `npu_soak: ${calls} synchronous ${style} calls of batchNormReduceBackward ${
      JSON.stringify(shape)
    }, gc ${gc ? "forced at each row" : "not exposed (--v8-flags=--expose-gc)"}`,
  );
  console.log(JSON.stringify(rows[0]));
}
for (let i = 1; i <= calls; i++) {
  call();
  if (i % every === 0 || i === calls) {
    rows.push(row(i));
    if (!flags.json) console.log(JSON.stringify(rows.at(-1)));
  }
}
npu.close();
if (flags.json) console.log(JSON.stringify({ style, calls, gc: gc !== undefined, rows }));
