/**
 * `deno task bench:syncbn`: one SyncBatchNorm step (forward + backward) with 2 and 4 ranks,
 * over HCCL (one process per rank, each with its own NPU) set against createLocalProcessGroup
 * (the same ranks as async tasks of one process, each on its own NPU), in one run. Prints the
 * median milliseconds per step (the slowest rank's) and the ratio.
 *
 *   deno task bench:syncbn [--lib-dir DIR | --sim] [--steps 30] [--shape 16,32,16,16]
 *
 * On this project's machines it runs on the software CANN (`--sim`, the task's default): the
 * numbers then time the FFI path, the simulator's C kernels and the software HCCL's Unix
 * sockets, not an NPU or HCCS links.
 *
 * @module
 */

import "../scripts/require_deno.ts";
import { parseCommand, positiveInteger, usageError } from "../scripts/cli.ts";
import type { AscendDevice, SyncBatchNormCollectives } from "../mod.ts";

type Tensor = import("../mod.ts").Tensor;

const NAME = "bench:syncbn";
const flags = parseCommand({
  name: NAME,
  usage: `usage: deno task bench:syncbn [--sim | --lib-dir DIR] [--steps N] [--shape N,C,H,W]
                           [--ranks W,W,...]
  --sim           the software CANN and HCCL of build/sim (the task passes it)
  --lib-dir DIR   the CANN libraries in DIR (absolute)
  --steps N       training steps per configuration (default 30)
  --shape N,C,... the global batch's shape, N divisible by every W (default 16,32,16,16)
  --ranks W,...   world sizes to time (default 2,4)
  -h, --help      print this text`,
  options: {
    "lib-dir": { type: "string" },
    sim: { type: "boolean", default: false },
    steps: { type: "string", default: "30" },
    shape: { type: "string", default: "16,32,16,16" },
    ranks: { type: "string", default: "2,4" },
  },
});
const libDir = flags.sim ? new URL("../build/sim", import.meta.url).pathname : flags["lib-dir"];
const steps = positiveInteger(NAME, "steps", flags.steps);
const shape = flags.shape.split(",").map((d) => positiveInteger(NAME, "shape", d));
for (const w of flags.ranks.split(",")) {
  const W = positiveInteger(NAME, "ranks", w);
  if (shape[0] % W !== 0) usageError(NAME, `--ranks ${W} must divide N = ${shape[0]}`);
}
// The library loads only after the checks above: --help and a bad flag answer without it.
const {
  createHcclProcessGroup,
  createLocalProcessGroup,
  openAscend,
  syncBatchNormBackward,
  syncBatchNormForward,
  Tensor,
} = await import("../mod.ts");
const C = shape[1];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** One step on one rank; `share` is this rank's [N/W, ...] input. */
async function step(
  device: AscendDevice,
  input: Tensor,
  gradOut: Tensor,
  g: SyncBatchNormCollectives,
) {
  const weight = Tensor.ones([C], "float32", device);
  const fwd = await syncBatchNormForward({ input, weight, allGather: g.allGather });
  const bwd = await syncBatchNormBackward({
    gradOut,
    input,
    weight,
    mean: fwd.mean,
    invstd: fwd.invstd,
    counts: fwd.counts,
    allReduce: g.allReduce,
  });
  bwd.gradInput!.slice(0, 0, 1).toArray(); // wait for the device
  for (const t of [fwd.output, fwd.mean, fwd.invstd, fwd.counts, bwd.gradInput!, weight]) {
    t.dispose();
  }
  bwd.gradWeight?.dispose();
  bwd.gradBias?.dispose();
}

function shareOf(W: number, rank: number, device: AscendDevice) {
  const rows = shape[0] / W;
  const per = [rows, ...shape.slice(1)];
  return {
    input: Tensor.random(per, { seed: 1 + rank, device }),
    gradOut: Tensor.random(per, { seed: 100 + rank, device }),
  };
}

/** A rank process: times `steps` steps after 3 warm-up steps, prints the per-step times. */
async function rankProcess(): Promise<void> {
  const rank = Number(Deno.env.get("RANK"));
  const W = Number(Deno.env.get("WORLD_SIZE"));
  using npu = openAscend({ deviceId: rank, libDir });
  using group = await createHcclProcessGroup({ device: npu, timeoutMs: 60_000 });
  const { input, gradOut } = shareOf(W, rank, npu);
  const times: number[] = [];
  for (let i = 0; i < steps + 3; i++) {
    const t0 = performance.now();
    await step(npu, input, gradOut, group);
    if (i >= 3) times.push(performance.now() - t0);
  }
  console.log(JSON.stringify(times));
}

async function overHccl(W: number): Promise<number> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = String((listener.addr as Deno.NetAddr).port);
  listener.close();
  const outputs = await Promise.all(
    Array.from({ length: W }, (_, r) =>
      new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--allow-ffi",
          "--allow-env",
          "--allow-read",
          "--allow-net=127.0.0.1",
          new URL(import.meta.url).pathname,
          ...Deno.args,
        ],
        env: {
          RANK: String(r),
          WORLD_SIZE: String(W),
          MASTER_ADDR: "127.0.0.1",
          MASTER_PORT: port,
          ...(flags.sim ? { ACLSIM_DEVICE_COUNT: String(W) } : {}),
        },
        stdout: "piped",
        stderr: "piped",
      }).output()),
  );
  const perRank = outputs.map((o, r) => {
    if (o.code !== 0) throw new Error(`rank ${r}: ${new TextDecoder().decode(o.stderr)}`);
    return JSON.parse(new TextDecoder().decode(o.stdout).trim().split("\n").at(-1)!) as number[];
  });
  // A step ends when its slowest rank ends.
  return median(perRank[0].map((_, i) => Math.max(...perRank.map((t) => t[i]))));
}

async function overLocalGroup(W: number): Promise<number> {
  if (flags.sim) Deno.env.set("ACLSIM_DEVICE_COUNT", String(W));
  const devices = Array.from({ length: W }, (_, r) => openAscend({ deviceId: r, libDir }));
  try {
    const shares = devices.map((d, r) => shareOf(W, r, d));
    const times: number[] = [];
    for (let i = 0; i < steps + 3; i++) {
      const group = createLocalProcessGroup(W);
      const t0 = performance.now();
      await Promise.all(
        group.map((g, r) => step(devices[r], shares[r].input, shares[r].gradOut, g)),
      );
      if (i >= 3) times.push(performance.now() - t0);
    }
    return median(times);
  } finally {
    for (const d of devices) d.close();
  }
}

if (Deno.env.get("RANK") !== undefined) {
  await rankProcess();
} else {
  console.log(
    `SyncBatchNorm step (forward + backward), shape [${shape}] split over the ranks, ` +
      `median of ${steps}${flags.sim ? ", software CANN" : ""}`,
  );
  console.log("ranks   HCCL (W processes)   local group (1 process)   HCCL / local");
  for (const W of flags.ranks.split(",").map(Number)) {
    const hccl = await overHccl(W);
    const local = await overLocalGroup(W);
    console.log(
      `${String(W).padStart(5)}   ${hccl.toFixed(2).padStart(13)} ms   ${
        local.toFixed(2).padStart(18)
      } ms   ${(hccl / local).toFixed(2).padStart(11)}x`,
    );
  }
}
