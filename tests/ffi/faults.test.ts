/**
 * Fault injection (issue 12, item 3): the software CANN makes one native call fail the way the
 * real stack does (tests/sim/README_test_hooks.md "Fault injection"), and the library must
 * - throw an AclError / AclnnError whose `code` is the native one and whose message names the
 *   failing call;
 * - leave nothing of the failed call alive: the simulator's live counters (after
 *   `emptyCache()`, which synchronises and gives the caching allocator's free blocks back)
 *   return to where they were;
 * - keep the device usable: the next call succeeds and agrees with the CPU backend.
 *
 * Faults: aclrtMalloc (207001), aclrtMemcpy (507899), a kernel failing at synchronisation
 * (507015), a workspace too large to allocate, aclrtCreateStream (207008), a stream refusing a
 * task (the launch is 361001, naming the runtime's 107023); and `corrupt`, a kernel that
 * succeeds with wrong values (what `deno task verify:npu` must catch). Needs the built simulator.
 *
 * @module
 */

import assert from "node:assert/strict";
import { AclError, AclnnError } from "../../src/errors.ts";
import type { AscendDevice } from "../../src/ffi/runtime.ts";
import { batchNormReduceBackward } from "../../src/ops/batch_norm_reduce_backward.ts";
import { batchNorm } from "../../src/ops/batch_norm.ts";
import { batchNormStats } from "../../src/ops/batch_norm_stats.ts";
import { groupNormBackward } from "../../src/ops/group_norm_backward.ts";
import { createBatchNormBackwardDescriptor } from "../../src/ops/infiniop_batch_norm_backward.ts";
import { tidy } from "../../src/tensor/scope.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import {
  clearFaults,
  injectFault,
  liveDelta,
  openSim,
  type SimStats,
  simStats,
} from "../helpers/ffi_sim.ts";
import { plainDescriptors } from "../fixtures/infiniop.ts";

/** The counters once queued work is done and the allocator's cache is given back. */
function settled(npu: AscendDevice): SimStats {
  npu.emptyCache();
  return simStats();
}

/** Asserts that `fn` throws `type` with `code` and a message matching every pattern. */
function assertFails(
  fn: () => unknown,
  type: typeof AclError | typeof AclnnError,
  code: number,
  ...patterns: RegExp[]
): AclError | AclnnError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof type, `expected ${type.name} ${code}, got ${caught}`);
  const e = caught as AclError | AclnnError;
  assert.equal(e.code, code, e.message);
  for (const p of patterns) assert.match(e.message, p);
  return e;
}

/** Runs `fn` with the faults it arms cleared afterwards, whatever happens. */
function withFaults<T>(fn: () => T): T {
  try {
    return fn();
  } finally {
    clearFaults();
  }
}

/** Host data of a BatchNorm-family problem, and its copies on `npu`. */
function bnProblem(npu: AscendDevice, shape: number[], seed = 1) {
  const C = shape[1];
  const host = {
    gradOut: Tensor.random(shape, { seed }),
    input: Tensor.random(shape, { seed: seed + 1 }),
    mean: Tensor.random([C], { seed: seed + 2 }),
    invstd: Tensor.full([C], 1.5),
  };
  const dev = {
    gradOut: host.gradOut.to(npu),
    input: host.input.to(npu),
    mean: host.mean.to(npu),
    invstd: host.invstd.to(npu),
  };
  return { host, dev };
}

/** Caller-owned outputs of batchNormStats on `npu` (so the call itself allocates nothing). */
function statsOut(npu: AscendDevice, C: number) {
  return { mean: Tensor.zeros([C], "float32", npu), invstd: Tensor.zeros([C], "float32", npu) };
}

function assertStatsMatchCpu(input: Tensor, hostInput: Tensor, what: string) {
  using got = batchNormStats({ input });
  const want = batchNormStats({ input: hostInput });
  assertClose(got.mean, want.mean, undefined, `${what}: mean`);
  assertClose(got.invstd, want.invstd, undefined, `${what}: invstd`);
}

