/**
 * The device layer on the software CANN: Tensor.to(npu)/to("cpu") round trips, empty tensors,
 * bounds, closed devices, deferred frees of buffers that queued work still uses, workspace
 * reuse, and the counters returning to their baseline.
 * Needs the built simulator (`deno task build:sim`).
 */

import assert from "node:assert/strict";
import { AclError, AclnnError } from "../../src/errors.ts";
import { arg, runAclnn } from "../../src/ffi/executor.ts";
import { DeviceBuffer, finalizeAscend } from "../../src/ffi/runtime.ts";
import { batchNormReduceBackward } from "../../src/ops/batch_norm_reduce_backward.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { liveDelta, openSim, SIM_DIR, simStats } from "../helpers/ffi_sim.ts";
import { assertClose } from "../helpers/assert.ts";
import { childJson } from "../helpers/child_json.ts";
import { betweenKernels, TOLERANCE } from "../helpers/tolerance.ts";

const DTYPES: DType[] = ["float32", "float16", "bfloat16"];

function assertSameValues(actual: Tensor, expected: Tensor, what: string) {
  assert.deepEqual(actual.shape, expected.shape, `${what} shape`);
  assert.deepEqual(
    Array.from(actual.toFloat64Array()),
    Array.from(expected.toFloat64Array()),
    what,
  );
}

Deno.test("runtime: round trips keep values and strides (contiguous, permuted, channels-last, sliced)", () => {
  const before = simStats();
  {
    using npu = openSim();
    for (const dtype of DTYPES) {
      const base = Tensor.random([2, 3, 4, 5], { seed: 7, dtype });
      const views: [string, Tensor][] = [
        ["contiguous", base],
        ["permuted", base.permute([3, 1, 0, 2])],
        // NHWC storage viewed as NCHW: strides (H*W*C, 1, W*C, C).
        ["channels-last", base.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2])],
        ["sliced", base.slice(2, 1, 4).slice(0, 1)],
        ["strided", base.slice(3, 0, 5, 2)],
        ["rank 0", Tensor.fromArray([3.5], [], dtype)],
      ];
      for (const [name, view] of views) {
        const dev = view.to(npu);
        assert.equal(dev.device, npu);
        assert.ok(dev.storage instanceof DeviceBuffer);
        // Dense views keep their strides on the device (and back); a sliced view with gaps
        // is packed densely (only its values travel).
        const dense = !["sliced", "strided"].includes(name);
        if (dense) assert.deepEqual(dev.strides, view.strides, `${name} strides kept`);
        if (dense) assert.deepEqual(dev.to("cpu").strides, view.strides, `${name} strides back`);
        const back = dev.to("cpu");
        assertSameValues(back, view, `${dtype} ${name}`);
        assertSameValues(dev, view, `${dtype} ${name} (toFloat64Array)`);
        dev.dispose();
      }
    }
  }
  assert.deepEqual(liveDelta(before, simStats()), {});
});

Deno.test("runtime: empty tensors need no native allocation and round-trip", () => {
  using npu = openSim();
  const before = simStats();
  const empty = Tensor.zeros([0, 3], "float16", npu);
  assert.equal(empty.storage.byteLength, 0);
  assert.equal((empty.storage as DeviceBuffer).pointer, null);
  assert.deepEqual(liveDelta(before, simStats()), {});
  assert.deepEqual(empty.to("cpu").shape, [0, 3]);
  assert.equal(empty.toFloat64Array().length, 0);
  empty.dispose();
  empty.dispose(); // idempotent
});

Deno.test("runtime: upload/download check ownership and bounds", () => {
  using npu = openSim();
  using other = openSim();
  const buf = npu.allocate(16);
  assert.throws(() => npu.upload(buf, new Uint8Array(8), 12), RangeError);
  assert.throws(() => npu.download(buf, new Uint8Array(17), 0), RangeError);
  assert.throws(() => other.upload(buf, new Uint8Array(4), 0), AclError);
  assert.throws(() => npu.allocate(-1), RangeError);
  npu.upload(buf, new Uint8Array([1, 2, 3, 4]), 12);
  const out = new Uint8Array(4);
  npu.download(buf, out, 12);
  assert.deepEqual(Array.from(out), [1, 2, 3, 4]);
  buf.release();
  buf.release();
  assert.throws(() => npu.download(buf, out, 0), /released/);
});

