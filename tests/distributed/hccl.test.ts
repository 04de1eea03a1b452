/**
 * SyncBatchNorm over HCCL (issue 11): W ranks in W processes, each with its own simulated NPU
 * and the software HCCL of tests/sim, give the same forward and backward as single-process
 * BatchNorm over the whole batch and as createLocalProcessGroup, for uneven batch shares and
 * float32, float16 and bfloat16. Set-up failures (a wrong world size, a rank given twice, a
 * rank that never comes) and a rank that dies mid-way end in clear errors within the timeout.
 * Strangers at rank 0's port (garbage, HTTP, other jobs, a 20 MB line) are dropped and logged
 * while a 2-rank job completes; a process of the same job with a rank out of range still fails
 * the job with HCCL_E_PARA.
 */

import assert from "node:assert/strict";
import { createLocalProcessGroup } from "../../src/distributed/local_process_group.ts";
import { batchNorm } from "../../src/ops/batch_norm.ts";
import { batchNormBackward } from "../../src/ops/batch_norm_backward.ts";
import { syncBatchNormBackward, syncBatchNormForward } from "../../src/ops/sync_batch_norm.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { SIM_DIR } from "../helpers/ffi_sim.ts";
import { type Tolerance, toleranceFor } from "../helpers/tolerance.ts";
import { rendezvous } from "../../src/distributed/rendezvous.ts";
import { HcclError } from "../../src/errors.ts";
import { freePort, provenHello, stray, type StrayOutcome } from "../helpers/net.ts";
import { wholeBatch } from "../fixtures/hccl_rank_child.ts";

const CHILD = new URL("../fixtures/hccl_rank_child.ts", import.meta.url).pathname;

// deno-lint-ignore no-explicit-any
type RankResult = Record<string, any>;

/** Extras of {@linkcode launch}: environment for every rank, and work beside the ranks. */
interface LaunchExtras {
  /** Added to every rank's environment. */
  env?: Record<string, string>;
  /** Started with the ranks, given rank 0's port; awaited with them. */
  beside?: (port: number) => Promise<unknown>;
}

/**
 * Runs one process per entry of `ranks` (its RANK and WORLD_SIZE), all meeting at one port.
 * Returns each process's JSON line (with its stderr), and what `extras.beside` returned.
 */
async function launch(
  scenario: string,
  dtype: DType,
  splits: number[],
  ranks: { rank: number; worldSize: number; delayMs?: number }[],
  timeoutMs = 20_000,
  extras: LaunchExtras = {},
): Promise<RankResult[]> {
  const port = String(freePort());
  const beside = extras.beside?.(Number(port));
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
          // No job id unless the test gives one (an empty variable counts as unset).
          TORCHELASTIC_RUN_ID: "",
          ACLNN_NORM_JOB_ID: "",
          ...extras.env,
        },
        stdout: "piped",
        stderr: "piped",
      }).output();
    }),
  );
  besideResult = await beside;
  return outputs.map((o, i) => {
    const text = new TextDecoder().decode(o.stdout).trim();
    const line = text.split("\n").at(-1);
    const stderr = new TextDecoder().decode(o.stderr);
    if (!line) return { ok: false, rank: ranks[i].rank, exitCode: o.code, stderr };
    return { ...JSON.parse(line), exitCode: o.code, stderr };
  });
}

/** What the last {@linkcode launch}'s `beside` returned. */
let besideResult: unknown;

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

