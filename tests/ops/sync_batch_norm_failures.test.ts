/**
 * SyncBatchNorm passes that fail free what they allocated (issue 38 E1): a collective that
 * throws, times out or returns a wrong shape, or an operator after it that fails, leaves no
 * device memory behind (the packed statistics, the collective's result, the local gradients,
 * the global statistics). Counted on the software CANN's device: live buffers after the
 * failure equal those before the call. Needs the built simulator.
 *
 * @module
 */

import assert from "node:assert/strict";
import { AclError, AclnnError } from "../../src/errors.ts";
import type { AscendDevice } from "../../src/ffi/runtime.ts";
import { syncBatchNormBackward, syncBatchNormForward } from "../../src/ops/sync_batch_norm.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { clearFaults, injectFault, openSim } from "../helpers/ffi_sim.ts";

/** Live device buffers once queued work is done (deferred frees happen at synchronisation). */
function live(npu: AscendDevice): number {
  npu.synchronize();
  return npu.memory().liveBuffers;
}

/** The error `promise` rejects with (fails the test when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail("expected the pass to fail");
}

/** A rank's input and gradient; one pass of each direction has run (the workspace exists). */
async function inputs(npu: AscendDevice) {
  const input = Tensor.random([4, 3, 5], { seed: 31, device: npu });
  const gradOut = Tensor.random([4, 3, 5], { seed: 32, device: npu });
  const fwd = await syncBatchNormForward({ input, allGather: (t) => t.reshape([1, -1]).clone() });
  const { mean, invstd, counts } = fwd;
  const bwd = await syncBatchNormBackward({
    gradOut,
    input,
    mean,
    invstd,
    counts,
    allReduce: (t) => t.clone(),
  });
  for (const t of [fwd.output, fwd.mean, fwd.invstd, fwd.counts]) t.dispose();
  for (const t of [bwd.gradInput, bwd.gradWeight, bwd.gradBias]) t?.dispose();
  return { input, gradOut };
}

Deno.test("syncBatchNormForward: a collective that throws, times out or returns a wrong shape leaks nothing", async () => {
  using npu = openSim();
  const { input } = await inputs(npu);
  const before = live(npu);

  const thrown = await rejection(syncBatchNormForward({
    input,
    allGather: () => {
      throw new Error("the transport is down");
    },
  }));
  assert.match(String(thrown), /the transport is down/);
  assert.equal(live(npu), before, "the packed statistics were freed");

  const late = await rejection(syncBatchNormForward({
    input,
    timeoutMs: 20,
    allGather: () => new Promise<Tensor>(() => {}), // a rank that never comes
  }));
  assert.ok(late instanceof AclnnError && late.code === 361001, String(late));
  assert.equal(live(npu), before, "after a timeout");

  const wrong = await rejection(syncBatchNormForward({
    input,
    allGather: () => Tensor.zeros([2, 5], "float32", npu), // not [W, 2C + 1]
  }));
  assert.ok(wrong instanceof AclnnError && wrong.code === 161002, String(wrong));
  assert.match(wrong.message, /allGather returned shape \[2, 5\], expected \[W, 7\]/);
  assert.equal(live(npu), before, "the handed-over result was freed too");
});

Deno.test("syncBatchNormForward: an operator failing after the collective frees the statistics made so far", async () => {
  using npu = openSim();
  const { input } = await inputs(npu);
  const before = live(npu);
  try {
    const e = await rejection(syncBatchNormForward({
      input,
      allGather: (t) => {
        const gathered = t.reshape([1, -1]).clone();
        // From here: counts (1), the global mean and invstd (2, 3), the output (4, and its
        // retry after the cache is emptied): the output cannot be allocated.
        npu.emptyCache();
        injectFault("malloc", { nth: 4, times: 2 });
        return gathered;
      },
    }));
    assert.ok(e instanceof AclError && e.code === 207001, String(e));
  } finally {
    clearFaults();
  }
  assert.equal(live(npu), before, "counts and the global statistics were freed");
});

Deno.test("syncBatchNormBackward: an all-reduce that throws frees the packed sums and the local gradients", async () => {
  using npu = openSim();
  const { input, gradOut } = await inputs(npu);
  const fwd = await syncBatchNormForward({ input, allGather: (t) => t.reshape([1, -1]).clone() });
  const before = live(npu);
  const e = await rejection(syncBatchNormBackward({
    gradOut,
    input,
    mean: fwd.mean,
    invstd: fwd.invstd,
    counts: fwd.counts,
    allReduce: () => {
      throw new Error("a rank left");
    },
  }));
  assert.match(String(e), /a rank left/);
  assert.equal(live(npu), before, "packed, gradWeight and gradBias were freed");
  // The pass works afterwards, and its results are the caller's.
  const ok = await syncBatchNormBackward({
    gradOut,
    input,
    mean: fwd.mean,
    invstd: fwd.invstd,
    counts: fwd.counts,
    allReduce: (t) => t.clone(),
  });
  assert.equal(live(npu), before + 3, "gradInput, gradWeight, gradBias");
  assert.equal(ok.gradWeight!.shape[0], 3);
});
