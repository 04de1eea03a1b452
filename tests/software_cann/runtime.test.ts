/**
 * The software CANN behaves as CANN's runtime and opbase do (the rules and their sources are in
 * tests/sim/README_runtime.md):
 * aclGetRecentErrMsg's per-thread queue and its thread-local copy, aclInit / aclFinalize
 * counting, device references, the memory corner cases and aclrtMalloc's padding, the
 * repeatable-executor API of composite aclnn operators, and O(log n) device-address lookups.
 *
 * Raw calls go straight to the simulator's C functions (tests/fixtures/sim_runtime_raw.ts);
 * rules that depend on process-wide state run in child processes
 * (tests/fixtures/sim_runtime_child.ts). Needs the built simulator (`deno task build:sim`).
 */

import assert from "node:assert/strict";
import { batchNormReduceBackward } from "../../src/ops/batch_norm_reduce_backward.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { liveDelta, openSim, SIM_DIR, simEnv, simStats } from "../helpers/ffi_sim.ts";
import { D2H, H2D, offset, RawSim, STAT } from "../fixtures/sim_runtime_raw.ts";

const CHILD = new URL("../fixtures/sim_runtime_child.ts", import.meta.url).pathname;

async function child(scenario: string, env: Record<string, string> = {}): Promise<void> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-prompt",
      "--quiet",
      "--allow-ffi",
      "--allow-env",
      "--allow-read",
      CHILD,
      scenario,
    ],
    env: { ACLSIM_DIR: SIM_DIR, ASCEND_OPP_PATH: SIM_DIR, ...env },
    clearEnv: false,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, `${scenario}: ${text}`);
  assert.match(text, new RegExp(`ok ${scenario}`));
}

/**
 * Runs `fn` with device 0 set on this thread (so aclGetRecentErrMsg behaves as on a thread with a
 * current context), then drains the error queue and releases the reference.
 */
function withDevice(fn: (sim: RawSim) => void): void {
  simEnv();
  using sim = new RawSim();
  assert.equal(sim.rt.aclrtSetDevice(0), 0);
  sim.err(); // whatever an earlier test left
  try {
    fn(sim);
  } finally {
    sim.err();
    assert.equal(sim.rt.aclrtResetDevice(0), 0);
  }
}

// ---- aclGetRecentErrMsg (runtime acl.cpp aclGetRecentErrMsgImpl, error_manager.cc) ----------

Deno.test("errors: a per-thread queue, read joined as ErrorManager formats it, then cleared", () => {
  withDevice((sim) => {
    const { rt } = sim;
    const out = new BigUint64Array(1);
    assert.equal(sim.err(), null, "nothing pending: NULL, not an empty string");
    assert.equal(rt.aclrtMalloc(out, 0n, 0), 100000);
    assert.equal(rt.aclrtSetDevice(99), 107001);
    assert.equal(rt.aclrtMalloc(out, 0n, 0), 100000, "an identical item is not queued twice");
    const text = sim.err()!;
    const lines = text.split("\n");
    assert.equal(lines[0], "aclrtMalloc: size is 0", text);
    assert.equal(lines[1], "TraceBack (most recent call last):");
    assert.match(lines[2], /^ {8}aclrtSetDevice: device id 99 is invalid/);
    assert.equal(lines.length, 4, "three lines, each ending in a newline");
    assert.equal(lines[3], "");
    assert.equal(sim.err(), null, "cleared by the read (a device is set)");

    for (let i = 0; i < 1005; i++) assert.equal(rt.aclrtSetDevice(1000 + i), 107001);
    const many = sim.err()!;
    assert.equal(many.split("\n").length - 1, 1001, "1000 items + the TraceBack line");
    assert.ok(
      many.includes("device id 1999 ") && !many.includes("device id 2000 "),
      "the rest dropped",
    );
    assert.equal(sim.err(), null);
  });
});

Deno.test("errors: on a thread with no device a second read returns the previous text again", async () => {
  await child("errors-nodev");
});

// ---- aclInit / aclFinalize / aclnnInit (runtime acl.cpp; opbase aclnn_init.cpp) ----------------

