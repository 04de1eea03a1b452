/**
 * BatchNorm, GroupNorm and InstanceNorm against torch.nn (the committed fixture of
 * tests/nn/make_torch_fixtures.py): each case's training steps with SGD updates (outputs,
 * gradients, updated parameters, running statistics, numBatchesTracked), eval mode, the state
 * dict, and a fresh module that loads it (eval, and a training step where the case has one), on
 * every backend, with contiguous and channels-last inputs.
 */

import assert from "node:assert/strict";
import { BatchNorm, GroupNorm, InstanceNorm, type StateDict } from "../../src/nn/mod.ts";
import type { Device } from "../../src/tensor/device.ts";
import { assertClose } from "../helpers/assert.ts";
import { forEachBackend } from "../helpers/backends.ts";
import { PYTORCH_FLOAT32 } from "../helpers/tolerance.ts";
import {
  BATCH_NORM_CASES,
  CHANNELS_LAST,
  checkState,
  checkStep,
  CONTIGUOUS,
  GROUP_NORM_CASES,
  input,
  INSTANCE_NORM_CASES,
  type Layout,
  sgd,
  type TorchCase,
  type TorchStep,
} from "./torch_fixture.ts";

type Module = BatchNorm | GroupNorm | InstanceNorm;

function make(c: TorchCase, device: Device): Module {
  if (c.module === "InstanceNorm") {
    return new InstanceNorm({ ...c.options, device } as unknown as { numFeatures: number });
  }
  return c.module === "BatchNorm"
    ? new BatchNorm(
      { ...c.options, device } as unknown as ConstructorParameters<
        typeof BatchNorm
      >[0],
    )
    : new GroupNorm(
      { ...c.options, device } as unknown as ConstructorParameters<
        typeof GroupNorm
      >[0],
    );
}

/** One forward + backward as torch ran it; the SGD update in training mode. */
function replayStep(
  where: string,
  m: Module,
  c: TorchCase,
  step: TorchStep,
  layout: Layout,
  device: Device,
): void {
  const x = input(step.x, c.shape, layout, device);
  const dy = input(step.dy, c.shape, layout, device);
  using y = m.forward(x);
  assert.deepEqual(y.strides, x.strides, `${where}: the output keeps the input's layout`);
  using grads = m.backward(dy);
  checkStep(where, y, grads, step);
  if (m.training) sgd(m, grads, c.lr);
  checkState(where, m, step.after);
}

/** The state dict holds torch's keys, in torch's order, with torch's values. */
function checkStateDict(where: string, dict: StateDict, c: TorchCase): void {
  assert.deepEqual(Object.keys(dict), Object.keys(c.stateDict), `${where}: keys`);
  for (const [key, expected] of Object.entries(c.stateDict)) {
    if (typeof expected === "number") {
      assert.equal(dict[key].dtype, "int32", `${where}: ${key} dtype`);
      assert.deepEqual(dict[key].shape, [], `${where}: ${key} is a scalar`);
      assert.equal(dict[key].item(), expected, `${where}: ${key}`);
    } else {
      assertClose(dict[key], expected, PYTORCH_FLOAT32, `${where}: ${key}`);
    }
  }
}

function replay(c: TorchCase, layout: Layout, device: Device): void {
  using m = make(c, device);
  c.steps.forEach((step, i) => replayStep(`${c.name} step ${i}`, m, c, step, layout, device));
  m.eval();
  replayStep(`${c.name} eval`, m, c, c.eval, layout, device);
  const dict = m.stateDict();
  checkStateDict(c.name, dict, c);

  using fresh = make(c, device);
  assert.deepEqual(fresh.loadStateDict(dict), { missingKeys: [], unexpectedKeys: [] });
  for (const t of Object.values(dict)) t.dispose();
  fresh.eval();
  replayStep(`${c.name} loaded eval`, fresh, c, c.loaded.eval, layout, device);
  if (c.loaded.train) {
    fresh.train();
    replayStep(`${c.name} loaded, trained`, fresh, c, c.loaded.train, layout, device);
  }
}

for (const cases of [BATCH_NORM_CASES, GROUP_NORM_CASES, INSTANCE_NORM_CASES]) {
  for (const c of cases) {
    // aclnnInstanceNorm runs on the Atlas inference series only (and needs planes of 32 bytes,
    // which these small cases do not have): InstanceNorm is replayed on the CPU backend.
    const socs = c.module === "InstanceNorm" ? [] : undefined;
    forEachBackend(`torch.nn ${c.name}: training steps, eval, state-dict round trip`, (ctx) => {
      for (const layout of [CONTIGUOUS, CHANNELS_LAST]) {
        if (layout === CHANNELS_LAST && c.shape.length === 2) continue;
        replay(c, layout, ctx.device);
      }
    }, { socs });
  }
}

Deno.test("torch fixture: every case has steps, eval and a round trip, and covers the options", () => {
  assert.ok(BATCH_NORM_CASES.length >= 4 && GROUP_NORM_CASES.length >= 2);
  assert.ok(INSTANCE_NORM_CASES.length >= 3);
  const seen = new Set<string>();
  for (const c of [...BATCH_NORM_CASES, ...GROUP_NORM_CASES, ...INSTANCE_NORM_CASES]) {
    assert.ok(c.steps.length >= 2, c.name);
    const n = c.shape.reduce((a, b) => a * b, 1);
    for (const step of [...c.steps, c.eval, c.loaded.eval]) {
      for (const values of [step.x, step.dy, step.output, step.gradInput]) {
        assert.ok(Array.isArray(values) && values.length === n, `${c.name}: ${n} values`);
        assert.ok(values.every(Number.isFinite), `${c.name}: numbers`);
      }
    }
    seen.add(`rank ${c.shape.length}`);
    for (const [k, v] of Object.entries(c.options)) seen.add(`${k}=${v}`);
  }
  for (
    const want of [
      "rank 2",
      "rank 3",
      "rank 4",
      "rank 5",
      "momentum=null",
      "affine=false",
      "trackRunningStats=false",
    ]
  ) assert.ok(seen.has(want), `the fixture covers ${want}`);
});
