/**
 * Conformance of batchNormBackward (aclnnBatchNormBackward, aten native_batch_norm_backward)
 * with peers' cases, training and evaluation mode, against the float64 oracle (tests/oracle/,
 * itself checked against finite differences of a float64 forward), on every backend.
 *
 * @module
 */

import assert from "node:assert/strict";
import { batchNormBackward, Tensor } from "../../mod.ts";
import type { Device } from "../../src/tensor/device.ts";
import {
  BN_BACKWARD_CASES,
  bnBackwardInputs,
  bnBackwardSeed,
  type BnCase,
} from "../fixtures/conformance/batch_norm_backward.ts";
import { forEachBackend } from "../helpers/backends.ts";
import { invariantTolerance } from "../helpers/tolerance.ts";
import {
  batchNormBackward64,
  batchNormBackwardAt64,
  batchStats64,
  invstdOf,
} from "../oracle/mod.ts";
import { expectClose, f64, fromValues, on, onOpt, runAll, uniform } from "./common.ts";

// The cases (sources cited with each) live in tests/fixtures/conformance/.

function runCase(c: BnCase, target: Device, seed: number): void {
  const i = bnBackwardInputs(c, seed);
  const { gradOut, input, weight, runningMean, runningVar, saveMean, saveInvstd, eps } = i;
  const mask = i.outputMask;
  const r = batchNormBackward({
    gradOut: on(gradOut, target),
    input: on(input, target),
    weight: onOpt(weight, target),
    runningMean: on(runningMean, target),
    runningVar: on(runningVar, target),
    saveMean: on(saveMean, target),
    saveInvstd: on(saveInvstd, target),
    training: c.training,
    eps,
    outputMask: mask,
  });
  const e = batchNormBackward64({
    dy: f64(gradOut),
    x: f64(input),
    shape: c.shape,
    weight: weight ? f64(weight) : undefined,
    runningMean: f64(runningMean),
    runningVar: f64(runningVar),
    saveMean: f64(saveMean),
    saveInvstd: f64(saveInvstd),
    training: c.training,
    eps,
  });
  const label = `${c.source} ${JSON.stringify(c.shape)} ${c.dtype} training=${c.training}`;
  if (mask[0]) {
    assert.deepEqual(r.gradInput?.shape, c.shape, `${label} gradInput shape`);
    assert.equal(r.gradInput?.dtype, c.dtype, `${label} gradInput dtype`);
    expectClose(r.gradInput, e.gradInput, `${label} gradInput`);
  } else assert.equal(r.gradInput, null);
  if (mask[1]) expectClose(r.gradWeight, e.gradWeight, `${label} gradWeight`);
  else assert.equal(r.gradWeight, null);
  if (mask[2]) expectClose(r.gradBias, e.gradBias, `${label} gradBias`);
  else assert.equal(r.gradBias, null);
}

forEachBackend("bn backward: peer shapes vs float64 reference", ({ device: target }) => {
  runAll(BN_BACKWARD_CASES, (c, k) => runCase(c, target, bnBackwardSeed(k)));
});

// A training-mode invariant that holds whatever the data (the gradient wrt x of a BatchNorm
// output is orthogonal to the constants per channel): with weight = 1, sum(dx) = 0.
forEachBackend("bn backward: training gradInput sums to zero per channel", ({ device: target }) => {
  const shape = [6, 3, 10];
  const x = uniform(shape, "float32", 7, -3, 3);
  const dy = uniform(shape, "float32", 8);
  const st = batchStats64(f64(x), shape);
  const r = batchNormBackward({
    gradOut: on(dy, target),
    input: on(x, target),
    saveMean: on(fromValues(st.mean, [3], "float32"), target),
    saveInvstd: on(fromValues(invstdOf(st.variance, 1e-5), [3], "float32"), target),
    training: true,
  });
  const dx = f64(r.gradInput!);
  const tol = invariantTolerance(60);
  for (let c = 0; c < 3; c++) {
    let s = 0;
    let abs = 0;
    for (let n = 0; n < 6; n++) {
      for (let j = 0; j < 10; j++) {
        s += dx[(n * 3 + c) * 10 + j];
        abs += Math.abs(dx[(n * 3 + c) * 10 + j]);
      }
    }
    assert.ok(Math.abs(s) <= tol.atol + tol.rtol * abs, `channel ${c}: sum(dx) = ${s}`);
  }
});

// Empty batch: PyTorch OpInfo has empty-input batch_norm samples ((0,) shapes; here in the
// rank >= 2 form aclnn accepts, N = 0): gradInput is empty, gradWeight/gradBias are zeros.
forEachBackend("bn backward: empty batch N=0, training and eval", ({ device: target }) => {
  for (const training of [true, false]) {
    for (const dtype of ["float32", "float16", "bfloat16"] as const) {
      const r = batchNormBackward({
        gradOut: on(Tensor.zeros([0, 3, 4], dtype), target),
        input: on(Tensor.zeros([0, 3, 4], dtype), target),
        weight: on(Tensor.ones([3], dtype), target),
        runningMean: on(Tensor.zeros([3], dtype), target),
        runningVar: on(Tensor.ones([3], dtype), target),
        saveMean: on(Tensor.zeros([3], dtype), target),
        saveInvstd: on(Tensor.ones([3], dtype), target),
        training,
      });
      assert.deepEqual(r.gradInput?.shape, [0, 3, 4]);
      expectClose(r.gradWeight, [0, 0, 0], `empty ${dtype} t=${training} gradWeight`);
      expectClose(r.gradBias, [0, 0, 0], `empty ${dtype} t=${training} gradBias`);
    }
  }
});

// Affine-less evaluation without running stats: runningMean/runningVar/weight are optional in
// aclnnBatchNormBackward (hicann/ops-nn norm/batch_norm_grad_v3/docs/aclnnBatchNormBackward.md);
// the library contract (src/ops/batch_norm_backward.ts) reads absent ones as 0 / 1 / 1.
forEachBackend(
  "bn backward: eval without running stats uses mean 0, var 1",
  ({ device: target }) => {
    const shape = [2, 3, 4];
    const x = uniform(shape, "float32", 11);
    const dy = uniform(shape, "float32", 12);
    const r = batchNormBackward({ gradOut: on(dy, target), input: on(x, target), training: false });
    const e = batchNormBackwardAt64(
      f64(dy),
      f64(x),
      shape,
      undefined,
      new Float64Array(3),
      new Float64Array(3).fill(1 / Math.sqrt(1 + 1e-5)),
      false,
    );
    expectClose(r.gradInput, e.gradInput, "gradInput");
    expectClose(r.gradWeight, e.gradWeight, "gradWeight");
    expectClose(r.gradBias, e.gradBias, "gradBias");
  },
);