Deno.test("faults: aclrtMalloc fails with 207001; nothing is left allocated, the next call works", () => {
  using npu = openSim();
  const host = Tensor.random([6, 4, 3], { seed: 3 });
  const base = simStats().faultsInjected;
  withFaults(() => {
    // One failure is absorbed: the allocator empties its cache and tries aclrtMalloc again.
    let before = settled(npu);
    injectFault("malloc");
    const x = host.to(npu);
    assert.equal(simStats().faultsInjected, base + 1, "the fault fired");
    assert.deepEqual(x.toArray(), host.toArray());
    x.dispose();
    assert.deepEqual(liveDelta(before, settled(npu)), {});

    // Two failures in a row reach the caller: Tensor.to(npu).
    before = settled(npu);
    injectFault("malloc", { times: 2 });
    const e = assertFails(
      () => host.to(npu),
      AclError,
      207001,
      /aclrtMalloc\(512 bytes on npu:0\) failed/,
      /Failed to allocate memory requested by APP module/,
    );
    assert.match(e.nativeMessage ?? "", /APP module/, "the native text is kept");
    assert.deepEqual(liveDelta(before, settled(npu)), {}, "Tensor.to allocated nothing");

    // An operator whose first output cannot be allocated.
    const input = host.to(npu);
    batchNormStats({ input })[Symbol.dispose](); // warm: workspace and prepared call exist
    const warm = settled(npu);
    injectFault("malloc", { times: 2 });
    assertFails(() => batchNormStats({ input }), AclError, 207001, /aclrtMalloc/);
    assert.deepEqual(liveDelta(warm, settled(npu)), {}, "batchNormStats allocated nothing");
    assert.equal(simStats().faultsInjected, base + 5);

    // The device is fine: the same calls succeed.
    assertStatsMatchCpu(input, host, "after the malloc failures");
    assert.deepEqual(liveDelta(warm, settled(npu)), {});
    input.dispose();
  });
});

Deno.test("faults: aclrtMemcpy fails with 507899 in both directions; the tensor keeps its values", () => {
  using npu = openSim();
  const host = Tensor.random([5, 3, 2], { seed: 4 });
  const x = host.to(npu);
  const before = settled(npu);
  withFaults(() => {
    // Device to host: the read fails, nothing is allocated, the next read works.
    injectFault("memcpy");
    assertFails(
      () => x.toArray(),
      AclError,
      507899,
      /aclrtMemcpy\(npu:0 to host, 120 bytes\) failed/,
      /drvMemcpy failed/,
    );
    assert.deepEqual(liveDelta(before, settled(npu)), {});
    assert.deepEqual(x.toArray(), host.toArray());

    // copy_ reads the span, patches it, writes it back: make the write (the 2nd copy) fail.
    injectFault("memcpy", { nth: 2 });
    assertFails(
      () => x.copy_(new Array(30).fill(7)),
      AclError,
      507899,
      /aclrtMemcpy\(host to npu:0, 120 bytes\) failed/,
    );
    assert.deepEqual(x.toArray(), host.toArray(), "the failed write changed nothing");
    x.copy_(new Array(30).fill(7));
    assert.deepEqual(x.toArray(), new Array(30).fill(7), "the next write works");
    assert.deepEqual(liveDelta(before, settled(npu)), {});

    // The environment variable arms the same fault (read by the simulator at every call).
    Deno.env.set("ACLSIM_FAULT", "memcpy:1:1:507899");
    try {
      assertFails(() => x.toArray(), AclError, 507899, /aclrtMemcpy/);
    } finally {
      Deno.env.delete("ACLSIM_FAULT");
    }
    assert.deepEqual(x.toArray(), new Array(30).fill(7));
  });
  x.dispose();
});

Deno.test("faults: a kernel failing at synchronisation (507015) surfaces when the result is read", () => {
  using npu = openSim();
  const { host, dev } = bnProblem(npu, [4, 3, 5]);
  const want = batchNormReduceBackward(host);
  batchNormReduceBackward(dev)[Symbol.dispose](); // warm: the prepared call and the workspace
  const before = settled(npu);
  withFaults(() => {
    injectFault("kernel");
    const r = batchNormReduceBackward(dev); // queued: the launch itself succeeds
    assert.equal(simStats().pendingTasks, 1);
    assertFails(
      () => r.sumDy!.toArray(),
      AclError,
      507015,
      /aclrtSynchronizeStream\(npu:0\) failed/,
      /aclnnBatchNormReduceBackward task #\d+: Kernel task happen error/,
      /aicore exception/,
    );
    r[Symbol.dispose]();
    assert.deepEqual(liveDelta(before, settled(npu)), {});

    // The device is usable: the same call gives the CPU's values.
    {
      using again = batchNormReduceBackward(dev);
      for (const k of ["sumDy", "sumDyXmu", "gradWeight", "gradBias"] as const) {
        assertClose(again[k], want[k]!, undefined, k);
      }
    }

    // Or at the next synchronisation: the failing launch (the 2nd of three) and the work
    // queued after it are lost, the error is reported once, then everything runs again.
    injectFault("kernel", { nth: 2 });
    const results = [0, 1, 2].map(() => batchNormReduceBackward(dev));
    assertFails(() => npu.synchronize(), AclError, 507015, /aicore exception/);
    for (const res of results) res[Symbol.dispose]();
    npu.synchronize();
    assert.deepEqual(liveDelta(before, settled(npu)), {});
    using last = batchNormReduceBackward(dev);
    assertClose(last.sumDyXmu, want.sumDyXmu!, undefined, "sumDyXmu after the failure");
  });
  for (const t of Object.values(dev)) t.dispose();
});