Deno.test("runtime: a closed device throws a clear AclError and never reaches the library", () => {
  const npu = openSim();
  const t = Tensor.ones([4, 2], "float32", npu);
  const buf = npu.allocate(8);
  npu.close();
  npu.close(); // idempotent
  assert.equal(npu.closed, true);
  for (
    const f of [
      () => npu.allocate(4),
      () => npu.synchronize(),
      () => t.toFloat64Array(),
      () => Tensor.zeros([2], "float32", npu),
      () => buf.pointer,
      () =>
        runAclnn(npu, "aclnnBatchNormStats", [
          arg.tensor(t),
          arg.f64(1e-5),
          arg.tensor(t),
          arg.tensor(t),
        ]),
    ]
  ) {
    assert.throws(f, (e: unknown) => {
      assert.ok(e instanceof AclError, String(e));
      assert.match(e.message, /npu:0 is closed/);
      return true;
    });
  }
  buf.release(); // harmless after close
  t.dispose();
});

Deno.test("runtime: buffers released while work is queued are freed only after sync", () => {
  using npu = openSim();
  const x = Tensor.random([8, 4, 6], { seed: 1, device: npu });
  const dy = Tensor.random([8, 4, 6], { seed: 2, device: npu });
  const mean = Tensor.zeros([4], "float32", npu);
  const invstd = Tensor.ones([4], "float32", npu);
  const expected = batchNormReduceBackward({
    gradOut: dy.to("cpu"),
    input: x.to("cpu"),
    mean: mean.to("cpu"),
    invstd: invstd.to("cpu"),
  });
  const r = batchNormReduceBackward({ gradOut: dy, input: x, mean, invstd });
  const queued = simStats();
  const inUse = npu.memory().blocksInUse;
  assert.equal(queued.pendingTasks, 1);
  for (const t of [x, dy, mean, invstd]) t.dispose();
  // Still in use: the queued task reads them (nothing went back to the allocator or device).
  assert.deepEqual(liveDelta(queued, simStats()), {});
  assert.equal(npu.memory().blocksInUse, inUse);
  assert.equal(npu.memory().pendingReleases, 4);
  npu.synchronize();
  const after = simStats();
  assert.equal(after.pendingTasks, 0);
  assert.equal(npu.memory().blocksInUse, inUse - 4, "released after the synchronisation");
  assert.equal(npu.memory().blocksCached, 4, "kept by the caching allocator");
  assert.equal(after.deviceAllocations, queued.deviceAllocations, "no aclrtFree: cached");
  assert.equal(after.tasksFailed, queued.tasksFailed, "no task saw freed memory");
  // The software CANN against the CPU backend: each within its rounding of the exact sums.
  const tol = betweenKernels(TOLERANCE.float32);
  assertClose(r.sumDy!.to("cpu"), expected.sumDy!, tol, "sumDy");
  assertClose(r.gradWeight!.to("cpu"), expected.gradWeight!, tol, "gradWeight");
  // A buffer not used by queued work goes back to the allocator at once, and emptyCache()
  // hands the cached blocks back to the device.
  const loose = Tensor.zeros([16], "float32", npu);
  const m0 = npu.memory();
  loose.dispose();
  assert.equal(npu.memory().blocksInUse, m0.blocksInUse - 1);
  const s0 = simStats();
  npu.emptyCache();
  assert.equal(simStats().deviceAllocations, s0.deviceAllocations - m0.blocksCached - 1);
  assert.equal(npu.memory().bytesCached, 0);
});

