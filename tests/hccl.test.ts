/**
 * SyncBatchNorm over HCCL (issue 11): W ranks in W processes, each with its own simulated NPU
 * and the software HCCL of tests/sim, give the same forward and backward as single-process
 * BatchNorm over the whole batch and as createLocalProcessGroup, for uneven batch shares and
 * float32, float16 and bfloat16. Set-up failures (a wrong world size, a rank given twice, a
 * rank that never comes) and a rank that dies mid-way end in clear errors within the timeout.
 */

import assert from "node:assert/strict";
import { createLocalProcessGroup } from "../src/ops/local_process_group.ts";
import { batchNorm } from "../src/ops/batch_norm.ts";
import { batchNormBackward } from "../src/ops/batch_norm_backward.ts";
import { syncBatchNormBackward, syncBatchNormForward } from "../src/ops/sync_batch_norm.ts";
import type { DType } from "../src/tensor/dtype.ts";
import { Tensor } from "../src/tensor/tensor.ts";
import { assertClose } from "./helpers/assert.ts";
import { SIM_DIR } from "./helpers/ffi_sim.ts";
import { type Tolerance, toleranceFor } from "./helpers/tolerance.ts";
import { freePort } from "./helpers/net.ts";
import { wholeBatch } from "./fixtures/hccl_rank_child.ts";

const CHILD = new URL("./fixtures/hccl_rank_child.ts", import.meta.url).pathname;

// deno-lint-ignore no-explicit-any
type RankResult = Record<string, any>;

/**
 * Runs one process per entry of `ranks` (its RANK and WORLD_SIZE), all meeting at one port.
 * Returns each process's JSON line.
 */
async function launch(
  scenario: string,
  dtype: DType,
  splits: number[],
  ranks: { rank: number; worldSize: number; delayMs?: number }[],
  timeoutMs = 20_000,
): Promise<RankResult[]> {
  const port = String(freePort());
  const outputs = await Promise.all(
    ranks.map(async ({ rank, worldSize, delayMs = 0 }) => {
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      return await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", CHILD, scenario, dtype, splits.join(",")],
        env: {
          RANK: String(rank),
          WORLD_SIZE: String(worldSize),
          MASTER_ADDR: "127.0.0.1",
          MASTER_PORT: port,
          ACLSIM_DEVICE_COUNT: String(Math.max(4, worldSize)),
          ASCEND_OPP_PATH: SIM_DIR,
          HCCL_TEST_TIMEOUT_MS: String(timeoutMs),
        },
        stdout: "piped",
        stderr: "piped",
      }).output();
    }),
  );
  return outputs.map((o, i) => {
    const text = new TextDecoder().decode(o.stdout).trim();
    const line = text.split("\n").at(-1);
    if (!line) {
      return {
        ok: false,
        rank: ranks[i].rank,
        exitCode: o.code,
        stderr: new TextDecoder().decode(o.stderr),
      };
    }
    return { ...JSON.parse(line), exitCode: o.code };
  });
}

/** Single-process BatchNorm (CPU backend) on the whole batch, and the local process group. */
async function references(dtype: DType, splits: number[]) {
  const p = wholeBatch(splits, dtype);
  const C = p.x.shape[1];
  const runningMean = Tensor.zeros([C]);
  const runningVar = Tensor.ones([C]);
  const single = batchNorm({
    input: p.x,
    weight: p.weight,
    bias: p.bias,
    runningMean,
    runningVar,
    training: true,
    momentum: 0.1,
    eps: 1e-5,
  });
  const grads = batchNormBackward({
    gradOut: p.dy,
    input: p.x,
    weight: p.weight,
    saveMean: single.saveMean,
    saveInvstd: single.saveInvstd,
    training: true,
  });
  const group = createLocalProcessGroup(splits.length);
  const local = await Promise.all(group.map(async (g, r) => {
    const start = splits.slice(0, r).reduce((a, b) => a + b, 0);
    const input = p.x.slice(0, start, start + splits[r]);
    const rm = Tensor.zeros([C]);
    const rv = Tensor.ones([C]);
    const fwd = await syncBatchNormForward({
      input,
      weight: p.weight,
      bias: p.bias,
      runningMean: rm,
      runningVar: rv,
      momentum: 0.1,
      eps: 1e-5,
      allGather: g.allGather,
    });
    const bwd = await syncBatchNormBackward({
      gradOut: p.dy.slice(0, start, start + splits[r]),
      input,
      weight: p.weight,
      mean: fwd.mean,
      invstd: fwd.invstd,
      counts: fwd.counts,
      allReduce: g.allReduce,
    });
    return { fwd, bwd };
  }));
  return { single, grads, runningMean, runningVar, local };
}