async function agreesWithSingleProcess(
  dtype: DType,
  splits: number[],
  extras: LaunchExtras & { rank1DelayMs?: number } = {},
): Promise<RankResult[]> {
  const W = splits.length;
  const results = await launch(
    "syncbn",
    dtype,
    splits,
    splits.map((_, rank) => ({
      rank,
      worldSize: W,
      delayMs: rank === 1 ? extras.rank1DelayMs : undefined,
    })),
    20_000,
    extras,
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
  return results;
}

Deno.test("hccl: 2 processes, float32, equal to single-process BatchNorm and the local group", async () => {
  const [rank0, rank1] = await agreesWithSingleProcess("float32", [3, 2]);
  // No job id given: rank 0 (only) warns that its port is open to anyone.
  assert.match(rank0.stderr, /no job id is set \(the jobId option, TORCHELASTIC_RUN_ID or /);
  assert.doesNotMatch(rank1.stderr, /job id/);
});

Deno.test("hccl: 4 processes with uneven shares (one empty), float32", async () => {
  await agreesWithSingleProcess("float32", [1, 4, 0, 3]);
});

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

/**
 * Rank 0 and a rank 1 that stops itself (SIGSTOP) right after joining, on `soc`: rank 0's
 * result line and how long it ran. Rank 0 is killed after `boundMs` (its result is then
 * missing), rank 1 at the end.
 */
async function withStoppedPeer(
  soc: string,
  timeoutMs: number,
  boundMs: number,
  env: Record<string, string> = {},
) {
  const port = String(freePort());
  const started = performance.now();
  const ranks = [0, 1].map((rank) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", CHILD, "stop-after-join", "float32", "2,2"],
      env: {
        RANK: String(rank),
        WORLD_SIZE: "2",
        MASTER_ADDR: "127.0.0.1",
        MASTER_PORT: port,
        ACLSIM_DEVICE_COUNT: "4",
        ACLSIM_SOC_NAME: soc,
        ASCEND_OPP_PATH: SIM_DIR,
        HCCL_TEST_TIMEOUT_MS: String(timeoutMs),
        TORCHELASTIC_RUN_ID: "",
        ACLNN_NORM_JOB_ID: "",
        ...env,
      },
      stdout: "piped",
      stderr: "piped",
    }).spawn()
  );
  const bound = setTimeout(() => ranks[0].kill("SIGKILL"), boundMs);
  try {
    const out = await ranks[0].output();
    const ms = performance.now() - started;
    const line = new TextDecoder().decode(out.stdout).trim().split("\n").at(-1);
    return { result: line ? JSON.parse(line) as RankResult : undefined, ms, code: out.code };
  } finally {
    clearTimeout(bound);
    ranks[1].kill("SIGKILL");
    await ranks[1].status;
  }
}

Deno.test("hccl: a peer that stops answering fails rank 0 within timeoutMs on every SoC, not after HCCL's 68 s", async () => {
  // hcclExecTimeOut is 2 s here: CANN keeps it on the A2 and makes it 68 s on the 950.
  const runs = await Promise.all(
    ["Ascend950PR_9599", "Ascend910B1"].map((soc) => withStoppedPeer(soc, 1500, 15_000)),
  );
  for (const [i, soc] of ["Ascend950PR_9599", "Ascend910B1"].entries()) {
    const { result, ms, code } = runs[i];
    assert.ok(result !== undefined, `${soc}: rank 0 still waited after 15 s`);
    assert.equal(code, 0, JSON.stringify(result));
    failure(
      result,
      9,
      /^HcclAllGather #1 \(rank 0 of 2\) did not complete within timeoutMs 1500 ms on npu:0: a rank has not joined it; HCCL itself waits/,
    );
    assert.match(
      result.message,
      soc === "Ascend950PR_9599"
        ? /68 s on Ascend950PR_9599, where CANN rounds hcclExecTimeOut 2 s to 68 s steps/
        : /2 s on Ascend910B1,/,
    );
    assert.doesNotMatch(result.message, /\n/);
    assert.ok(result.ms >= 1500 && result.ms < 6000, `${soc}: waited ${result.ms} ms`);
    assert.ok(ms < 12_000, `${soc}: rank 0 exited after ${ms} ms`);
    // The device is held meanwhile: a call fails at once, naming the collective; closing the
    // group and the device only forgets them.
    assert.equal(result.held?.code, 9, JSON.stringify(result.held));
    assert.match(
      result.held.message,
      /^allocate: npu:0's stream is still running HcclAllGather #1/,
    );
    assert.ok(result.closeMs < 1000, `close took ${result.closeMs} ms`);
  }
});

Deno.test("hccl: after a missed deadline the device works again once HCCL gives up", async () => {
  // HCCL's exec timeout made 2.5 s (the simulator's test hook), the deadline 1 s.
  const { result } = await withStoppedPeer("Ascend950PR_9599", 1000, 15_000, {
    ACLSIM_HCCL_EXEC_TIMEOUT_MS: "2500",
    HCCL_TEST_RECOVER: "1",
  });
  assert.ok(result !== undefined, "rank 0 still waited after 15 s");
  failure(result, 9, /did not complete within timeoutMs 1000 ms/);
  assert.equal(result.held?.code, 9);
  assert.ok(
    result.recoveredMs !== undefined,
    `the device never worked again: ${JSON.stringify(result)}`,
  );
  // Held until HCCL's 2.5 s passed (1 s of it before the error), then at once.
  const ms = result.recoveredMs;
  assert.ok(ms > 1000 && ms < 5000, `it worked again after ${ms} ms`);
});

