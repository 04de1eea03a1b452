/**
 * SyncBatchNorm across W processes over HCCL, one NPU per process, as `torchrun` +
 * `init_process_group("hccl")` gives it: this script launches W copies of itself (ranks), each
 * opens NPU `LOCAL_RANK`, joins the HCCL group through the rendezvous at MASTER_ADDR:MASTER_PORT
 * and runs one SyncBatchNorm forward + backward on its share of a seeded batch (the ranks hold
 * unequal shares). The launcher then compares every rank's results with single-process
 * BatchNorm on the whole batch (the CPU backend) and prints the largest deviations.
 *
 * Run (with CANN and W NPUs): `deno task example:syncbn -- --ranks 4`
 * Without an NPU, on the software CANN: `deno task example:syncbn:sim -- --ranks 4`
 *
 * Flags: `--ranks W` (default 2), `--lib-dir DIR` (the CANN lib64), `--sim` (build/sim),
 * `--dtype float32|float16|bfloat16`, `--port P` (default: a free port).
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  batchNorm,
  batchNormBackward,
  createHcclProcessGroup,
  type DType,
  openAscend,
  syncBatchNormBackward,
  syncBatchNormForward,
  Tensor,
} from "../mod.ts";
import { describeLibraries } from "../ascend.ts";

const USAGE = `usage: deno task example:syncbn [-- --ranks W] [--sim | --lib-dir DIR]
                                [--dtype float32|float16|bfloat16] [--port P]
  --ranks W       rank processes, one NPU each (default 2)
  --sim           the software CANN and HCCL of build/sim (example:syncbn:sim passes it)
  --lib-dir DIR   the CANN libraries in DIR (absolute)
  --dtype D       data dtype (default float32)
  --port P        rank 0's rendezvous port (default: a free one)
  -h, --help      print this text`;

/** One line naming the problem, exit 2 (no stack trace). */
function usageError(message: string): never {
  console.error(`example:syncbn: ${message} (see --help)`);
  Deno.exit(2);
}

const args = Deno.args.filter((arg) => arg !== "--");
if (args.includes("--help") || args.includes("-h")) {
  console.log(USAGE);
  Deno.exit(0);
}
function parseFlags() {
  return parseArgs({
    args,
    options: {
      ranks: { type: "string", default: "2" },
      "lib-dir": { type: "string" },
      sim: { type: "boolean", default: false },
      dtype: { type: "string", default: "float32" },
      port: { type: "string" },
    },
  }).values;
}
let flags: ReturnType<typeof parseFlags>;
try {
  flags = parseFlags();
} catch (e) {
  usageError((e as Error).message.split("\n")[0]);
}
const W = Number(flags.ranks);
if (!Number.isInteger(W) || W < 1) {
  usageError(`--ranks must be a positive integer, got "${flags.ranks}"`);
}
if (!["float32", "float16", "bfloat16"].includes(flags.dtype)) {
  usageError(`--dtype must be float32, float16 or bfloat16, got "${flags.dtype}"`);
}
const dtype = flags.dtype as DType;
const libDir = flags.sim ? new URL("../build/sim", import.meta.url).pathname : flags["lib-dir"];
const [C, H, Wd] = [8, 4, 4];
const splits = Array.from({ length: W }, (_, r) => 2 + (r % 3)); // unequal shares: 2, 3, 4, 2, ...
const N = splits.reduce((a, b) => a + b, 0);
const TOLERANCE: Record<string, number> = { float32: 1e-4, float16: 2e-2, bfloat16: 1e-1 };

/** The whole batch; every rank builds the same one from the seeds and takes its rows. */
function batch() {
  return {
    x: Tensor.random([N, C, H, Wd], { seed: 1, dtype, distribution: "normal", low: 1, high: 2 }),
    dy: Tensor.random([N, C, H, Wd], { seed: 2, dtype, distribution: "normal" }),
    weight: Tensor.random([C], { seed: 3, low: 0.5, high: 1.5 }),
    bias: Tensor.random([C], { seed: 4 }),
  };
}

