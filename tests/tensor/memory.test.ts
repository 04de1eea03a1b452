/**
 * Device memory on the NPU code path (software CANN): the caching allocator and
 * `device.memory()`, `tidy` (sync and async), `using` on result objects, `Tensor.zeros` set on
 * the device, the out-of-memory error, reclaiming forgotten results at event-loop turns, and
 * bench/soak.ts's usage styles staying flat. Needs the built simulator.
 *
 * @module
 */

import assert from "node:assert/strict";
import { AclError } from "../../src/errors.ts";
import { batchNormReduceBackward } from "../../src/ops/batch_norm_reduce_backward.ts";
import { batchNormStats } from "../../src/ops/batch_norm_stats.ts";
import { createBatchNormBackwardDescriptor } from "../../src/ops/infiniop_batch_norm_backward.ts";
import { keep, tidy } from "../../src/tensor/scope.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { childJson } from "../helpers/child_json.ts";
import { openSim, SIM_DIR } from "../helpers/ffi_sim.ts";
import { plainDescriptors } from "../fixtures/infiniop.ts";

/** Inputs on the device, after one warm-up call (so the device's workspace exists). */
function problem(npu: ReturnType<typeof openSim>) {
  const p = {
    gradOut: Tensor.random([4, 3, 5], { seed: 1, device: npu }),
    input: Tensor.random([4, 3, 5], { seed: 2, device: npu }),
    mean: Tensor.zeros([3], "float32", npu),
    invstd: Tensor.ones([3], "float32", npu),
  };
  batchNormReduceBackward(p)[Symbol.dispose]();
  batchNormStats({ input: p.input })[Symbol.dispose]();
  npu.synchronize();
  return p;
}

Deno.test("memory: the caching allocator reuses freed blocks by size class", () => {
  using npu = openSim();
  const base = npu.memory();
  const a = Tensor.zeros([1000], "float32", npu); // 4000 B -> a 4096 B block
  assert.equal(npu.memory().bytesInUse - base.bytesInUse, 4096);
  a.dispose();
  assert.equal(npu.memory().bytesCached - base.bytesCached, 4096);
  const calls = npu.memory().nativeMallocCalls;
  const b = Tensor.zeros([1020], "float32", npu); // same class: no aclrtMalloc
  assert.equal(npu.memory().nativeMallocCalls, calls);
  // The reused block held the old values (and fresh simulator memory reads as NaN):
  // zeros() is set on the device.
  assert.deepEqual(b.toArray(), new Array(1020).fill(0));
  b.dispose();
  npu.emptyCache();
  assert.equal(npu.memory().bytesCached, 0);
  assert.ok(npu.memory().peakBytesInUse >= 4096);
});

Deno.test("memory: tidy frees what it created except the result; views of outside survive", () => {
  using npu = openSim();
  const p = problem(npu);
  const before = npu.memory().blocksInUse;
  const kept = tidy(() => {
    const r = batchNormReduceBackward(p);
    const view = p.input.slice(0, 0, 2); // shares p.input's storage: never freed here
    void view.toArray();
    return { sums: [r.sumDy], bias: r.gradBias };
  });
  npu.synchronize();
  assert.equal(npu.memory().blocksInUse, before + 2, "sumDy and gradBias kept");
  assert.deepEqual(kept.sums[0]!.shape, [3]);
  assert.equal(p.input.toArray().length, 60, "the outside tensor is intact");
  kept.sums[0]!.dispose();
  kept.bias!.dispose();
  // keep() takes a tensor out of the scope.
  const mine = tidy(() => {
    keep(Tensor.ones([8], "float32", npu));
    Tensor.ones([8], "float32", npu);
    return undefined;
  });
  assert.equal(mine, undefined);
  npu.synchronize();
  assert.equal(npu.memory().blocksInUse, before + 1, "only the kept one is left");
});

Deno.test("memory: tidy works across await and nests", async () => {
  using npu = openSim();
  const p = problem(npu);
  const before = npu.memory().blocksInUse;
  const result = await tidy(async () => {
    const inner = tidy(() => batchNormStats({ input: p.input }).mean); // invstd freed
    await new Promise((r) => setTimeout(r, 1));
    const r = batchNormReduceBackward(p); // created after the await: still in the scope
    await Promise.resolve();
    return { inner, bias: r.gradBias };
  });
  npu.synchronize();
  assert.equal(npu.memory().blocksInUse, before + 2);
  result.inner.dispose();
  result.bias!.dispose();
  // A throwing scope frees everything it made and rethrows.
  await assert.rejects(
    tidy(async () => {
      Tensor.ones([4], "float32", npu);
      await Promise.resolve();
      throw new Error("boom");
    }),
    /boom/,
  );
  npu.synchronize();
  assert.equal(npu.memory().blocksInUse, before);
});

Deno.test("memory: `using` a result object frees what the call allocated, not `out`", () => {
  using npu = openSim();
  const p = problem(npu);
  const sumDy = Tensor.zeros([3], "float32", npu);
  const before = npu.memory().blocksInUse;
  {
    using r = batchNormReduceBackward({ ...p, out: { sumDy } });
    assert.equal(r.sumDy, sumDy);
    assert.equal(npu.memory().blocksInUse, before + 3);
    // Spreading a result sees only the tensors (dispose is not enumerable).
    assert.deepEqual(Object.keys({ ...r }), ["sumDy", "sumDyXmu", "gradWeight", "gradBias"]);
  }
  npu.synchronize();
  assert.equal(npu.memory().blocksInUse, before);
  assert.deepEqual(sumDy.toArray().length, 3, "the caller's out tensor is alive");
});