/** Whether `e` is an HcclError with `code` and a message matching `pattern`. */
function isHccl(e: unknown, code: number, pattern: RegExp): void {
  assert.ok(e instanceof HcclError, String(e));
  assert.equal(e.code, code, e.message);
  assert.match(e.message, pattern);
}

Deno.test("hccl: strangers at rank 0's port do not stop a 2-rank job (TORCHELASTIC_RUN_ID)", async () => {
  const jobId = `hccl-test-${crypto.randomUUID()}`;
  const encoder = new TextEncoder();
  const big = new Uint8Array(20 * 1024 * 1024).fill(0x61); // 20 MB, no newline
  // The strangers come while rank 0 waits for rank 1 (who starts LATE_MS after it).
  const results = await agreesWithSingleProcess("float32", [3, 2], {
    env: { TORCHELASTIC_RUN_ID: jobId },
    rank1DelayMs: LATE_MS,
    beside: (port) =>
      Promise.all([
        stray(port, new Uint8Array(2048).map((_, i) => (i * 7919) & 0xff)),
        stray(port, encoder.encode("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")),
        stray(port, encoder.encode('{"hello":{"rank":7,"worldSize":2}}\n')),
        stray(port, encoder.encode('{"hello":{"rank":1,"worldSize":2}}\n')),
        rendezvous({
          rank: 1,
          worldSize: 2,
          masterAddr: "127.0.0.1",
          masterPort: port,
          timeoutMs: 10_000,
          jobId: "another-job",
        }, () => new Uint8Array(0)).then(() => "let in", (e) => e),
        provenHello(port, `${jobId}-guessed`, 1, 2),
        stray(port, big),
      ]),
  });
  const [junk, http, seven, one, otherJob, forged, huge] = besideResult as [
    StrayOutcome,
    StrayOutcome,
    StrayOutcome,
    StrayOutcome,
    unknown,
    unknown[],
    StrayOutcome,
  ];
  for (const s of [junk, http, seven, one, huge]) {
    assert.match(s.received, /^\{"challenge":"[A-Za-z0-9+/=]{24}"\}\n$/, "challenged, then closed");
  }
  isHccl(otherJob, 1, /rank 0 rejected rank 1's hello: the two have different job ids/);
  assert.deepEqual(forged, [{ rejected: "job id" }]);
  assert.ok(huge.writeError !== undefined && huge.written < big.length, `${huge.written} bytes`);
  // Rank 0 logged each stranger on stderr, and gave no warning about the id.
  const log = results[0].stderr as string;
  const dropped = log.split("\n").filter((l) =>
    /dropped the connection from 127\.0\.0\.1:/.test(l)
  );
  assert.equal(dropped.length, 7, log);
  assert.match(log, /not JSON: "GET \/metrics HTTP\/1\.1\\r"/);
  assert.match(log, /sent \{"hello":\{"rank":7,"worldSize":2\}\}, not a hello/);
  assert.equal(log.match(/hello \(rank 1 of 2\) carries no proof of this job's id/g)?.length, 2);
  assert.match(log, /sent a line longer than 65536 bytes/);
  assert.doesNotMatch(log, /no job id is set/);
});

Deno.test("hccl: a process of the job with a rank out of range fails every rank (HCCL_E_PARA)", async () => {
  const jobId = `hccl-test-${crypto.randomUUID()}`;
  // Ranks 0 and 1 of 3 are up and waiting for rank 2 when the misconfigured process comes.
  const results = await launch(
    "join",
    "float32",
    [1],
    [{ rank: 0, worldSize: 3 }, { rank: 1, worldSize: 3 }],
    20_000,
    {
      env: { TORCHELASTIC_RUN_ID: jobId },
      beside: async (port) => {
        await new Promise((resolve) => setTimeout(resolve, LATE_MS));
        return await provenHello(port, jobId, 7, 3);
      },
    },
  );
  for (const r of results) {
    failure(r, 1, /rendezvous at 127\.0\.0\.1:\d+: a process joined as rank 7, outside 1\.\.2/);
  }
  const [reply] = besideResult as { error: { code: number; message: string } }[];
  assert.equal(reply.error.code, 1);
  assert.match(reply.error.message, /a process joined as rank 7, outside 1\.\.2$/);
});