Deno.test("runtime: a loop that never reads results keeps the stream queue bounded", () => {
  using npu = openSim();
  const x = Tensor.random([2, 4, 3], { seed: 1, device: npu });
  const mean = Tensor.zeros([4], "float32", npu);
  const invstd = Tensor.ones([4], "float32", npu);
  const out = {
    sumDy: Tensor.zeros([4], "float32", npu),
    sumDyXmu: Tensor.zeros([4], "float32", npu),
    gradWeight: Tensor.zeros([4], "float32", npu),
    gradBias: Tensor.zeros([4], "float32", npu),
  };
  // One launch first, so the workspace (allocated once, on first use) is in the baseline.
  batchNormReduceBackward({ gradOut: x, input: x, mean, invstd, out });
  npu.synchronize();
  const start = simStats();
  let maxPending = 0;
  for (let i = 0; i < 2500; i++) {
    batchNormReduceBackward({ gradOut: x, input: x, mean, invstd, out });
    maxPending = Math.max(maxPending, simStats().pendingTasks);
  }
  // The runtime synchronises every 1024 launches: the queue never holds more.
  assert.ok(maxPending <= 1024, `pending tasks peaked at ${maxPending}`);
  assert.ok(maxPending >= 1000, `launches were queued, not run one by one (${maxPending})`);
  const end = simStats();
  assert.equal(end.deviceAllocations, start.deviceAllocations, "no allocation per call with out");
  assert.equal(end.tasksDone - start.tasksDone + end.pendingTasks, 2500);
});

Deno.test("runtime: the workspace is reused across calls and freed by close", () => {
  const before = simStats();
  {
    using npu = openSim();
    const x = Tensor.random([4, 3, 5], { seed: 3, device: npu });
    const stats = Tensor.ones([3], "float32", npu);
    const outs = () => ({
      sumDy: Tensor.zeros([3], "float32", npu),
      sumDyXmu: Tensor.zeros([3], "float32", npu),
      gradWeight: Tensor.zeros([3], "float32", npu),
      gradBias: Tensor.zeros([3], "float32", npu),
    });
    const o1 = outs();
    const o2 = outs();
    const s0 = simStats();
    batchNormReduceBackward({ gradOut: x, input: x, mean: stats, invstd: stats, out: o1 });
    const s1 = simStats();
    assert.equal(s1.deviceAllocations, s0.deviceAllocations + 1, "one workspace allocated");
    batchNormReduceBackward({ gradOut: x, input: x, mean: stats, invstd: stats, out: o2 });
    assert.equal(simStats().deviceAllocations, s1.deviceAllocations, "workspace reused");
    npu.synchronize();
    assertSameValues(o1.sumDy.to("cpu"), o2.sumDy.to("cpu"), "same result");
  }
  // close() freed the workspace and every tensor that was never disposed.
  assert.deepEqual(liveDelta(before, simStats()), {});
});

Deno.test("runtime: tensors of another device or on the cpu are 161002 at runAclnn", () => {
  Deno.env.set("ACLSIM_DEVICE_COUNT", "2");
  using npu0 = openSim(0);
  using npu1 = openSim(1);
  const x0 = Tensor.random([4, 3], { seed: 1, device: npu0 });
  const x1 = Tensor.random([4, 3], { seed: 1, device: npu1 });
  const c0 = Tensor.ones([3], "float32", npu0);
  const cpu = Tensor.ones([3]);
  const call = (mean: Tensor, input: Tensor) =>
    runAclnn(npu0, "aclnnBatchNormReduceBackward", [
      arg.tensor(input),
      arg.tensor(input),
      arg.tensor(mean),
      arg.tensor(c0),
      arg.tensor(undefined),
      arg.bool(false),
      arg.bool(false),
      arg.bool(false),
      arg.tensor(undefined),
      arg.tensor(undefined),
      arg.tensor(undefined),
      arg.tensor(undefined),
    ]);
  assert.throws(() => call(cpu, x0), (e: unknown) => {
    assert.ok(e instanceof AclnnError);
    assert.equal(e.code, 161002);
    assert.match(e.message, /argument 2 \(tensor\) is on cpu/);
    return true;
  });
  assert.throws(() => call(c0, x1), (e: unknown) => {
    assert.ok(e instanceof AclnnError);
    assert.equal(e.code, 161002);
    assert.match(e.message, /argument 0 \(tensor\) is on npu:1/);
    return true;
  });
  // Both devices work side by side (their contexts are switched as needed).
  assertSameValues(x1.to("cpu"), x0.to("cpu"), "same seed on both devices");
  const released = Tensor.ones([3], "float32", npu0);
  released.dispose();
  assert.throws(() => call(released, x0), /released/);
  // The TypeScript validation refuses mixed devices first, with the same code.
  assert.throws(
    () => batchNormReduceBackward({ gradOut: x0, input: x0, mean: cpu, invstd: c0 }),
    (e: unknown) => e instanceof AclnnError && e.code === 161002,
  );
});

