/**
 * The modules' lifecycle: a backward needs its forward (never CANN's mean 0 / invstd 1), one
 * backward per forward, loadStateDict ends the pending forward, a refused gradOut leaves the
 * forward for a corrected call, dispose frees everything and later calls fail, options are
 * checked at construction (an unknown option is refused, naming the closest one); and memory: a forward inside `tidy` keeps what its backward needs,
 * and a training loop keeps a flat number of live device buffers (the previous step's saved
 * statistics are freed).
 */

import assert from "node:assert/strict";
import { BatchNorm, GroupNorm, LayerNorm, RMSNorm, SyncBatchNorm } from "../../src/nn/mod.ts";
import type { AscendDevice } from "../../src/ffi/runtime.ts";
import { createLocalProcessGroup } from "../../src/distributed/local_process_group.ts";
import type { Device } from "../../src/tensor/device.ts";
import { tidy } from "../../src/tensor/scope.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError } from "../helpers/assert.ts";
import { forEachBackend, on } from "../helpers/backends.ts";

const INVALID = 161002;

/** One (async) face of the three modules for these tests. */
interface Subject {
  readonly name: string;
  forward(x: Tensor): Promise<Tensor>;
  backward(dy: Tensor): Promise<{ gradInput: Tensor } & Disposable>;
  loadStateDict(d: Record<string, Tensor>): unknown;
  stateDict(): Record<string, Tensor>;
  dispose(): void;
}

/** `f()` as a promise: a throw becomes a rejection, as in the async SyncBatchNorm. */
function later<T>(f: () => T): Promise<T> {
  return new Promise((resolve) => resolve(f()));
}

function subjects(device: Device): Subject[] {
  const bn = new BatchNorm({ numFeatures: 3, device });
  const gn = new GroupNorm({ numGroups: 1, numChannels: 3, device });
  const [group] = createLocalProcessGroup(1);
  const sbn = new SyncBatchNorm({ numFeatures: 3, device, processGroup: group });
  return [
    {
      name: "BatchNorm",
      forward: (x) => later(() => bn.forward(x)),
      backward: (dy) => later(() => bn.backward(dy)),
      loadStateDict: (d) => bn.loadStateDict(d),
      stateDict: () => bn.stateDict(),
      dispose: () => bn.dispose(),
    },
    {
      name: "GroupNorm",
      forward: (x) => later(() => gn.forward(x)),
      backward: (dy) => later(() => gn.backward(dy)),
      loadStateDict: (d) => gn.loadStateDict(d),
      stateDict: () => gn.stateDict(),
      dispose: () => gn.dispose(),
    },
    {
      name: "SyncBatchNorm",
      forward: (x) => sbn.forward(x),
      backward: (dy) => sbn.backward(dy),
      loadStateDict: (d) => sbn.loadStateDict(d),
      stateDict: () => sbn.stateDict(),
      dispose: () => sbn.dispose(),
    },
  ];
}

/** Asserts that the promise rejects with AclnnError `code` naming `argument`; returns its message. */
async function rejects(p: Promise<unknown>, code: number, argument: string): Promise<string> {
  try {
    await p;
  } catch (e) {
    return assertAclnnError(
      () => {
        throw e;
      },
      code,
      argument,
    ).message;
  }
  assert.fail(`expected AclnnError ${code} on ${argument}, nothing was thrown`);
}