Deno.test("init: aclInit counts per process, aclFinalize zeroes it, a first aclFinalize is 0", async () => {
  await child("init");
});

// ---- device references (runtime runtime.cc PrimaryContextRetain / Release) --------------------

Deno.test("devices: references per process and device, 507007 for an extra reset, teardown", async () => {
  await child("device-refs", { ACLSIM_DEVICE_COUNT: "2" });
});

// ---- memory (runtime memory.cpp, api_error.cc) ---------------------------------------------------

Deno.test("memory: aclrtMemcpy / aclrtMemset corner cases", () => {
  withDevice((sim) => {
    const { rt } = sim;
    const p = sim.malloc(100);
    const host = new Uint8Array(256);
    const h = Deno.UnsafePointer.of(host);
    try {
      assert.equal(rt.aclrtMemcpy(p, 100n, h, 200n, H2D), 107000, "count > destMax");
      assert.match(sim.err()!, /count 200 exceeds destMax 100/);
      assert.equal(rt.aclrtMemcpy(null, 0n, null, 0n, H2D), 0, "count 0 before any pointer check");
      assert.equal(rt.aclrtMemcpy(null, 0n, null, 0n, 99), 0, "count 0 before the kind check");
      assert.equal(sim.err(), null);
      assert.equal(rt.aclrtMemcpy(null, 8n, h, 8n, H2D), 100000, "NULL dst");
      assert.equal(rt.aclrtMemcpy(p, 8n, h, 8n, 6), 100000, "kind 6");
      assert.equal(rt.aclrtMemcpy(p, 0n, h, 8n, H2D), 107000, "destMax 0");
      sim.err();
      assert.equal(rt.aclrtMemset(null, 0n, 3, 0n), 0, "memset count 0 with a NULL pointer");
      assert.equal(rt.aclrtMemset(null, 8n, 3, 8n), 100000, "memset NULL");
      assert.equal(rt.aclrtMemset(p, 8n, 0, 16n), 107000, "memset count > maxCount");
      sim.err();
      assert.equal(rt.aclrtMemset(p, 100n, 0x1ab, 3n), 0);
      assert.equal(rt.aclrtMemset(offset(p, 3), 97n, -1, 1n), 0);
      const back = new Uint8Array(4);
      assert.equal(rt.aclrtMemcpy(Deno.UnsafePointer.of(back), 4n, p, 4n, D2H), 0);
      assert.deepEqual([...back], [0xab, 0xab, 0xab, 0xff], "the value is truncated to a byte");
    } finally {
      sim.free(p);
    }
  });
});

Deno.test("memory: aclrtMalloc pads to round_up(size, 32) + padding_size (the platform file's, else 32)", () => {
  withDevice((sim) => {
    const cases: [string | undefined, number, number][] = [
      [undefined, 100, 128], // Ascend950PR_9599: padding_size=0
      [undefined, 33, 64],
      ["Ascend350_354f", 64, 64],
      ["Ascend910_9599", 64, 96], // the pre-2026 950 file (runtime 494dda3) has no padding_size
      ["Ascend910B4", 100, 160],
      ["Ascend910B4", 32, 64],
      ["Ascend910A", 1, 64],
      ["Ascend910_9391", 64, 96],
      ["Ascend310P3", 64, 96],
      ["Ascend310B1", 64, 96],
      ["UnknownSoc", 64, 96], // the spec's default padding_size is 32
    ];
    const saved = Deno.env.get("ACLSIM_SOC_NAME");
    const free = new BigUint64Array(1);
    const total = new BigUint64Array(1);
    try {
      for (const [soc, size, want] of cases) {
        if (soc === undefined) Deno.env.delete("ACLSIM_SOC_NAME");
        else Deno.env.set("ACLSIM_SOC_NAME", soc);
        const what = `${soc ?? "default"} ${size} bytes`;
        const bytes0 = sim.stats()[STAT.deviceBytes];
        assert.equal(sim.rt.aclrtGetMemInfo(1, free, total), 0);
        const free0 = free[0];
        const p = sim.malloc(size);
        assert.equal(sim.stats()[STAT.deviceBytes] - bytes0, want, `${what}: live bytes`);
        assert.equal(sim.rt.aclrtGetMemInfo(1, free, total), 0);
        assert.equal(Number(free0 - free[0]), want, `${what}: aclrtGetMemInfo`);
        assert.equal(
          sim.rt.aclrtMemset(p, BigInt(want), 0, BigInt(want)),
          0,
          `${what}: padding usable`,
        );
        assert.equal(sim.rt.aclrtMemset(p, BigInt(want + 1), 0, BigInt(want + 1)), 107000, what);
        sim.err();
        sim.free(p);
      }
    } finally {
      if (saved === undefined) Deno.env.delete("ACLSIM_SOC_NAME");
      else Deno.env.set("ACLSIM_SOC_NAME", saved);
    }
  });
});

