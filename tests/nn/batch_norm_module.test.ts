/**
 * The BatchNorm module against the float64 oracle (tests/oracle/), on every backend: ranks 2-8,
 * float32/float16/bfloat16, contiguous, channels-last and strided inputs, training steps with
 * momentum 0.1 and null (running statistics, numBatchesTracked), eval mode (the running
 * statistics and the inference-mode gradient), trackRunningStats false and affine false; and
 * the rules PyTorch users rely on: the cumulative average of momentum null, the mode of the
 * forward (not the current one) choosing the backward's statistics, batch counts only for
 * forwards that ran.
 */

import assert from "node:assert/strict";
import { BatchNorm } from "../../src/nn/mod.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import type { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { chipAccepts, forEachBackend, on } from "../helpers/backends.ts";
import { TOLERANCE, toleranceFor } from "../helpers/tolerance.ts";
import { batchNorm64, batchNormBackward64, batchStats64 } from "../oracle/mod.ts";
import { data, type LayoutName, LAYOUTS, RANK_SHAPES } from "./module_inputs.ts";

const DTYPES: readonly DType[] = ["float32", "float16", "bfloat16"];

/** Values of an optional tensor. */
function values(t: Tensor | null): Float64Array | undefined {
  return t ? t.toFloat64Array() : undefined;
}

/**
 * One forward + backward of `bn` against the oracle fed the module's state before the step.
 * Returns the oracle's batch mean (training) for further checks.
 */
function checkStep(where: string, bn: BatchNorm, x: Tensor, dy: Tensor): void {
  const before = {
    weight: values(bn.weight),
    bias: values(bn.bias),
    runningMean: values(bn.runningMean),
    runningVar: values(bn.runningVar),
  };
  const count = bn.numBatchesTracked;
  const batch = bn.training || !bn.trackRunningStats;
  const update = bn.training && bn.trackRunningStats;
  const momentum = bn.momentum ?? 1 / ((count ?? 0) + 1);
  const xv = x.toFloat64Array();
  const e = batchNorm64({
    x: xv,
    shape: x.shape,
    ...before,
    runningMean: batch && !update ? undefined : before.runningMean,
    runningVar: batch && !update ? undefined : before.runningVar,
    training: batch,
    momentum,
    eps: bn.eps,
  });
  using y = bn.forward(x);
  const tol = toleranceFor(x.dtype);
  assertClose(y, e.output, tol, `${where} output`);
  if (update) {
    assertClose(bn.runningMean, e.runningMean!, toleranceFor(bn.dtype), `${where} runningMean`);
    assertClose(bn.runningVar, e.runningVar!, toleranceFor(bn.dtype), `${where} runningVar`);
    assert.equal(bn.numBatchesTracked, count! + 1, `${where} numBatchesTracked`);
  } else {
    assert.equal(bn.numBatchesTracked, count, `${where}: no batch counted`);
  }
  using grads = bn.backward(dy);
  const g = batchNormBackward64({
    dy: dy.toFloat64Array(),
    x: xv,
    shape: x.shape,
    weight: before.weight,
    runningMean: before.runningMean,
    runningVar: before.runningVar,
    saveMean: e.saveMean,
    saveInvstd: e.saveInvstd,
    training: batch,
    eps: bn.eps,
  });
  assertClose(grads.gradInput, g.gradInput, tol, `${where} gradInput`);
  assert.deepEqual(grads.gradInput.shape, x.shape);
  if (bn.affine) {
    assertClose(grads.gradWeight, g.gradWeight, toleranceFor(bn.dtype), `${where} gradWeight`);
    assertClose(grads.gradBias, g.gradBias, toleranceFor(bn.dtype), `${where} gradBias`);
  } else {
    assert.equal(grads.gradWeight, null);
    assert.equal(grads.gradBias, null);
  }
}

function sweep(
  device: Tensor["device"],
  dtype: DType,
  layout: LayoutName,
  shape: readonly number[],
  momentum: number | null,
): void {
  const where = `${shape} ${dtype} ${layout} momentum ${momentum}`;
  using bn = new BatchNorm({ numFeatures: shape[1], momentum, dtype, device, eps: 1e-3 });
  // A weight and bias away from 1 and 0, so the affine terms are checked.
  bn.weight!.copy_([0.5, -1.25, 2]);
  bn.bias!.copy_([0.25, 0, -0.75]);
  for (let step = 0; step < 2; step++) {
    const x = on(data(shape, 10 + step, dtype, layout), device);
    const dy = on(data(shape, 20 + step, dtype, layout, -1, 1), device);
    checkStep(`${where} step ${step}`, bn, x, dy);
  }
  bn.eval();
  const x = on(data(shape, 30, dtype, layout), device);
  const dy = on(data(shape, 31, dtype, layout, -1, 1), device);
  checkStep(`${where} eval`, bn, x, dy);
}

forEachBackend("BatchNorm module: ranks 2-8, dtypes, layouts against the oracle", (ctx) => {
  for (const dtype of DTYPES) {
    if (!chipAccepts(ctx.soc, "aclnnBatchNorm", [dtype])) continue;
    if (!chipAccepts(ctx.soc, "aclnnBatchNormBackward", [dtype])) continue;
    RANK_SHAPES.forEach((shape, i) => {
      const layout = LAYOUTS[i % LAYOUTS.length];
      sweep(ctx.device, dtype, layout, shape, i % 2 === 0 ? 0.1 : null);
    });
  }
});