Deno.test("faults: corrupt scales every value a kernel writes, outputs and running stats alike", () => {
  using npu = openSim();
  // x = 0..7 as [4, 2]: channel means 3 and 4, biased variance 5 for both.
  const host = Tensor.fromArray([0, 1, 2, 3, 4, 5, 6, 7], [4, 2]);
  const input = host.to(npu);
  const invstd = 1 / Math.sqrt(5 + 1e-5);
  const f32 = (values: number[]) => values.map(Math.fround);
  withFaults(() => {
    // The default perturbation, relative 1e-2, on the 2nd launch from now only.
    injectFault("corrupt", { nth: 2 });
    const first = batchNormStats({ input });
    const second = batchNormStats({ input });
    const third = batchNormStats({ input });
    assert.deepEqual(first.mean.toArray(), [3, 4]);
    assert.deepEqual(second.mean.toArray(), f32([3 * 1.01, 4 * 1.01]));
    assert.deepEqual(second.invstd.toArray(), f32([invstd * 1.01, invstd * 1.01]));
    assert.deepEqual(third.invstd.toArray(), f32([invstd, invstd]));
    // value: the perturbation in millionths; in-place running statistics are perturbed too.
    injectFault("corrupt", { value: 1000 });
    const runningMean = Tensor.fromArray([1, 1], [2]).to(npu);
    const r = batchNorm({ input, runningMean, training: true, momentum: 0.5 });
    assert.deepEqual(runningMean.toArray(), f32([2 * 1.001, 2.5 * 1.001]));
    assert.deepEqual(r.saveMean.toArray(), f32([3 * 1.001, 4 * 1.001]));
    // ACLSIM_FAULT=corrupt alone corrupts every launch until disarmed; no error is raised.
    Deno.env.set("ACLSIM_FAULT", "corrupt");
    try {
      for (let i = 0; i < 2; i++) {
        assert.deepEqual(batchNormStats({ input }).mean.toArray(), f32([3.03, 4.04]));
      }
    } finally {
      Deno.env.delete("ACLSIM_FAULT");
    }
  });
  assert.deepEqual(batchNormStats({ input }).mean.toArray(), [3, 4], "disarmed");
});

