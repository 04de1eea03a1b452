/**
 * A module after a failed forward (issue 38): a forward that throws (not one its checks
 * refused, which ran nothing: tests/nn/batch_norm_module.test.ts), or whose kernels fail on
 * the NPU after it returned (a fault that surfaces when its output is read, AclError 507015 on
 * the software CANN), leaves nothing for a backward, which refuses with 161002 naming the
 * failed forward, and leaves the module's state as before it (BatchNorm's numBatchesTracked
 * and running statistics). The next forward works and its backward gives the CPU's values.
 * Work that finished before an unrelated fault is not affected.
 */

import assert from "node:assert/strict";
import { AclError, AclnnError } from "../../src/errors.ts";
import { BatchNorm, GroupNorm, LayerNorm, RMSNorm } from "../../src/nn/mod.ts";
import { batchNormStats } from "../../src/ops/batch_norm_stats.ts";
import type { Device } from "../../src/tensor/device.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { forEachBackend, on } from "../helpers/backends.ts";
import { betweenKernels, TOLERANCE } from "../helpers/tolerance.ts";
import { clearFaults, injectFault } from "../helpers/ffi_sim.ts";

const INVALID = 161002;
const SHAPE = [4, 3, 5];

/** The modules of the issue, one face for the tests. */
interface Subject {
  readonly name: string;
  readonly module: BatchNorm | GroupNorm | LayerNorm | RMSNorm;
  forward(x: Tensor): Tensor;
  backward(dy: Tensor): { gradInput: Tensor; gradWeight: Tensor | null } & Disposable;
}

function subjects(device: Device): Subject[] {
  const made = [
    new BatchNorm({ numFeatures: 3, device }),
    new GroupNorm({ numGroups: 3, numChannels: 3, device }),
    new LayerNorm({ normalizedShape: 5, device }),
    new RMSNorm({ normalizedShape: 5, device }),
  ];
  return made.map((m) => ({
    name: m.constructor.name,
    module: m,
    forward: (x) => m.forward(x),
    backward: (dy) => m.backward(dy),
  }));
}

/** The module's state dict as numbers (parameters, running statistics, batch count). */
function state(m: Subject["module"]): string {
  return JSON.stringify(m.stateDict(), (_, v) => v instanceof Tensor ? v.toArray() : v);
}

/** A backward that must be refused because the last forward failed with `failure`. */
function assertRefused(s: Subject, dy: Tensor, failure: RegExp): void {
  const e = assertAclnnError(() => s.backward(dy), INVALID, "forward");
  assert.match(e.message, new RegExp(`^${s.name}\\.backward: the last forward failed \\(`));
  assert.match(e.message, failure);
}

forEachBackend(
  "modules: a forward whose kernel fails on the NPU is refused by backward, its batch not counted",
  (ctx) => {
    const device = ctx.device;
    const host = { x: Tensor.random(SHAPE, { seed: 1 }), dy: Tensor.random(SHAPE, { seed: 2 }) };
    const x = on(host.x, device);
    const dy = on(host.dy, device);
    for (const s of subjects(device)) {
      // Warm: one training step (the batch counted once), so the calls are prepared.
      s.forward(x).dispose();
      s.backward(dy)[Symbol.dispose]();
      const before = state(s.module);
      try {
        // The forward's first launch fails at the next synchronisation: when its output is read
        // (or inside the forward, where the backend reads a result: Atlas A2's BatchNorm).
        injectFault("kernel");
        assert.throws(() => {
          using y = s.forward(x);
          y.toArray();
        }, (e) => e instanceof AclError && e.code === 507015);
      } finally {
        clearFaults();
      }
      // The batch count read first (it asks the device), then the whole state.
      if (s.module instanceof BatchNorm) assert.equal(s.module.numBatchesTracked, 1);
      assert.equal(state(s.module), before, `${s.name}: the failed batch is not counted`);
      const fault =
        /\(AclError 507015\)|its kernels failed on npu:0: the synchronisation returned 507015/;
      assertRefused(s, dy, fault);
      assertRefused(s, dy, fault); // still, until a forward

      // A forward that throws on the NPU: the stream refuses its launch (361001).
      try {
        injectFault("stream");
        assert.throws(() => s.forward(x), (e) => e instanceof AclnnError && e.code === 361001);
      } finally {
        clearFaults();
      }
      assert.equal(state(s.module), before, `${s.name}: unchanged after the thrown forward`);
      assertRefused(s, dy, /\(AclnnError 361001\)/);

      // The device and the module work again, and agree with the same module on the CPU.
      const cpu = subjects("cpu").find((c) => c.name === s.name)!;
      cpu.module.loadStateDict(s.module.stateDict());
      using y = s.forward(x);
      using want = cpu.forward(host.x);
      assertClose(y, want, undefined, `${s.name} output`);
      using g = s.backward(dy);
      using gw = cpu.backward(host.dy);
      assertClose(g.gradInput, gw.gradInput, undefined, `${s.name} gradInput`);
      assertClose(g.gradWeight, gw.gradWeight!, undefined, `${s.name} gradWeight`);
      // The same state after the step, within the two backends' roundings (the CPU's float32
      // sums and the simulator's float64 ones differ in the last bit of a running mean).
      const [npuState, cpuState] = [s.module.stateDict(), cpu.module.stateDict()];
      assert.deepEqual(Object.keys(npuState), Object.keys(cpuState));
      for (const key of Object.keys(cpuState)) {
        assertClose(
          npuState[key].toFloat64Array(),
          cpuState[key].toFloat64Array(),
          betweenKernels(TOLERANCE.float32),
          `${s.name}: ${key} after the step`,
        );
      }
      cpu.module.dispose();
      s.module.dispose();
    }
  },
  { cpu: false },
);

forEachBackend("modules: a fault after the forward's work finished does not touch it", (ctx) => {
  const x = on(Tensor.random(SHAPE, { seed: 1 }), ctx.device);
  const dy = on(Tensor.random(SHAPE, { seed: 2 }), ctx.device);
  using bn = new BatchNorm({ numFeatures: 3, device: ctx.device });
  using y = bn.forward(x);
  const output = y.toArray(); // synchronised: the forward's work is done
  assert.ok(output.every(Number.isFinite));
  try {
    injectFault("kernel");
    const other = batchNormStats({ input: x });
    assert.throws(() => other.mean.toArray(), (e) => e instanceof AclError && e.code === 507015);
    other[Symbol.dispose]();
  } finally {
    clearFaults();
  }
  assert.equal(bn.numBatchesTracked, 1);
  using g = bn.backward(dy);
  assert.ok(g.gradInput.toArray().every(Number.isFinite));
}, { cpu: false });
