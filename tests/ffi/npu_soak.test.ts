/**
 * The NPU code path keeps nothing per call past the call (issue 28): bench/npu_soak.ts's
 * synchronous loops (results disposed, or freed by `tidy`) hold a flat JavaScript heap after
 * forced collections, and the device's buffers come back to their count; the backstop that
 * frees forgotten results reports a kernel error it meets at the next read. Needs the built
 * simulator.
 *
 * @module
 */

import assert from "node:assert/strict";
import { AclError } from "../../src/errors.ts";
import { collectGarbage } from "../../src/tensor/collect_garbage.ts";
import { batchNormReduceBackward } from "../../src/ops/batch_norm_reduce_backward.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { clearFaults, injectFault, openSim, SIM_DIR } from "../helpers/ffi_sim.ts";

/** One row of bench/npu_soak.ts --json. */
interface Row {
  calls: number;
  rssMiB: number;
  heapMiB: number;
  liveBuffers: number;
  blocksInUse: number;
}

async function soak(style: string, calls: number, every: number) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-ffi",
      "--allow-env",
      "--allow-read",
      "--v8-flags=--expose-gc",
      new URL("../../bench/npu_soak.ts", import.meta.url).pathname,
      "--calls",
      String(calls),
      "--every",
      String(every),
      "--style",
      style,
      "--json",
    ],
    env: { ACLSIM_DIR: SIM_DIR },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const text = new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!;
  return JSON.parse(text) as { style: string; gc: boolean; rows: Row[] };
}

for (const style of ["dispose", "tidy"]) {
  Deno.test(`npu soak: 20,000 synchronous ${style} calls hold a flat heap`, async () => {
    const r = await soak(style, 20_000, 5_000);
    assert.ok(r.gc, "the child runs with gc exposed");
    // Rows at 0, 5k, 10k, 15k, 20k calls, each after a synchronisation and a full collection.
    // The first 5k reach the steady state (the allocator's cache, V8's own tables); from
    // there a per-call object that outlives the loop's synchronous job shows as growth. A
    // WeakRef per device buffer kept each call's four result buffers (~0.6 KB) alive: 9 MB
    // over these 15k calls. The bound, 1 MiB (70 bytes per call), is far below that and far
    // above what a flat run varies by (0.1 MiB).
    const [, warm, ...later] = r.rows;
    for (const row of later) {
      assert.ok(
        row.heapMiB - warm.heapMiB < 1,
        `${style}: heap ${warm.heapMiB} MiB at ${warm.calls} calls, ${row.heapMiB} at ${row.calls}`,
      );
      // The four inputs and the workspace; every result's buffer went back.
      assert.equal(row.liveBuffers, warm.liveBuffers, `${style}: live buffers at ${row.calls}`);
      assert.equal(row.blocksInUse, warm.blocksInUse, `${style}: blocks in use at ${row.calls}`);
    }
    assert.equal(later.at(-1)!.calls, 20_000);
  });
}

/** Lets the event loop turn once (timers, and the tasks V8 posts, run). */
function turn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

Deno.test("npu memory: a kernel error met by the backstop's synchronisation surfaces at the next one", async () => {
  using npu = openSim();
  const shape = [4, 3, 5];
  const args = {
    gradOut: Tensor.random(shape, { seed: 1, device: npu }),
    input: Tensor.random(shape, { seed: 2, device: npu }),
    mean: Tensor.zeros([3], "float32", npu),
    invstd: Tensor.ones([3], "float32", npu),
  };
  batchNormReduceBackward(args)[Symbol.dispose](); // warm: the prepared call, the workspace
  npu.synchronize();
  const live = npu.memory().liveBuffers;
  try {
    injectFault("kernel");
    // Forgotten while its failing kernel is queued: the backstop frees it, after a
    // synchronisation that nobody waits for and that meets the kernel's error.
    (() => void batchNormReduceBackward(args))();
    await turn(); // the buffers outlive their job: the backstop watches them now
    assert.ok(collectGarbage(), "node:v8 exposes gc");
    for (let i = 0; i < 100 && npu.memory().queuedLaunches > 0; i++) await turn();
  } finally {
    clearFaults();
  }
  const m = npu.memory();
  assert.equal(m.queuedLaunches, 0, "the backstop synchronised");
  assert.equal(m.liveBuffers, live, "the forgotten results were freed");
  assert.throws(
    () => npu.synchronize(),
    (e: unknown) => e instanceof AclError && e.code === 507015,
  );
  npu.synchronize(); // reported once
});
