/**
 * Side-by-side timing in one run: every seed operator on every available device
 * (CPU backend; the NPU code path when CANN opens, e.g. `ACLNN_NORM_LIB_DIR=$PWD/build/sim`), per
 * dtype, reporting the median time and the ratio to the CPU float32 row of the same operator.
 *
 *   deno run --allow-ffi --allow-env --allow-read bench/compare.ts [--shape 8,64,32,32] [--runs 15]
 *
 * @module
 */

import "../scripts/require_deno.ts";
import { parseCommand, positiveInteger, usageError } from "../scripts/cli.ts";
import type { DType } from "../mod.ts";

type Tensor = import("../mod.ts").Tensor;

const NAME = "bench:compare";
const flags = parseCommand({
  name: NAME,
  usage: `usage: deno task bench:compare [--shape N,C,H,W] [--runs N] [--groups G]
  --shape N,C,...   the data shape (default 8,64,32,32)
  --runs N          timed runs per case, at least 3 (default 15)
  --groups G        GroupNorm groups, dividing C (default 32)
  -h, --help        print this text`,
  options: {
    shape: { type: "string", default: "8,64,32,32" },
    runs: { type: "string", default: "15" },
    groups: { type: "string", default: "32" },
  },
});
const shape = flags.shape.split(",").map((d) => positiveInteger(NAME, "shape", d));
if (shape.length < 2 || shape.length > 8) usageError(NAME, "--shape needs 2 to 8 dimensions");
const runs = Math.max(3, positiveInteger(NAME, "runs", flags.runs));
const group = positiveInteger(NAME, "groups", flags.groups);
if (shape[1] % group !== 0) usageError(NAME, `--groups ${group} must divide C = ${shape[1]}`);
const [N, C] = shape;
// The library loads only after the checks above: --help and a bad flag answer without it.
const { batchNormBackward, batchNormReduceBackward, groupNormBackward, Tensor } = await import(
  "../mod.ts"
);
const { benchDevices } = await import("./devices.ts");

function median(run: () => void): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    run();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

interface Row {
  op: string;
  device: string;
  dtype: DType;
  ms: number;
}
const rows: Row[] = [];
const cases: (Omit<Row, "ms"> & { run: () => void })[] = [];
const devices = benchDevices();
const deviceWidth = Math.max(...devices.map((d) => d.name.length)) + 2;

for (const { name, device } of devices) {
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    const put = (t: Tensor) => t.to(device);
    const x = put(Tensor.random(shape, { seed: 1, dtype }));
    const dy = put(Tensor.random(shape, { seed: 2, dtype }));
    const mean = put(Tensor.random([C], { seed: 3 }));
    const invstd = put(Tensor.random([C], { seed: 4, low: 0.5, high: 2 }));
    const weight = put(Tensor.random([C], { seed: 5 }));
    const gnMean = put(Tensor.random([N, group], { seed: 6 }));
    const gnRstd = put(Tensor.random([N, group], { seed: 7, low: 0.5, high: 2 }));
    // Reading an element synchronises the NPU stream, so the time includes the kernel.
    const settle = (t: Tensor | null) => void t?.slice(0, 0, 1).toFloat64Array();
    const ops: Record<string, () => void> = {
      batchNormReduceBackward: () =>
        settle(
          batchNormReduceBackward({ gradOut: dy, input: x, mean, invstd, weight }).gradBias,
        ),
      batchNormBackward: () =>
        settle(
          batchNormBackward({
            gradOut: dy,
            input: x,
            weight,
            saveMean: mean,
            saveInvstd: invstd,
            training: true,
          }).gradInput,
        ),
      groupNormBackward: () =>
        settle(
          groupNormBackward({
            gradOut: dy,
            input: x,
            mean: gnMean,
            rstd: gnRstd,
            gamma: weight,
            group,
          })
            .gradInput,
        ),
    };
    for (const [op, run] of Object.entries(ops)) cases.push({ op, device: name, dtype, run });
  }
}

// Warm every case before timing any (JIT tiers, workspace growth, first touch of outputs), so
// no row pays for the order it runs in.
for (const c of cases) for (let i = 0; i < 3; i++) c.run();
for (const c of cases) rows.push({ op: c.op, device: c.device, dtype: c.dtype, ms: median(c.run) });
for (const { device } of devices) if (device !== "cpu") device.close();

console.log(`shape [${shape.join(", ")}], GroupNorm groups ${group}, median of ${runs} runs`);
console.log(
  `${"operator".padEnd(26)}${"device".padEnd(deviceWidth)}${"dtype".padEnd(10)}${
    "ms".padStart(9)
  }  vs cpu float32`,
);
for (const r of rows) {
  const base = rows.find((b) => b.op === r.op && b.device === "cpu" && b.dtype === "float32")!;
  console.log(
    `${r.op.padEnd(26)}${r.device.padEnd(deviceWidth)}${r.dtype.padEnd(10)}${
      r.ms.toFixed(2).padStart(9)
    }  ${(r.ms / base.ms).toFixed(2)}x`,
  );
}