forEachBackend("BatchNorm module: trackRunningStats false and affine false", (ctx) => {
  for (const [affine, trackRunningStats] of [[false, true], [true, false], [false, false]]) {
    using bn = new BatchNorm({ numFeatures: 3, affine, trackRunningStats, device: ctx.device });
    assert.equal(bn.weight === null, !affine);
    assert.equal(bn.runningMean === null, !trackRunningStats);
    assert.equal(bn.numBatchesTracked === null, !trackRunningStats);
    const shape = [4, 3, 5];
    for (const training of [true, false]) {
      bn.train(training);
      const x = on(data(shape, 40, "float32", "contiguous"), ctx.device);
      const dy = on(data(shape, 41, "float32", "contiguous", -1, 1), ctx.device);
      checkStep(`affine ${affine} track ${trackRunningStats} training ${training}`, bn, x, dy);
    }
  }
});

forEachBackend("BatchNorm module: float16 data through a float32 module", (ctx) => {
  if (!chipAccepts(ctx.soc, "aclnnBatchNorm", ["float16"])) return;
  using bn = new BatchNorm({ numFeatures: 3, device: ctx.device });
  const shape = [4, 3, 2, 3];
  for (const training of [true, true, false]) {
    bn.train(training);
    const x = on(data(shape, 50, "float16", "channels-last"), ctx.device);
    const dy = on(data(shape, 51, "float16", "channels-last", -1, 1), ctx.device);
    checkStep(`float16 data, training ${training}`, bn, x, dy);
  }
});

Deno.test("BatchNorm module: momentum null is the cumulative average of the batch statistics", () => {
  using bn = new BatchNorm({ numFeatures: 3, momentum: null });
  const shape = [5, 3, 4];
  const means: Float64Array[] = [];
  const unbiased: Float64Array[] = [];
  for (let step = 0; step < 4; step++) {
    const x = data(shape, 60 + step, "float32", "contiguous");
    const s = batchStats64(x.toFloat64Array(), shape);
    means.push(s.mean);
    unbiased.push(s.variance.map((v) => v * 20 / 19)); // M = 20 values per channel
    bn.forward(x).dispose();
    const k = step + 1;
    const average = (list: Float64Array[]) =>
      new Float64Array(3).map((_, c) => list.reduce((a, v) => a + v[c], 0) / k);
    assertClose(bn.runningMean, average(means), TOLERANCE.float32, `running mean after ${k}`);
    assertClose(bn.runningVar, average(unbiased), TOLERANCE.float32, `running var after ${k}`);
    assert.equal(bn.numBatchesTracked, k);
  }
});

Deno.test("BatchNorm module: the backward follows the forward's mode, not the current one", () => {
  const shape = [4, 3, 5];
  const x = data(shape, 70, "float32", "contiguous");
  const dy = data(shape, 71, "float32", "contiguous", -1, 1);
  using a = new BatchNorm({ numFeatures: 3 });
  using b = new BatchNorm({ numFeatures: 3 });
  a.forward(x).dispose();
  a.eval(); // after the forward: the backward still goes through the batch statistics
  b.forward(x).dispose();
  using ga = a.backward(dy);
  using gb = b.backward(dy);
  assertClose(ga.gradInput, gb.gradInput, TOLERANCE.float32, "gradInput");
  // And the training gradient is not the eval one.
  a.forward(x).dispose();
  using ge = a.backward(dy);
  assert.ok(
    Math.abs(ge.gradInput.toFloat64Array()[0] - ga.gradInput.toFloat64Array()[0]) > 1e-3,
  );
});

Deno.test("BatchNorm module: a refused forward counts no batch and changes nothing", () => {
  using bn = new BatchNorm({ numFeatures: 3 });
  bn.forward(data([4, 3, 2], 80, "float32", "contiguous")).dispose();
  const state = [bn.runningMean!.toArray(), bn.runningVar!.toArray()];
  // One value per channel in training: the operator refuses (as PyTorch does).
  assertAclnnError(() => bn.forward(data([1, 3], 81, "float32", "contiguous")), 161002, "input");
  assertAclnnError(() => bn.forward(data([2, 4, 3], 82, "float32", "contiguous")), 161002, "input");
  assert.equal(bn.numBatchesTracked, 1);
  assert.deepEqual([bn.runningMean!.toArray(), bn.runningVar!.toArray()], state);
  // The first forward's statistics are still there for its backward.
  using grads = bn.backward(data([4, 3, 2], 83, "float32", "contiguous"));
  assert.deepEqual(grads.gradInput.shape, [4, 3, 2]);
});

Deno.test("BatchNorm module: resetRunningStats, train(false), the options as given", () => {
  using bn = new BatchNorm({ numFeatures: 2, eps: 1e-3, momentum: 0.25, dtype: "bfloat16" });
  assert.deepEqual(
    [bn.numFeatures, bn.eps, bn.momentum, bn.affine, bn.trackRunningStats, bn.dtype, bn.device],
    [2, 1e-3, 0.25, true, true, "bfloat16", "cpu"],
  );
  assert.deepEqual(
    [bn.weight!.toArray(), bn.bias!.toArray(), bn.runningMean!.toArray(), bn.runningVar!.toArray()],
    [[1, 1], [0, 0], [0, 0], [1, 1]],
  );
  assert.equal(bn.training, true);
  assert.equal(bn.train(false).training, false);
  assert.equal(bn.train().training, true);
  bn.forward(data([3, 2, 2], 90, "bfloat16", "contiguous")).dispose();
  assert.notDeepEqual(bn.runningMean!.toArray(), [0, 0]);
  bn.resetRunningStats();
  assert.deepEqual([bn.runningMean!.toArray(), bn.runningVar!.toArray()], [[0, 0], [1, 1]]);
  assert.equal(bn.numBatchesTracked, 0);
});