Deno.test("runtime: the FinalizationRegistry frees buffers that became garbage (backstop)", async () => {
  const r = await childJson([
    "run",
    "--no-prompt",
    "--quiet",
    "--v8-flags=--expose-gc",
    "--allow-ffi",
    "--allow-env",
    "--allow-read",
    new URL("../fixtures/ffi_gc_child.ts", import.meta.url).pathname,
  ], { ACLSIM_DIR: SIM_DIR });
  assert.equal(r.allocated, 50);
  assert.equal(r.remaining, 0, "garbage tensors were freed without dispose()");
  assert.equal(r.final, 0);
});

Deno.test("runtime: finalizeAscend refuses while a device is open, then finalises once", () => {
  const npu = openSim();
  assert.throws(() => finalizeAscend({ libDir: SIM_DIR }), /npu:0 is still open/);
  npu.close();
  assert.equal(finalizeAscend({ libDir: SIM_DIR }), true);
  assert.equal(finalizeAscend({ libDir: SIM_DIR }), false, "already finalised");
  // A later openAscend initialises again.
  using again = openSim();
  assert.deepEqual(Tensor.ones([2], "float32", again).toArray(), [1, 1]);
});

Deno.test("runtime: an error carries only its own native text, never an earlier one", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("../fixtures/stale_message_child.ts", import.meta.url).pathname],
    env: { ASCEND_OPP_PATH: SIM_DIR, ACLSIM_DEVICE_COUNT: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const { noDevice, withDevice } = JSON.parse(new TextDecoder().decode(out.stdout));
  const invalid = (id: number) =>
    `aclrtSetDevice: device id ${id} is invalid (the simulator has 1 device(s); set ACLSIM_DEVICE_COUNT)`;
  // Without a device the runtime returns `new\n<previous>`: only the new part is attached.
  assert.deepEqual(noDevice, [invalid(5), invalid(6), invalid(7)]);
  // With one, the same failure twice is reported twice (nothing is mistaken for a kept copy).
  assert.deepEqual(withDevice, [invalid(9), invalid(9)]);
});

Deno.test("runtime: ACL ownership (finalise only what we initialised) and balanced device resets", async () => {
  for (const scenario of ["ours", "theirs"]) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        new URL("../fixtures/acl_ownership_child.ts", import.meta.url).pathname,
        scenario,
      ],
      env: { ASCEND_OPP_PATH: SIM_DIR, ACLSIM_DEVICE_COUNT: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, text);
    assert.match(text, new RegExp(`ok ${scenario}`));
  }
});

Deno.test("runtime: prepared calls are bounded per device and destroyed by close", () => {
  const before = simStats();
  const npu = openSim();
  // 100 distinct signatures (shapes): each prepares a call, at most 64 are kept.
  for (let n = 1; n <= 100; n++) {
    const input = Tensor.random([n, 2, 3], { seed: n, device: npu });
    using r = batchNormReduceBackward({
      gradOut: input,
      input,
      mean: Tensor.zeros([2], "float32", npu),
      invstd: Tensor.ones([2], "float32", npu),
    });
    void r;
  }
  npu.synchronize();
  const m = npu.memory();
  assert.ok(m.cachedCalls > 0 && m.cachedCalls <= 64, `cachedCalls ${m.cachedCalls}`);
  assert.ok(simStats().executors - before.executors <= 64, "retired executors were destroyed");
  npu.close();
  assert.deepEqual(liveDelta(before, simStats()), {}, "close destroys every cached call");
});