async function agreesWithSingleProcess(dtype: DType, splits: number[]): Promise<void> {
  const W = splits.length;
  const results = await launch(
    "syncbn",
    dtype,
    splits,
    splits.map((_, rank) => ({ rank, worldSize: W })),
  );
  for (const r of results) assert.ok(r.ok, `rank ${r.rank}: ${JSON.stringify(r)}`);
  const ref = await references(dtype, splits);
  const data: Tolerance = toleranceFor(dtype);
  const stats: Tolerance = toleranceFor("float32");
  let row = 0;
  for (const [r, result] of results.entries()) {
    const rows = splits[r];
    const slice = (t: Tensor) => t.slice(0, row, row + rows);
    const label = `${dtype} rank ${r} of ${W}`;
    assertClose(result.output, slice(ref.single.output), data, `${label} output`);
    assertClose(result.gradInput, slice(ref.grads.gradInput!), data, `${label} gradInput`);
    assertClose(result.mean, ref.single.saveMean, stats, `${label} mean`);
    assertClose(result.invstd, ref.single.saveInvstd, stats, `${label} invstd`);
    assertClose(result.runningMean, ref.runningMean, stats, `${label} runningMean`);
    assertClose(result.runningVar, ref.runningVar, stats, `${label} runningVar`);
    // The same as the in-process group, rank for rank.
    const local = ref.local[r];
    assertClose(result.output, local.fwd.output, data, `${label} output vs local group`);
    assertClose(result.gradInput, local.bwd.gradInput!, data, `${label} gradInput vs local`);
    assertClose(result.gradWeight, local.bwd.gradWeight!, stats, `${label} gradWeight vs local`);
    assertClose(result.gradBias, local.bwd.gradBias!, stats, `${label} gradBias vs local`);
    row += rows;
  }
  // Each rank's gradWeight/gradBias is its share: their sum is the single-process gradient.
  const sum = (key: string) =>
    results.reduce(
      (acc: number[], r) => acc.map((v, i) => v + r[key][i]),
      new Array(ref.grads.gradWeight!.numel).fill(0),
    );
  assertClose(sum("gradWeight"), ref.grads.gradWeight!, stats, `${dtype} sum of gradWeight`);
  assertClose(sum("gradBias"), ref.grads.gradBias!, stats, `${dtype} sum of gradBias`);
}

Deno.test("hccl: 2 processes, float32, equal to single-process BatchNorm and the local group", () =>
  agreesWithSingleProcess("float32", [3, 2]));

Deno.test("hccl: 4 processes with uneven shares (one empty), float32", () =>
  agreesWithSingleProcess("float32", [1, 4, 0, 3]));

Deno.test("hccl: 3 processes, float16 and bfloat16 data", async () => {
  await agreesWithSingleProcess("float16", [2, 3, 2]);
  await agreesWithSingleProcess("bfloat16", [2, 3, 2]);
});

function failure(r: RankResult, code: number, pattern: RegExp): void {
  assert.equal(r.ok, false, JSON.stringify(r));
  assert.equal(r.code, code, JSON.stringify(r));
  assert.match(r.message, pattern);
}

// The offending rank starts last: every rank already there hears rank 0's verdict. (A rank
// that arrives after rank 0 has exited cannot; it gets a TCP error within its timeout.)
const LATE_MS = 1500;

Deno.test("hccl: a wrong world size or a rank given twice fails every rank (HCCL_E_PARA)", async () => {
  const wrong = await launch("join", "float32", [1], [
    { rank: 0, worldSize: 3 },
    { rank: 1, worldSize: 2, delayMs: LATE_MS },
    { rank: 2, worldSize: 3 },
  ]);
  for (const r of wrong) {
    failure(r, 1, /rendezvous at 127\.0\.0\.1:\d+: rank 1 says worldSize 2, rank 0 says 3/);
  }
  const twice = await launch("join", "float32", [1], [
    { rank: 0, worldSize: 3 },
    { rank: 1, worldSize: 3 },
    { rank: 1, worldSize: 3, delayMs: LATE_MS },
  ]);
  for (const r of twice) failure(r, 1, /rank 1 joined twice/);
});

Deno.test("hccl: a rank that never comes ends every other rank within the timeout", async () => {
  const results = await launch(
    "join",
    "float32",
    [1],
    [{ rank: 0, worldSize: 3 }, { rank: 2, worldSize: 3 }],
    1500,
  );
  for (const r of results) {
    failure(r, 9, /rank\(s\) 1 of 3 never joined within 1500 ms/);
    assert.ok(r.ms < 5000, `within the timeout: ${r.ms} ms`);
  }
});

Deno.test("hccl: a rank that dies mid-way makes the others fail within the timeout", async () => {
  const results = await launch(
    "die-after-join",
    "float32",
    [2, 2, 2],
    [0, 1, 2].map((rank) => ({ rank, worldSize: 3 })),
    3000,
  );
  assert.equal(results[1].exitCode, 3, "rank 1 exited");
  for (const r of [results[0], results[2]]) {
    assert.equal(r.ok, false, JSON.stringify(r));
    // The collective fails on the stream: the next synchronisation reports it.
    assert.equal(r.code, 507048, JSON.stringify(r));
    assert.match(r.message, /aclrtSynchronizeStream/);
    assert.ok(r.ms < 15_000, `within the timeout: ${r.ms} ms`);
  }
});