// ---- the repeatable-executor API (opbase acl_op_api.cpp, op_executor.cpp) ----------------------

/** A BatchNormStats call on a [N, C, L] input of fresh memory; shapes unique to this file. */
function statsCall(sim: RawSim, shape: [number, number, number]) {
  const [N, C, L] = shape;
  const values = Array.from({ length: N * C * L }, (_, i) => (i % 5) + Math.floor(i / 7));
  const x = sim.malloc(values.length * 4);
  sim.upload(x, values);
  const meanMem = sim.malloc(C * 4);
  const invMem = sim.malloc(C * 4);
  const input = sim.tensor(shape, x);
  const mean = sim.tensor([C], meanMem);
  const invstd = sim.tensor([C], invMem);
  const channelMeans = (vals: readonly number[]) =>
    Array.from({ length: C }, (_, c) => {
      let s = 0;
      for (let n = 0; n < N; n++) for (let l = 0; l < L; l++) s += vals[(n * C + c) * L + l];
      return s / (N * L);
    });
  return {
    x,
    values,
    input,
    mean,
    invstd,
    meanMem,
    channelMeans,
    phase1: () => sim.statsPhase1(input, mean, invstd),
    dispose() {
      for (const t of [input, mean, invstd]) sim.nn.aclDestroyTensor(t);
      for (const p of [x, meanMem, invMem]) sim.free(p);
    },
  };
}

Deno.test("executor: NULL handles, the address setters, aclSetRawTensorAddr", () => {
  withDevice((sim) => {
    const { nn, math } = sim;
    const c = statsCall(sim, [2, 3, 5]);
    try {
      assert.equal(nn.aclSetAclOpExecutorRepeatable(null), 561103);
      assert.match(sim.err()!, /executor cannot be a NULL pointer/);
      assert.equal(nn.aclDestroyAclOpExecutor(null), 561103);
      assert.match(sim.err()!, /executor cannot be a NULL pointer/);
      assert.equal(nn.aclSetRawTensorAddr(null, c.x), 161001);
      assert.match(sim.err()!, /tensor cannot be a NULL pointer/);
      assert.equal(
        math.aclnnBatchNormStats(null, 0n, null, null),
        161001,
        "phase 2, NULL executor",
      );
      assert.match(sim.err()!, /executor is nullptr/);
      for (
        const set of [
          "aclSetInputTensorAddr",
          "aclSetOutputTensorAddr",
          "aclSetTensorAddr",
        ] as const
      ) {
        assert.equal(nn[set](null, 0n, null, c.x), 561103, `${set}: NULL tensor`);
        assert.match(sim.err()!, /tensor cannot be a NULL pointer/);
        // The tensor's address is set first, then the NULL executor is refused.
        const y = sim.malloc(64);
        assert.equal(nn[set](null, 12345n, c.mean, y), 561103, `${set}: NULL executor`);
        assert.match(sim.err()!, /executor cannot be a NULL pointer/);
        const raw = new BigUint64Array(1);
        assert.equal(nn.aclGetRawTensorAddr(c.mean, raw), 0);
        assert.equal(raw[0], BigInt(Deno.UnsafePointer.value(y)), `${set} changed the aclTensor`);
        assert.equal(nn.aclSetRawTensorAddr(c.mean, c.meanMem), 0);
        sim.free(y);
      }
    } finally {
      c.dispose();
    }
  });
});