/** One rank (a child process): prints its results as one JSON line. */
async function rank(): Promise<void> {
  const r = Number(Deno.env.get("RANK"));
  using npu = openAscend({ deviceId: Number(Deno.env.get("LOCAL_RANK") ?? r), libDir });
  using group = await createHcclProcessGroup({ device: npu, timeoutMs: 60_000 });
  const { x, dy, weight, bias } = batch();
  const start = splits.slice(0, r).reduce((a, b) => a + b, 0);
  const input = x.slice(0, start, start + splits[r]).to(npu);
  const gradOut = dy.slice(0, start, start + splits[r]).to(npu);
  const runningMean = Tensor.zeros([C], "float32", npu);
  const runningVar = Tensor.ones([C], "float32", npu);
  const began = performance.now();
  const fwd = await syncBatchNormForward({
    input,
    weight: weight.to(npu),
    bias: bias.to(npu),
    runningMean,
    runningVar,
    allGather: group.allGather,
  });
  const bwd = await syncBatchNormBackward({
    gradOut,
    input,
    weight: weight.to(npu),
    mean: fwd.mean,
    invstd: fwd.invstd,
    counts: fwd.counts,
    allReduce: group.allReduce,
  });
  const output = fwd.output.toArray(); // reading synchronises the stream
  const ms = performance.now() - began;
  console.log(JSON.stringify({
    rank: r,
    ms,
    output,
    gradInput: bwd.gradInput!.toArray(),
    gradWeight: bwd.gradWeight!.toArray(),
    runningMean: runningMean.toArray(),
    runningVar: runningVar.toArray(),
  }));
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

function worst(actual: number[], expected: Float64Array): number {
  let w = 0;
  for (let i = 0; i < expected.length; i++) {
    w = Math.max(w, Math.abs(actual[i] - expected[i]) / Math.max(1, Math.abs(expected[i])));
  }
  return w;
}

/** The launcher: starts W ranks, then checks them against single-process BatchNorm. */
async function launch(): Promise<void> {
  if (!(Number.isInteger(W) && W >= 1)) {
    console.error(`--ranks ${flags.ranks} must be an integer >= 1`);
    Deno.exit(2);
  }
  const cann = describeLibraries({ libDir });
  if (!cann.found) {
    // The report lists every path tried, one indented line each: keep them, on one line.
    const lines = (cann.error ?? "").split("\n");
    const tried = lines.filter((l) => /^\s/.test(l) && !l.endsWith(":")).map((l) => l.trim());
    console.error(
      `No CANN libraries found (${tried.length > 0 ? `tried: ${tried.join("; ")}` : lines[0]}). ` +
        `This example needs Ascend NPUs with HCCL; without them run it on the software CANN: ` +
        `deno task example:syncbn:sim -- --ranks ${W}`,
    );
    Deno.exit(2);
  }
  const port = flags.port ?? String(freePort());
  console.log(
    `launching ${W} ranks (batch ${N} split ${splits.join("+")}, ${dtype}), ` +
      `rendezvous at 127.0.0.1:${port}${flags.sim ? ", on the software CANN" : ""}`,
  );
  const script = new URL(import.meta.url).pathname;
  const children = Array.from({ length: W }, (_, r) =>
    new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-ffi",
        "--allow-env",
        "--allow-read",
        "--allow-net=127.0.0.1",
        script,
        ...Deno.args,
      ],
      env: {
        RANK: String(r),
        LOCAL_RANK: String(r),
        WORLD_SIZE: String(W),
        MASTER_ADDR: "127.0.0.1",
        MASTER_PORT: port,
        // The software CANN plays as many NPUs as there are ranks (real CANN ignores this).
        ...(flags.sim ? { ACLSIM_DEVICE_COUNT: String(W) } : {}),
      },
      stdout: "piped",
      stderr: "piped",
    }).output());
  const outputs = await Promise.all(children);
  const failed = outputs.findIndex((o) => o.code !== 0);
  if (failed >= 0) {
    const stderr = new TextDecoder().decode(outputs[failed].stderr);
    const reason = stderr.split("\n").find((line) => /error/i.test(line)) ?? stderr;
    console.error(`rank ${failed} failed: ${reason.trim()}`);
    Deno.exit(1);
  }
  const results = outputs.map((o) =>
    JSON.parse(new TextDecoder().decode(o.stdout).trim().split("\n").at(-1)!)
  );

  const { x, dy, weight, bias } = batch();
  const runningMean = Tensor.zeros([C]);
  const runningVar = Tensor.ones([C]);
  const single = batchNorm({ input: x, weight, bias, runningMean, runningVar, training: true });
  const grads = batchNormBackward({
    gradOut: dy,
    input: x,
    weight,
    saveMean: single.saveMean,
    saveInvstd: single.saveInvstd,
    training: true,
  });
  const concat = (key: string) => results.flatMap((r) => r[key] as number[]);
  const sumOver = (key: string) =>
    results.reduce((acc: number[], r) => acc.map((v, i) => v + r[key][i]), new Array(C).fill(0));
  const rows: [string, number][] = [
    ["output", worst(concat("output"), single.output.toFloat64Array())],
    ["gradInput", worst(concat("gradInput"), grads.gradInput!.toFloat64Array())],
    [
      "gradWeight (sum over ranks)",
      worst(sumOver("gradWeight"), grads.gradWeight!.toFloat64Array()),
    ],
    [
      "runningMean",
      Math.max(...results.map((r) => worst(r.runningMean, runningMean.toFloat64Array()))),
    ],
    [
      "runningVar",
      Math.max(...results.map((r) => worst(r.runningVar, runningVar.toFloat64Array()))),
    ],
  ];
  const tolerance = TOLERANCE[dtype] ?? 1e-4;
  let ok = true;
  for (const [name, deviation] of rows) {
    const pass = deviation <= tolerance;
    ok &&= pass;
    console.log(
      `${name.padEnd(28)} max deviation ${deviation.toExponential(2)} ${pass ? "ok" : "FAIL"}`,
    );
  }
  const slowest = Math.max(...results.map((r) => r.ms));
  console.log(
    `one SyncBatchNorm step (forward + backward) took ${slowest.toFixed(1)} ms on the slowest rank`,
  );
  console.log(`${W} ranks over HCCL agree with single-process BatchNorm: ${ok ? "ok" : "FAIL"}`);
  if (!ok) Deno.exit(1);
}

if (Deno.env.get("RANK") === undefined) await launch();
else await rank();
