/**
 * Concurrency (issue 12, item 4): many operators in flight at once give the results they give
 * one by one; two Workers that each open the library and a device work side by side, and
 * finalizeAscend() in one refuses while the other still has a device open; closing a device
 * while its results are alive makes later use of them a clear AclError.
 */

import assert from "node:assert/strict";
import { AclError } from "../../src/errors.ts";
import { batchNorm } from "../../src/ops/batch_norm.ts";
import { batchNormStats } from "../../src/ops/batch_norm_stats.ts";
import { createLocalProcessGroup } from "../../src/distributed/local_process_group.ts";
import { syncBatchNormForward } from "../../src/ops/sync_batch_norm.ts";
import type { Device } from "../../src/tensor/device.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { forEachBackend } from "../helpers/backends.ts";
import { openSim, SIM_DIR } from "../helpers/ffi_sim.ts";
import { batchNorm64, batchNormStats64 } from "../oracle/mod.ts";

function concat(parts: Tensor[]): Float64Array {
  const arrays = parts.map((t) => t.toFloat64Array());
  const out = new Float64Array(arrays.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of arrays) {
    out.set(a, at);
    at += a.length;
  }
  return out;
}

async function hundredRanks(device: Device): Promise<void> {
  const W = 100;
  const [C, L] = [3, 8];
  const x = Tensor.random([W, C, L], { seed: 11, low: -2, high: 2 });
  const weight = Tensor.random([C], { seed: 12, low: 0.5, high: 1.5 });
  const bias = Tensor.random([C], { seed: 13 });
  const group = createLocalProcessGroup(W, { timeoutMs: 30_000 });
  // All 100 ranks in flight at once, each with its own slice of the batch.
  const ranks = await Promise.all(group.map((g, r) =>
    syncBatchNormForward({
      input: x.slice(0, r, r + 1).to(device),
      weight: weight.to(device),
      bias: bias.to(device),
      eps: 1e-5,
      allGather: g.allGather,
    })
  ));
  // One by one: the same normalisation of the whole batch (the oracle, and one batchNorm call).
  const whole = batchNorm64({
    x: x.toFloat64Array(),
    shape: x.shape,
    weight: weight.toFloat64Array(),
    bias: bias.toFloat64Array(),
    training: true,
    momentum: 0.1,
    eps: 1e-5,
  });
  assertClose(concat(ranks.map((r) => r.output)), whole.output, undefined, "output");
  for (const r of ranks) {
    assertClose(r.mean, whole.saveMean, undefined, "mean");
    assertClose(r.invstd, whole.saveInvstd, undefined, "invstd");
  }
  const one = batchNorm({
    input: x.to(device),
    weight: weight.to(device),
    bias: bias.to(device),
    training: true,
    eps: 1e-5,
  });
  assertClose(one.output, whole.output, undefined, "one whole-batch call");
}

forEachBackend(
  "concurrency: 100 SyncBatchNorm ranks in flight equal one whole-batch call",
  ({ device }) => hundredRanks(device),
);

Deno.test("concurrency: operators queued on one stream before any result is read", () => {
  using npu = openSim();
  const inputs = Array.from(
    { length: 100 },
    (_, i) => Tensor.random([2, 3, 16], { seed: 100 + i, device: npu }),
  );
  // 100 launches queued (nothing downloaded in between), then every result read.
  const results = inputs.map((input) => batchNormStats({ input, eps: 1e-5 }));
  results.forEach((r, i) => {
    const one = batchNormStats64(inputs[i].toFloat64Array(), [2, 3, 16], 1e-5);
    assertClose(r.mean, one.mean, undefined, `launch ${i} mean`);
    assertClose(r.invstd, one.invstd, undefined, `launch ${i} invstd`);
  });
});

Deno.test("concurrency: two Workers each open a device; finalizeAscend waits for both", async () => {
  const child = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("../fixtures/two_workers_child.ts", import.meta.url).pathname],
    env: { ACLSIM_DEVICE_COUNT: "2", ASCEND_OPP_PATH: SIM_DIR },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(child.stderr);
  assert.equal(child.code, 0, stderr);
  const report = JSON.parse(new TextDecoder().decode(child.stdout).trim().split("\n").at(-1)!);
  assert.deepEqual(report.open.map((a: { value: string }) => a.value), ["npu:0", "npu:1"]);
  // Every run of either Worker equals the oracle on the same seeded input.
  for (let i = 0; i < report.runs.length; i++) {
    const answer = report.runs[i];
    assert.ok(answer.ok, answer.message);
    const seed = Math.floor(i / 2);
    const x = Tensor.random([4, 3, 64], { seed }).toFloat64Array();
    const e = batchNormStats64(x, [4, 3, 64], 1e-5);
    assertClose(answer.value.mean, e.mean, undefined, `run ${i} mean`);
    assertClose(answer.value.invstd, e.invstd, undefined, `run ${i} invstd`);
  }
  // Worker A's devices are closed, Worker B's is not: ACL is process-wide, so A may not finalise.
  const refused = report.finalizeWhileBOpen;
  assert.equal(refused.ok, false);
  assert.equal(refused.code, 100000);
  assert.match(refused.message, /npu:1 still open in another Worker of this process/);
  // Once both are closed, exactly the Worker whose aclInit initialised ACL finalises it.
  assert.ok(report.finalizeA.ok && report.finalizeB.ok, JSON.stringify(report));
  assert.equal([report.finalizeA.value, report.finalizeB.value].filter((v) => v).length, 1);
});

Deno.test("concurrency: results outlive their closed device as clear errors, not crashes", () => {
  const npu = openSim();
  const x = Tensor.random([4, 3, 5], { seed: 1, device: npu });
  const r = batchNormStats({ input: x, eps: 1e-5 });
  npu.close();
  const closed = (e: unknown) =>
    e instanceof AclError && e.code === 100000 && /npu:0 is closed/.test(e.message);
  assert.throws(() => r.mean.toArray(), closed);
  assert.throws(() => x.to("cpu"), closed);
  assert.throws(() => x.copy_([1]), closed);
  assert.throws(() => batchNormStats({ input: x }), closed);
  assert.throws(() => Tensor.zeros([2], "float32", npu), closed);
  // Disposing them afterwards is harmless (the memory went with the device).
  r[Symbol.dispose]();
  npu.close(); // a second close is a no-op
});