Deno.test("faults: a workspace too large to allocate names the operator; no executor is left", () => {
  using npu = openSim();
  const host = Tensor.random([3, 4, 7], { seed: 5 });
  const input = host.to(npu);
  const out = statsOut(npu, 4);
  // The device's reusable workspace exists (a call of another signature made it).
  tidy(() => void batchNormStats({ input: Tensor.random([2, 4, 3], { seed: 6, device: npu }) }));
  const calls = npu.memory().cachedCalls;
  const before = settled(npu);
  withFaults(() => {
    // A new signature: phase 1 runs and asks for the device's memory + 1 byte.
    injectFault("workspace");
    const e = assertFails(
      () => batchNormStats({ input, out }),
      AclError,
      207001,
      /^aclnnBatchNormStats: the \d+-byte workspace asked for by aclnnBatchNormStatsGetWorkspaceSize cannot be allocated: /,
      /aclrtMalloc\(\d+ bytes on npu:0\) failed/,
    );
    // One code tag from the aclrtMalloc error it quotes, one of its own (not repeated).
    assert.equal(e.message.match(/\[ACL_ERROR_RT_MEMORY_ALLOCATION 207001\]/g)?.length, 2);
    // The executor and the descriptors made for the call are gone at once, without a sync.
    const now = simStats();
    assert.equal(now.executors, before.executors);
    assert.equal(now.tensors, before.tensors);
    assert.equal(npu.memory().cachedCalls, calls, "the failed call is not cached");
    assert.deepEqual(liveDelta(before, settled(npu)), {});

    // A size beyond Number.MAX_SAFE_INTEGER (2^62 bytes) fails the same way; tidy frees the
    // outputs groupNormBackward allocated before its workspace.
    const gn = {
      gradOut: Tensor.random([2, 4, 3], { seed: 7, device: npu }),
      input: Tensor.random([2, 4, 3], { seed: 8, device: npu }),
      mean: Tensor.zeros([2, 2], "float32", npu),
      rstd: Tensor.ones([2, 2], "float32", npu),
    };
    const gnBefore = settled(npu);
    injectFault("workspace", { value: 2 ** 62 });
    assertFails(
      () => tidy(() => groupNormBackward({ ...gn, group: 2 })),
      AclError,
      207001,
      /^aclnnGroupNormBackward: the 4611686018427387904-byte workspace/,
    );
    assert.deepEqual(liveDelta(gnBefore, settled(npu)), {});
    for (const t of Object.values(gn)) t.dispose();
  });
  // The same signature is prepared afresh and works.
  batchNormStats({ input, out });
  const want = batchNormStats({ input: host });
  assertClose(out.mean, want.mean, undefined, "mean");
  assertClose(out.invstd, want.invstd, undefined, "invstd");
  input.dispose();
  out.mean.dispose();
  out.invstd.dispose();
});

Deno.test("faults: aclrtCreateStream fails with 207008: openAscend releases the device; a retry opens it", () => {
  const before = simStats();
  withFaults(() => {
    injectFault("createStream");
    assertFails(
      () => openSim(),
      AclError,
      207008,
      /aclrtCreateStream\(npu:0\) failed/,
      /no stream resource/,
    );
  });
  const after = simStats();
  assert.deepEqual(liveDelta(before, after), {});
  assert.equal(after.deviceReferences, before.deviceReferences, "the aclrtSetDevice was undone");
  using npu = openSim();
  const host = Tensor.random([2, 3, 4], { seed: 9 });
  const x = host.to(npu);
  assertStatsMatchCpu(x, host, "after the failed open");
  x.dispose();
});

Deno.test("faults: a stream refusing a launch (361001 naming 107023); the prepared call is dropped", () => {
  using npu = openSim();
  const host = Tensor.random([4, 2, 6], { seed: 10 });
  const input = host.to(npu);
  const out = statsOut(npu, 2);
  // The device's reusable workspace exists (a call of another signature made it).
  tidy(() => void batchNormStats({ input: Tensor.random([2, 2, 2], { seed: 11, device: npu }) }));
  const before = settled(npu);
  withFaults(() => {
    // First call of a signature: phase 1 made a repeatable executor; the launch fails.
    injectFault("stream");
    const e = assertFails(
      () => batchNormStats({ input, out }),
      AclnnError,
      361001,
      /^aclnnBatchNormStats failed: /,
      /abort state/,
    );
    // One line; CANN's whole text (its TraceBack, with opbase's 107023 item) is nativeMessage.
    assert.doesNotMatch(e.message, /\n/);
    assert.match(e.nativeMessage ?? "", /TraceBack \(most recent call last\):/);
    assert.match(e.nativeMessage ?? "", /aclrtLaunchKernelWithHostArgs failed: 107023/);
    assert.deepEqual(liveDelta(before, simStats()), {}, "nothing left, even before a sync");

    // A prepared (cached) call whose launch fails is dropped, executor and descriptors.
    batchNormStats({ input, out });
    const cached = settled(npu);
    const calls = npu.memory().cachedCalls;
    injectFault("stream");
    const again = assertFails(() => batchNormStats({ input, out }), AclnnError, 361001);
    assert.match(again.nativeMessage ?? "", /107023/);
    assert.equal(npu.memory().cachedCalls, calls - 1);
    assert.deepEqual(liveDelta(cached, settled(npu)), { tensors: -3, executors: -1 });
  });
  batchNormStats({ input, out });
  const want = batchNormStats({ input: host });
  assertClose(out.mean, want.mean, undefined, "mean");
  assertClose(out.invstd, want.invstd, undefined, "invstd");
  for (const t of [input, out.mean, out.invstd]) t.dispose();
});