Deno.test("memory: past the limit, allocation fails with the allocator's figures", () => {
  using npu = openSim();
  const base = npu.memory().bytesInUse;
  npu.setMemoryLimit(base + 64 * 1024);
  const held = Tensor.zeros([8192], "float32", npu); // 32 KiB
  let e: unknown;
  try {
    Tensor.zeros([16384], "float32", npu);
  } catch (error) {
    e = error;
  }
  assert.ok(e instanceof AclError, String(e));
  assert.equal(e.code, 207001);
  assert.match(e.message, /out of device memory on npu:0: cannot allocate 64\.0 KiB/);
  assert.match(e.message, /In use: .* in \d+ blocks; cached: .*; peak: .*; limit: /);
  held.dispose();
  // With the memory back, the same allocation works.
  npu.synchronize();
  Tensor.zeros([8192], "float32", npu).dispose();
});

Deno.test("memory: forgotten large results are reclaimed when the event loop turns", async () => {
  const r = await childJson(["eval", "--ext=ts", RECLAIM_CHILD], {
    ACLSIM_DIR: SIM_DIR,
    ASCEND_OPP_PATH: SIM_DIR,
  });
  // 96 results of 4 MiB were created and never disposed (384 MiB); reclaiming at the
  // 256 MiB mark keeps the device's native allocations below 320 MiB.
  assert.ok(r.peakNativeBytes < 320 * 2 ** 20, `peak ${r.peakNativeBytes} bytes`);
  assert.ok(r.reclaimedEvidence, "blocks were reused after reclaiming");
});

const root = new URL("../..", import.meta.url).pathname;
const RECLAIM_CHILD = `
import { batchNormElemt, Tensor } from "${root}mod.ts";
import { openSim, simStats } from "${root}tests/helpers/ffi_sim.ts";
const npu = openSim();
const x = Tensor.random([4, 16, 128, 128], { seed: 1, device: npu }); // 4 MiB
const mean = Tensor.zeros([16], "float32", npu);
const invstd = Tensor.ones([16], "float32", npu);
let peakNativeBytes = 0;
for (let i = 0; i < 96; i++) {
  batchNormElemt({ input: x, mean, invstd }); // the 4 MiB result is forgotten
  await new Promise((r) => setTimeout(r, 0));
  peakNativeBytes = Math.max(peakNativeBytes, simStats().deviceBytes);
}
const m = npu.memory();
console.log(JSON.stringify({ peakNativeBytes, reclaimedEvidence: m.nativeMallocCalls < 100 }));
npu.close();
`;

Deno.test("memory: bench/soak.ts styles stay flat (dispose, using/tidy, out)", async () => {
  const r = await childJson([
    "run",
    "--v8-flags=--expose-gc",
    "--allow-ffi",
    "--allow-env",
    "--allow-read",
    new URL("../../bench/soak.ts", import.meta.url).pathname,
    "--calls",
    "1500",
    "--json",
  ], { ACLSIM_DIR: SIM_DIR });
  // The blocks of the tensors the script keeps (its inputs, then the `out` style's 4 outputs).
  const live = r.results[0].start.blocksInUse + 4;
  for (const { style, start, end } of r.results) {
    if (style === "gc") {
      // Left to the garbage collector, results pile up until V8 collects (when is V8's
      // choice); after two full collections and turns of the event loop (soak.ts with
      // --expose-gc), the backstop has freed every block but the kept tensors'.
      assert.ok(
        end.blocksInUse <= live,
        `${style}: ${end.blocksInUse} blocks in use, ${live} kept`,
      );
      continue;
    }
    assert.equal(end.blocksInUse, start.blocksInUse, `${style}: blocks in use`);
    assert.equal(end.bytesInUse, start.bytesInUse, `${style}: bytes in use`);
    assert.ok(end.nativeAllocations <= start.nativeAllocations, `${style}: native allocations`);
  }
  assert.equal(r.final.deviceAllocations, 0, "everything freed at close");
  assert.equal(r.final.tensors, 0);
});

Deno.test("memory: the descriptor API's in-place compute holds no buffer after the call", () => {
  using npu = openSim();
  const [N, C, L] = [4, 3, 8];
  const shape = [N, C, L];
  using descriptor = createBatchNormBackwardDescriptor(plainDescriptors(N, C, L, "float16"));
  const dy = Tensor.random(shape, { seed: 2, dtype: "float16", device: npu });
  const t = {
    input: Tensor.random(shape, { seed: 1, dtype: "float16", device: npu }),
    gradOutput: dy,
    gradInput: dy, // in place, as InfiniOp documents
    weight: Tensor.ones([3], "float16", npu),
    runningMean: Tensor.zeros([3], "float16", npu),
    runningVar: Tensor.ones([3], "float16", npu),
    gradWeight: Tensor.zeros([3], "float16", npu),
    gradBias: Tensor.zeros([3], "float16", npu),
  };
  descriptor.compute(t);
  npu.synchronize();
  const before = npu.memory();
  for (let i = 0; i < 200; i++) descriptor.compute(t);
  npu.synchronize();
  const after = npu.memory();
  // Every temporary (the float32 statistics) went back to the cache: nothing waits for GC.
  assert.equal(after.blocksInUse, before.blocksInUse);
  assert.equal(after.liveBuffers, before.liveBuffers);
  assert.equal(after.pendingReleases, 0);
});