Deno.test("executor: aclSetAclOpExecutorRepeatable refuses (561000) as CANN does", () => {
  withDevice((sim) => {
    const { nn, math } = sim;
    const c = statsCall(sim, [2, 7, 3]);
    const saved = Deno.env.get("ACLSIM_UNREPEATABLE_OPS");
    try {
      // (b) an operator that copies host data to the device: a warning only, no error text
      for (const list of ["aclnnBatchNormStats", "aclnnBatchNorm, aclnnBatchNormStats", "*"]) {
        Deno.env.set("ACLSIM_UNREPEATABLE_OPS", list);
        const p = c.phase1();
        assert.equal(p.status, 0);
        assert.equal(nn.aclSetAclOpExecutorRepeatable(p.executor), 561000, list);
        assert.equal(sim.err(), null, `${list}: no error text`);
        assert.equal(
          nn.aclDestroyAclOpExecutor(p.executor),
          0,
          "a never-run executor is destroyed",
        );
      }
      Deno.env.set("ACLSIM_UNREPEATABLE_OPS", "aclnnBatchNorm,aclnnBatchNormStatsX");
      let p = c.phase1();
      assert.equal(nn.aclSetAclOpExecutorRepeatable(p.executor), 0, "other names: repeatable");
      Deno.env.delete("ACLSIM_UNREPEATABLE_OPS");
      // (c) an executor that already ran
      const ws = sim.malloc(Number(p.workspaceSize));
      assert.equal(math.aclnnBatchNormStats(ws, p.workspaceSize, p.executor, null), 0);
      assert.equal(nn.aclSetAclOpExecutorRepeatable(p.executor), 561000, "after a run");
      assert.match(sim.err()!, /has already run/);
      assert.equal(nn.aclDestroyAclOpExecutor(p.executor), 0);
      // a non-repeatable run consumes its executor ...
      p = c.phase1();
      assert.equal(math.aclnnBatchNormStats(ws, p.workspaceSize, p.executor, null), 0);
      assert.equal(nn.aclSetAclOpExecutorRepeatable(p.executor), 561000, "consumed");
      assert.match(sim.err()!, /has already run.*freed memory/);
      assert.equal(nn.aclDestroyAclOpExecutor(p.executor), 561000, "not a live executor");
      assert.match(sim.err()!, /has already run/);
      // ... (a) and leaves the call in CANN's executor cache: the next phase 1 of the same
      // signature (operator, geometry, scalars; not the addresses) is a cache hit.
      const d = statsCall(sim, [2, 7, 3]);
      p = d.phase1();
      assert.equal(p.status, 0);
      assert.equal(nn.aclSetAclOpExecutorRepeatable(p.executor), 561000, "cache hit");
      assert.equal(sim.err(), null, "cache hit: no error text");
      assert.equal(math.aclnnBatchNormStats(ws, p.workspaceSize, p.executor, null), 0, "runs once");
      assert.equal(sim.rt.aclrtSynchronizeStream(null), 0);
      const got = sim.download(d.meanMem, 7);
      d.channelMeans(d.values).forEach((m, i) => assert.ok(Math.abs(got[i] - m) < 1e-5));
      d.dispose();
      const e = statsCall(sim, [2, 7, 4]); // another geometry: no cache hit
      p = e.phase1();
      assert.equal(nn.aclSetAclOpExecutorRepeatable(p.executor), 0);
      assert.equal(nn.aclDestroyAclOpExecutor(p.executor), 0);
      e.dispose();
      sim.free(ws);
    } finally {
      if (saved === undefined) Deno.env.delete("ACLSIM_UNREPEATABLE_OPS");
      else Deno.env.set("ACLSIM_UNREPEATABLE_OPS", saved);
      c.dispose();
    }
  });
});

