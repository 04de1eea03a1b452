/**
 * Deferred device errors (issue 38 B6): a kernel that fails on the device does so after its
 * call returned, and the stream reports it at the next synchronisation, whoever makes it.
 * - That error names the call that failed (operator and call number on the device) and the
 *   switch that reports it at that call, ASCEND_LAUNCH_BLOCKING=1.
 * - With the switch (read when the device opens, through the environment access that never
 *   prompts) every call waits for its work: its failure is thrown by the call itself.
 * - A launch refused because the stream already failed (361001) drains the stream and gives
 *   that earlier failure as its cause: the next call starts clean.
 * Faults are injected in the software CANN (tests/sim/sim_fault.c). Needs the built simulator.
 *
 * @module
 */

import assert from "node:assert/strict";
import { AclError, AclnnError } from "../../src/errors.ts";
import type { AscendDevice } from "../../src/ffi/runtime.ts";
import { batchNormStats } from "../../src/ops/batch_norm_stats.ts";
import { layerNorm } from "../../src/ops/layer_norm.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { openAscend } from "../../src/ffi/runtime.ts";
import {
  clearFaults,
  injectFault,
  liveDelta,
  openSim,
  SIM_DIR,
  simEnv,
  simStats,
} from "../helpers/ffi_sim.ts";

/** The error `fn` throws (fails the test when it throws none). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  assert.fail("expected an error");
}

/** Runs `fn` with ASCEND_LAUNCH_BLOCKING set to `value` (unset when undefined), then restores it. */
function withBlocking<T>(value: string | undefined, fn: () => T): T {
  const saved = Deno.env.get("ASCEND_LAUNCH_BLOCKING");
  if (value === undefined) Deno.env.delete("ASCEND_LAUNCH_BLOCKING");
  else Deno.env.set("ASCEND_LAUNCH_BLOCKING", value);
  try {
    return fn();
  } finally {
    clearFaults();
    if (saved === undefined) Deno.env.delete("ASCEND_LAUNCH_BLOCKING");
    else Deno.env.set("ASCEND_LAUNCH_BLOCKING", saved);
  }
}

function problem(npu: AscendDevice) {
  const host = Tensor.random([4, 6], { seed: 21 });
  return { host, x: host.to(npu), other: Tensor.fromArray([1, 2, 3], [3]).to(npu) };
}

Deno.test("deferred errors: a later synchronisation names the call that failed and ASCEND_LAUNCH_BLOCKING", () => {
  withBlocking(undefined, () => {
    using npu = openSim();
    const { x, other } = problem(npu);
    npu.synchronize();
    // Three calls queued; the kernel of the 2nd (the LayerNorm) fails when the stream runs it.
    injectFault("kernel", { nth: 2 });
    const first = npu.memory().queuedLaunches;
    batchNormStats({ input: x });
    const ln = layerNorm({ input: x, normalizedShape: [6] });
    batchNormStats({ input: x });
    assert.equal(npu.memory().queuedLaunches, first + 3, "the failing call returned");
    // Reading an unrelated tensor synchronises, and reports it.
    const e = thrown(() => other.toArray());
    assert.ok(e instanceof AclError, String(e));
    assert.equal(e.code, 507015);
    assert.doesNotMatch(e.message, /\n/, "one line");
    assert.match(e.message, /^aclnnLayerNorm\w* \(call #\d+\) failed on npu:0 after it returned/);
    assert.match(e.message, /Kernel task happen error/);
    assert.match(e.message, /set ASCEND_LAUNCH_BLOCKING=1 to see it at the call that failed/);
    // The call number is the LayerNorm's: the stats call after it is the next one.
    const n = Number(e.message.match(/call #(\d+)/)![1]);
    const again = thrown(() => {
      injectFault("kernel");
      batchNormStats({ input: x });
      npu.synchronize();
    }) as AclError;
    assert.match(again.message, new RegExp(`^aclnnBatchNormStats \\(call #${n + 2}\\) failed`));
    assert.deepEqual(other.toArray(), [1, 2, 3], "the device works");
    ln.output.dispose();
  });
});

Deno.test("deferred errors: ASCEND_LAUNCH_BLOCKING=1 makes the failing call throw its own error", () => {
  withBlocking("1", () => {
    using npu = openSim();
    const { host, x, other } = problem(npu);
    injectFault("kernel");
    const e = thrown(() => layerNorm({ input: x, normalizedShape: [6] }));
    assert.ok(e instanceof AclError, String(e));
    assert.equal(e.code, 507015);
    assert.match(e.message, /^aclnnLayerNorm\w* \(call #\d+\) failed on npu:0: /);
    assert.doesNotMatch(e.message, /ASCEND_LAUNCH_BLOCKING/, "the switch is on already");
    assert.doesNotMatch(e.message, /\n/);
    // Nothing is left pending: the unrelated read and the same call work.
    assert.deepEqual(other.toArray(), [1, 2, 3]);
    const got = layerNorm({ input: x, normalizedShape: [6] });
    assert.equal(npu.memory().queuedLaunches, 0, "each call waited for its work");
    assertClose(got.output, layerNorm({ input: host, normalizedShape: [6] }).output);
  });
  // The option wins over the environment.
  withBlocking("1", () => {
    simEnv();
    using lazy = openAscend({ libDir: SIM_DIR, launchBlocking: false });
    const y = Tensor.random([4, 6], { seed: 3, device: lazy });
    injectFault("kernel");
    layerNorm({ input: y, normalizedShape: [6] }); // returns: the failure is deferred
    assert.equal(lazy.memory().queuedLaunches, 1);
    assert.throws(() => lazy.synchronize(), (err: AclError) => err.code === 507015);
  });
});

Deno.test("deferred errors: a launch refused by a failed stream (361001) carries that failure as its cause", () => {
  withBlocking(undefined, () => {
    using npu = openSim();
    const { host, x, other } = problem(npu);
    // Warm: the prepared calls and the workspace exist before the counters are read.
    layerNorm({ input: x, normalizedShape: [6] })[Symbol.dispose]();
    batchNormStats({ input: x })[Symbol.dispose]();
    npu.emptyCache();
    const before = simStats();
    // The LayerNorm's kernel fails on the device; the next launch is refused by the stream.
    injectFault("kernel");
    const ln = layerNorm({ input: x, normalizedShape: [6] });
    injectFault("stream");
    const e = thrown(() => batchNormStats({ input: x }));
    assert.ok(e instanceof AclnnError, String(e));
    assert.equal(e.code, 361001);
    assert.doesNotMatch(e.message, /\n/);
    assert.match(e.message, /^aclnnBatchNormStats failed: .*abort state/);
    assert.match(
      e.message,
      /work queued before it had failed \(the cause\): aclnnLayerNorm\w* \(call #\d+\)/,
    );
    const cause = e.cause;
    assert.ok(cause instanceof AclError, String(cause));
    assert.equal(cause.code, 507015);
    assert.match(cause.message, /^aclnnLayerNorm\w* \(call #\d+\) failed on npu:0/);
    // The next call, and an unrelated read, start clean.
    npu.synchronize();
    assert.deepEqual(other.toArray(), [1, 2, 3]);
    const stats = batchNormStats({ input: x });
    assertClose(stats.mean, batchNormStats({ input: host }).mean);
    ln[Symbol.dispose]();
    stats[Symbol.dispose]();
    npu.emptyCache();
    assert.deepEqual(liveDelta(before, simStats()), {}, "nothing of the failed calls is left");
  });
});