Deno.test("faults: the backend's scratch tensors are freed when a later allocation fails", () => {
  // On a SoC whose BatchNormBackward reads saveInvstd as the variance, the backend uploads a
  // variance scratch, and InfiniOp's in-place gradInput needs a scratch output too: make that
  // second scratch's aclrtMalloc fail (and its retry).
  const soc = Deno.env.get("ACLSIM_SOC_NAME");
  Deno.env.set("ACLSIM_SOC_NAME", "Ascend910B4");
  try {
    using npu = openSim();
    const [N, C, L] = [4, 3, 8];
    const shape = [N, C, L];
    using descriptor = createBatchNormBackwardDescriptor(plainDescriptors(N, C, L, "float32"));
    const hostDy = Tensor.random(shape, { seed: 2 });
    const dy = hostDy.to(npu);
    const t = {
      input: Tensor.random(shape, { seed: 1, device: npu }),
      gradOutput: dy,
      gradInput: dy,
      weight: Tensor.ones([3], "float32", npu),
      runningMean: Tensor.zeros([3], "float32", npu),
      runningVar: Tensor.ones([3], "float32", npu),
      gradWeight: Tensor.zeros([3], "float32", npu),
      gradBias: Tensor.zeros([3], "float32", npu),
    };
    const scratch = Tensor.zeros(shape, "float32", npu);
    descriptor.compute({ ...t, gradInput: scratch }); // warm: workspace and prepared call
    scratch.dispose();
    const before = settled(npu);
    // compute allocates: saveInvstd (1), the backend's variance scratch (2), gradInput's (3).
    withFaults(() => {
      injectFault("malloc", { nth: 3, times: 2 });
      assertFails(() => descriptor.compute(t), AclError, 207001, /aclrtMalloc/);
    });
    assert.deepEqual(liveDelta(before, settled(npu)), {}, "both scratch tensors were freed");
    assert.deepEqual(dy.toArray(), hostDy.toArray(), "gradOutput untouched");
    // The same compute works and agrees with the CPU backend (in place there too).
    const cpu = Object.fromEntries(
      Object.entries(t).map(([k, v]) => [k, v.to("cpu")]),
    ) as typeof t;
    cpu.gradInput = cpu.gradOutput;
    descriptor.compute(cpu);
    descriptor.compute(t);
    assertClose(dy, cpu.gradInput, undefined, "gradInput");
    assertClose(t.gradWeight, cpu.gradWeight, undefined, "gradWeight");
    assertClose(t.gradBias, cpu.gradBias, undefined, "gradBias");
    for (const x of new Set(Object.values(t))) x.dispose();
  } finally {
    if (soc === undefined) Deno.env.delete("ACLSIM_SOC_NAME");
    else Deno.env.set("ACLSIM_SOC_NAME", soc);
  }
});

/**
 * Device memory an operator (or Tensor.to) allocated before a later native call failed is
 * freed by the failing call itself (src/tensor/scope.ts releaseOnFailure around every
 * operator's outputs and kernels; Tensor.to/zeros release new storage whose upload or fill
 * failed): nothing waits for tidy or the garbage collector.
 */
Deno.test("faults: outputs allocated before a failure are freed by the failing call", () => {
  using npu = openSim();
  const host = Tensor.random([5, 3, 4], { seed: 12 });
  const input = host.to(npu);
  batchNormStats({ input })[Symbol.dispose]();
  const before = settled(npu);
  withFaults(() => {
    // The 2nd output's aclrtMalloc fails (and its retry): the 1st output exists by then.
    injectFault("malloc", { nth: 2, times: 2 });
    assertFails(() => batchNormStats({ input }), AclError, 207001, /aclrtMalloc/);
    assert.deepEqual(liveDelta(before, settled(npu)), {}, "the first output was freed");
    // Under tidy too (and the scope's own bookkeeping stays right).
    injectFault("malloc", { nth: 2, times: 2 });
    assertFails(() => tidy(() => batchNormStats({ input })), AclError, 207001);
    assert.deepEqual(liveDelta(before, settled(npu)), {});
    injectFault("memcpy");
    assertFails(() => host.to(npu), AclError, 507899, /aclrtMemcpy\(host to npu:0/);
    assert.deepEqual(liveDelta(before, settled(npu)), {}, "the upload's storage was freed");
  });
  assertStatsMatchCpu(input, host, "after the failures");
  input.dispose();
});