Deno.test("executor: a repeatable executor re-reads its aclTensors' addresses at every run", () => {
  withDevice((sim) => {
    const { nn, math, rt } = sim;
    const c = statsCall(sim, [3, 2, 4]);
    const before = sim.stats();
    const p = c.phase1();
    assert.equal(p.status, 0);
    assert.equal(nn.aclSetAclOpExecutorRepeatable(p.executor), 0);
    const ws = sim.malloc(Number(p.workspaceSize));
    const run = () => math.aclnnBatchNormStats(ws, p.workspaceSize, p.executor, null);
    try {
      assert.equal(run(), 0, "run 1");
      assert.equal(rt.aclrtSynchronizeStream(null), 0);
      assert.deepEqual(sim.download(c.meanMem, 2), c.channelMeans(c.values).map(Math.fround));

      // New input data at a new address, set through the aclTensor: the index is ignored.
      const values2 = c.values.map((v) => v * 2 + 1);
      const x2 = sim.malloc(values2.length * 4);
      sim.upload(x2, values2);
      assert.equal(nn.aclSetInputTensorAddr(p.executor, 99n, c.input, x2), 0, "any index");
      assert.equal(run(), 0, "run 2");
      assert.equal(rt.aclrtSynchronizeStream(null), 0);
      assert.deepEqual(sim.download(c.meanMem, 2), c.channelMeans(values2).map(Math.fround));
      // aclSetRawTensorAddr has the same effect on a composite executor.
      assert.equal(nn.aclSetRawTensorAddr(c.input, c.x), 0);
      assert.equal(run(), 0, "run 3");
      assert.equal(rt.aclrtSynchronizeStream(null), 0);
      assert.deepEqual(sim.download(c.meanMem, 2), c.channelMeans(c.values).map(Math.fround));
      assert.equal(sim.stats()[STAT.executors], before[STAT.executors] + 1, "it survives its runs");

      // Freed memory at relaunch: 161002 at the launch; the executor survives.
      assert.equal(nn.aclSetInputTensorAddr(p.executor, 0n, c.input, x2), 0);
      sim.free(x2);
      assert.equal(run(), 161002, "relaunch on freed memory");
      assert.match(sim.err()!, /input 'input'.*already freed/);
      // A host address: 161002 too.
      const host = new Float32Array(64);
      assert.equal(
        nn.aclSetInputTensorAddr(p.executor, 0n, c.input, Deno.UnsafePointer.of(host)),
        0,
      );
      assert.equal(run(), 161002, "relaunch on host memory");
      assert.match(sim.err()!, /not device memory/);
      // Freed after the launch: the recorded allocation id fails the synchronisation.
      const x3 = sim.malloc(values2.length * 4);
      assert.equal(nn.aclSetRawTensorAddr(c.input, x3), 0);
      assert.equal(run(), 0);
      sim.free(x3);
      assert.equal(rt.aclrtSynchronizeStream(null), 507000);
      assert.match(sim.err()!, /input 'input'/);
      assert.equal(nn.aclSetRawTensorAddr(c.input, c.x), 0);
      assert.equal(run(), 0, "usable again");
      assert.equal(rt.aclrtSynchronizeStream(null), 0);

      // workspaceSize > 0 with a NULL workspace: 161001, and even a repeatable one is deleted.
      assert.equal(math.aclnnBatchNormStats(null, p.workspaceSize, p.executor, null), 161001);
      assert.match(sim.err()!, /workspace is nullptr/);
      assert.equal(sim.stats()[STAT.executors], before[STAT.executors], "deleted");
      assert.equal(nn.aclDestroyAclOpExecutor(p.executor), 561000, "no longer a live executor");
      assert.match(sim.err()!, /NULL workspace/);
    } finally {
      sim.free(ws);
      c.dispose();
    }
  });
});