forEachBackend("modules: backward needs its forward, once; loadStateDict ends it", async (ctx) => {
  const x = on(Tensor.random([4, 3, 5], { seed: 1 }), ctx.device);
  const dy = on(Tensor.random([4, 3, 5], { seed: 2 }), ctx.device);
  for (const m of subjects(ctx.device)) {
    const never = await rejects(m.backward(dy), INVALID, "forward");
    assert.match(never, new RegExp(`^${m.name}\\.backward: backward needs a forward first`));
    assert.match(never, /never runs backward without its forward's statistics/);

    (await m.forward(x)).dispose();
    // A gradOut the operator refuses leaves the forward for a corrected call.
    const wrong = on(Tensor.random([4, 3, 6], { seed: 3 }), ctx.device);
    const bad = await rejects(m.backward(wrong), INVALID, "gradOut");
    assert.match(bad, /shape \[4, 3, 6\] must equal the forward's input shape \[4, 3, 5\]/);
    (await m.backward(dy))[Symbol.dispose]();
    const used = await rejects(m.backward(dy), INVALID, "forward");
    assert.match(used, /already used by a backward/);

    (await m.forward(x)).dispose();
    const dict = m.stateDict();
    m.loadStateDict(dict);
    const reset = await rejects(m.backward(dy), INVALID, "forward");
    assert.match(reset, /loadStateDict replaced the module's state/);

    m.dispose();
    m.dispose(); // idempotent
    const gone = await rejects(m.forward(x), INVALID, "module");
    assert.match(gone, /the module was disposed/);
    await rejects(m.backward(dy), INVALID, "module");
    assert.throws(() => m.stateDict(), /the module was disposed/);
  }
});

Deno.test("modules: constructor options are checked, naming the option", () => {
  const bad: [Record<string, unknown>, number, string][] = [
    [{}, INVALID, "numFeatures"],
    [{ numFeatures: 0 }, INVALID, "numFeatures"],
    [{ numFeatures: 2.5 }, INVALID, "numFeatures"],
    [{ numFeatures: 3, eps: 0 }, INVALID, "eps"],
    [{ numFeatures: 3, momentum: "0.1" }, INVALID, "momentum"],
    [{ numFeatures: 3, momentum: Infinity }, INVALID, "momentum"],
    [{ numFeatures: 3, affine: "yes" }, INVALID, "affine"],
    [{ numFeatures: 3, trackRunningStats: 1 }, INVALID, "trackRunningStats"],
    [{ numFeatures: 3, dtype: "int32" }, INVALID, "dtype"],
    [{ numFeatures: 3, device: "gpu" }, INVALID, "device"],
  ];
  for (const [options, code, argument] of bad) {
    const e = assertAclnnError(
      () => new BatchNorm(options as unknown as { numFeatures: number }),
      code,
      argument,
    );
    assert.match(e.message, /^BatchNorm: /);
  }
  assertAclnnError(
    () => new BatchNorm(undefined as unknown as { numFeatures: number }),
    161001,
    "args",
  );
  assertAclnnError(
    () =>
      new SyncBatchNorm({
        numFeatures: 3,
        processGroup: {} as unknown as ReturnType<typeof createLocalProcessGroup>[0],
      }),
    INVALID,
    "processGroup",
  );
  const [group] = createLocalProcessGroup(1);
  assertAclnnError(
    () => new SyncBatchNorm({ numFeatures: 3, processGroup: group, timeoutMs: 0 }),
    INVALID,
    "timeoutMs",
  );
});

Deno.test("modules: an unknown option is refused, naming the closest valid one", () => {
  const e = assertAclnnError(
    () => new LayerNorm({ normalizedShape: 4, epsilon: 1 } as never),
    INVALID,
    "epsilon",
  );
  assert.equal(
    e.message,
    'unknown option "epsilon" for LayerNorm; did you mean "eps"? (its options: ' +
      "normalizedShape, eps, elementwiseAffine, bias, device, dtype) " +
      "[ACLNN_ERR_PARAM_INVALID 161002]",
  );
  const [group] = createLocalProcessGroup(1);
  const cases: [() => unknown, string, string][] = [
    [() => new RMSNorm({ normalizedShape: 4, epsilon: 1e-6 } as never), "RMSNorm", "eps"],
    [
      () => new BatchNorm({ numFeatures: 3, track_running_stats: false } as never),
      "BatchNorm",
      "trackRunningStats",
    ],
    [
      () => new GroupNorm({ numGroups: 1, numChannels: 3, num_groups: 1 } as never),
      "GroupNorm",
      "numGroups",
    ],
    [
      () => new SyncBatchNorm({ numFeatures: 3, processGroup: group, timeout: 5 } as never),
      "SyncBatchNorm",
      "timeoutMs",
    ],
  ];
  for (const [make, name, closest] of cases) {
    const e = assertAclnnError(make, INVALID);
    assert.match(
      e.message,
      new RegExp(`^unknown option "${e.argument}" for ${name}; did you mean "${closest}"\\?`),
    );
  }
  // The valid names still construct; SyncBatchNorm's own two are options too.
  using _ = new SyncBatchNorm({ numFeatures: 3, processGroup: group, timeoutMs: 5 });
  using bn = new BatchNorm({ numFeatures: 3 });
  assertAclnnError(
    () => bn.loadStateDict(bn.stateDict(), { strcit: false } as never),
    INVALID,
    "strcit",
  );
  // eps is used, not ignored: LayerNorm's rstd with eps 1 over [1, 2, 3, 4] is 1/sqrt(2.25).
  using ln = new LayerNorm({ normalizedShape: 4, eps: 1 });
  using y = ln.forward(Tensor.fromArray([1, 2, 3, 4], [1, 4]));
  assert.equal(y.toArray()[0], Math.fround(-1.5 / 1.5));
});

Deno.test("SyncBatchNorm: calls on one module must not overlap", async () => {
  const [group] = createLocalProcessGroup(1);
  using m = new SyncBatchNorm({ numFeatures: 3, processGroup: group });
  const x = Tensor.random([4, 3, 5], { seed: 1 });
  const first = m.forward(x);
  const msg = await rejects(m.forward(x), INVALID, "module");
  assert.match(msg, /module is still running SyncBatchNorm\.forward: await it first/);
  (await first).dispose();
  (await m.forward(x)).dispose(); // free again once it settled
});

forEachBackend("modules: a forward inside tidy keeps what its backward needs", async (ctx) => {
  if (ctx.device === "cpu") return; // tidy frees device memory only
  const x = on(Tensor.random([4, 3, 5], { seed: 1 }), ctx.device);
  const dy = on(Tensor.random([4, 3, 5], { seed: 2 }), ctx.device);
  // Modules made inside a scope keep their parameters too.
  const made = tidy(() => subjects(ctx.device));
  for (const m of made) {
    await tidy(async () => {
      (await m.forward(x)).dispose();
    });
    using grads = await m.backward(dy);
    assert.equal(grads.gradInput.toFloat64Array().every(Number.isFinite), true, m.name);
    m.dispose();
  }
});

forEachBackend("modules: a training loop keeps live device buffers flat", async (ctx) => {
  if (ctx.device === "cpu") return;
  const device = ctx.device as AscendDevice;
  const x = on(Tensor.random([4, 3, 5], { seed: 1 }), device);
  const dy = on(Tensor.random([4, 3, 5], { seed: 2 }), device);
  for (const m of subjects(device)) {
    const live: number[] = [];
    for (let step = 0; step < 6; step++) {
      (await m.forward(x)).dispose();
      if (step % 2 === 0) (await m.backward(dy))[Symbol.dispose]();
      device.synchronize(); // buffers released under queued work go at the synchronisation
      live.push(device.memory().liveBuffers);
    }
    // Steps without a backward keep one forward's statistics; the next forward frees them.
    assert.deepEqual(live.slice(2), [live[0], live[1], live[0], live[1]], `${m.name}: ${live}`);
    const before = device.memory().liveBuffers;
    m.dispose();
    device.synchronize();
    assert.ok(device.memory().liveBuffers < before, `${m.name}: dispose frees its tensors`);
  }
});