Deno.test("executor: an executor that outlives its aclTensor is refused at relaunch (561103)", () => {
  withDevice((sim) => {
    const { nn, math } = sim;
    const c = statsCall(sim, [2, 5, 2]);
    const alias = sim.tensor([2, 5, 2], c.x);
    const ws = sim.malloc(4096);
    try {
      const p = sim.statsPhase1(alias, c.mean, c.invstd);
      assert.equal(nn.aclSetAclOpExecutorRepeatable(p.executor), 0);
      assert.equal(math.aclnnBatchNormStats(ws, p.workspaceSize, p.executor, null), 0);
      assert.equal(nn.aclDestroyTensor(alias), 0);
      assert.equal(math.aclnnBatchNormStats(ws, p.workspaceSize, p.executor, null), 561103);
      assert.match(sim.err()!, /outlived its tensor/);
      assert.equal(nn.aclDestroyAclOpExecutor(p.executor), 0, "still destroyable");
      assert.equal(sim.rt.aclrtSynchronizeStream(null), 0);
    } finally {
      sim.free(ws);
      c.dispose();
    }
  });
});

// ---- the library against these rules ------------------------------------------------------------

Deno.test("library: repeated calls reuse a repeatable executor with refreshed addresses", () => {
  const before = simStats();
  const npu = openSim();
  const shape = [4, 3, 6];
  const mean = Tensor.random([3], { seed: 3 });
  const invstd = Tensor.random([3], { seed: 4, low: 0.5, high: 2 });
  for (let i = 0; i < 5; i++) {
    const x = Tensor.random(shape, { seed: 10 + i, low: -1, high: 3 });
    const dy = Tensor.random(shape, { seed: 20 + i });
    const want = batchNormReduceBackward({ gradOut: dy, input: x, mean, invstd });
    const got = batchNormReduceBackward({
      gradOut: dy.to(npu),
      input: x.to(npu),
      mean: mean.to(npu),
      invstd: invstd.to(npu),
    });
    for (const k of ["sumDy", "sumDyXmu", "gradWeight", "gradBias"] as const) {
      const g = got[k]!.toFloat64Array();
      want[k]!.toFloat64Array().forEach((w, j) =>
        assert.ok(Math.abs(g[j] - w) <= 1e-4 * (1 + Math.abs(w)), `call ${i} ${k}[${j}]`)
      );
      got[k]!.dispose();
    }
  }
  npu.synchronize();
  assert.equal(simStats().executors, before.executors + 1, "one repeatable executor, kept");
  npu.close();
  assert.deepEqual(liveDelta(before, simStats()), {});
});

Deno.test("library: falls back when CANN refuses a repeatable executor (561000)", async () => {
  await child("library-fallback");
});

// ---- performance of the simulator itself ---------------------------------------------------------

Deno.test("simulator: device-address lookups cost O(log n) in the live allocations", () => {
  withDevice((sim) => {
    // Counts the entries the registries' searches compare (not time, which this shared VM
    // makes flaky): a binary search over n entries compares at most ceil(log2(n + 1)).
    const probesPerCall = (ptrs: Deno.PointerValue[]) => {
      const calls = 800;
      const before = sim.core.symbols.sim_registry_probes();
      for (let k = 0; k < calls; k++) sim.rt.aclrtMemset(ptrs[k % ptrs.length], 4n, 0, 4n);
      return Number(sim.core.symbols.sim_registry_probes() - before) / calls;
    };
    const ptrs = Array.from({ length: 720 }, () => sim.malloc(256));
    try {
      for (let k = 0; k < ptrs.length; k++) {
        const id = sim.core.symbols.sim_dev_range_alloc(offset(ptrs[k], 8), 8n);
        assert.ok(id > 0n, `lookup ${k}`);
      }
      const many = probesPerCall(ptrs);
      for (const p of ptrs.splice(10)) sim.free(p);
      const few = probesPerCall(ptrs);
      // One aclrtMemset searches the registry a few times; a linear scan of 720 live
      // allocations would compare hundreds of entries per search.
      const perSearch = Math.ceil(Math.log2(720 + 1 + 16)); // + the host registry's few entries
      assert.ok(few > 0, "the searches are counted");
      assert.ok(
        many <= 4 * perSearch && many < few * (perSearch / 2),
        `${many} entries compared per call with 720 live allocations, ${few} with 10`,
      );
    } finally {
      for (const p of ptrs) sim.free(p);
    }
  });
});
