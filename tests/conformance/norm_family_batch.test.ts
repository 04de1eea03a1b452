/**
 * Conformance of the BatchNorm operators of the norm family (fastBatchNormBackward,
 * batchNormReduce, syncBatchNormGatherStats) with their peers' own tests: CANN's examples with a
 * known answer derived by hand, and the shapes, dtypes, value ranges and attributes of CANN's UT
 * and ST cases and torch_npu's tests (tests/fixtures/conformance/norm_family_batch.ts, each case
 * citing its source), compared with the float64 oracle (tests/oracle/) under the tolerance
 * table, on every backend. aclnnFastBatchNormBackward runs on Atlas A2 only and
 * aclnnSyncBatchNormGatherStats takes bfloat16 on Ascend 950 only: the other chips must refuse.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  batchNormReduce,
  fastBatchNormBackward,
  syncBatchNormGatherStats,
  type Tensor,
} from "../../mod.ts";
import {
  FAST_BN_CASES,
  fastBnInputs,
  GATHER_CASES,
  reduceCases,
} from "../fixtures/conformance/norm_family_batch.ts";
import {
  batchNormReduceExample,
  fastBatchNormBackwardExample,
  syncBatchNormGatherStatsExample,
} from "../fixtures/conformance/norm_family_examples.ts";
import { assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, chipAccepts, forEachBackend } from "../helpers/backends.ts";
import { toleranceFor } from "../helpers/tolerance.ts";
import {
  batchNormBackward64,
  batchNormReduce64,
  rounded,
  syncBatchNormGatherStats64,
} from "../oracle/mod.ts";
import { expectClose, f64, on, runAll } from "./common.ts";

const arr = (t: Tensor) => Array.from(f64(t));
const F32 = toleranceFor("float32");

// ---------------------------------------------------------------------------------------------
// aclnnFastBatchNormBackward

// ops-nn batch_norm_grad_v3 fast example, by hand: per channel M = 4, saveMean 0 and saveInvstd
// 1, so xhat = x; channel 0 holds x = dy = 0..3, channel 1 4..7. gradBias = sum dy = 6, 22;
// gradWeight = sum dy xhat = sum x^2 = 14, 126; gradInput = (M dy - gradBias - x gradWeight) / M
// = (4x - 6 - 14x) / 4 = -2.5x - 1.5 and (4x - 22 - 126x) / 4 = -30.5x - 5.5.
forEachBackend("norm family batch: aclnnFastBatchNormBackward CANN example known answer", (ctx) => {
  const e = fastBatchNormBackwardExample();
  const d = ctx.device;
  const t = (x: Tensor) => on(x, d);
  const call = () =>
    fastBatchNormBackward({
      ...e,
      gradOut: t(e.gradOut),
      input: t(e.input),
      weight: t(e.weight),
      runningMean: t(e.runningMean),
      runningVar: t(e.runningVar),
      saveMean: t(e.saveMean),
      saveInvstd: t(e.saveInvstd),
    });
  if (!chipAccepts(ctx.soc, "aclnnFastBatchNormBackward", ["float32"])) {
    return void assertChipRefuses(ctx, call);
  }
  const r = call();
  const c0 = [0, 1, 2, 3].map((x) => -2.5 * x - 1.5);
  const c1 = [4, 5, 6, 7].map((x) => -30.5 * x - 5.5);
  expectClose(r.gradInput, [...c0, ...c1], "gradInput");
  expectClose(r.gradWeight, [14, 126], "gradWeight");
  expectClose(r.gradBias, [6, 22], "gradBias");
});

forEachBackend("norm family batch: aclnnFastBatchNormBackward UT cases vs float64", (ctx) => {
  runAll(FAST_BN_CASES, (c, k) => {
    const i = fastBnInputs(c, 50000 + 10 * k);
    const d = ctx.device;
    const call = () =>
      fastBatchNormBackward({
        gradOut: on(i.gradOut, d),
        input: on(i.input, d),
        weight: on(i.weight, d),
        runningMean: on(i.runningMean, d),
        runningVar: on(i.runningVar, d),
        saveMean: on(i.saveMean, d),
        saveInvstd: on(i.saveInvstd, d),
        training: c.training,
        eps: 1e-5,
        outputMask: c.mask,
        version: 0,
      });
    if (!chipAccepts(ctx.soc, "aclnnFastBatchNormBackward", [c.dtype])) {
      return void assertChipRefuses(ctx, call);
    }
    const r = call();
    const e = batchNormBackward64({
      dy: f64(i.gradOut),
      x: f64(i.input),
      shape: c.shape,
      weight: f64(i.weight),
      runningMean: f64(i.runningMean),
      runningVar: f64(i.runningVar),
      saveMean: f64(i.saveMean),
      saveInvstd: f64(i.saveInvstd),
      training: c.training,
      eps: 1e-5,
    });
    const label = `${c.source} ${JSON.stringify(c.shape)} ${c.dtype} training=${c.training}`;
    const [gi, gw, gb] = c.mask;
    if (gi) {
      assert.equal(r.gradInput?.dtype, c.dtype, `${label} gradInput dtype`);
      expectClose(r.gradInput, e.gradInput, `${label} gradInput`);
    } else assert.equal(r.gradInput, null, `${label} gradInput masked`);
    // gradWeight and gradBias take weight's dtype (float32 in the UT).
    if (gw) expectClose(r.gradWeight, e.gradWeight, `${label} gradWeight`);
    else assert.equal(r.gradWeight, null, `${label} gradWeight masked`);
    if (gb) expectClose(r.gradBias, e.gradBias, `${label} gradBias`);
    else assert.equal(r.gradBias, null, `${label} gradBias masked`);
  });
});

// ---------------------------------------------------------------------------------------------
// aclnnBatchNormReduce

// ops-nn bn_training_reduce example (and arch35's), by hand: x [1,2,3,4] of ones, each channel
// sums N * H * W = 12 ones: sum = squareSum = 12.
forEachBackend("norm family batch: aclnnBatchNormReduce CANN example known answer", (ctx) => {
  const r = batchNormReduce({ x: on(batchNormReduceExample().x, ctx.device) });
  expectClose(r.sum, [12, 12], "sum");
  expectClose(r.squareSum, [12, 12], "squareSum");
});

forEachBackend("norm family batch: aclnnBatchNormReduce peer cases vs float64", (ctx) => {
  runAll(reduceCases(), (c) => {
    const call = () => batchNormReduce({ x: on(c.x, ctx.device) });
    if (!chipAccepts(ctx.soc, "aclnnBatchNormReduce", [c.x.dtype])) {
      return void assertChipRefuses(ctx, call);
    }
    const r = call();
    const e = batchNormReduce64(f64(c.x), c.x.shape);
    const label = `${c.source} ${c.x.dtype}`;
    // op-plugin: sum and squareSum float32 [C] whatever x's dtype.
    assert.deepEqual([r.sum.dtype, r.squareSum.dtype], ["float32", "float32"], label);
    assert.deepEqual(r.sum.shape, [c.x.shape[1]], `${label} sum shape`);
    expectClose(r.sum, e.sum, `${label} sum`);
    expectClose(r.squareSum, e.squareSum, `${label} squareSum`);
  });
});

// ---------------------------------------------------------------------------------------------
// aclnnSyncBatchNormGatherStats

// ops-nn sync_batch_norm_gather_stats example, by hand: one device, n = 400; batchMean = (300,
// 400) / 400 = (0.75, 1); batchVar = (300, 400) / 400 - batchMean^2 = (0.1875, 0); batchInvstd =
// 1/sqrt(batchVar + eps) (eps 1e-5 as a float); mean <- 400 * 0.9 + batchMean * 0.1 = (360.075,
// 360.1); variance <- 400 * 0.9 + batchVar * 400/399 * 0.1 = (360 + 7.5/399, 360).
// Channel 1's invstd is ill-conditioned: CANN's kernel forms batchVar = squareSum * r - mean^2
// with r = 1/n a float (op_kernel/arch35/sync_batch_norm_gather_stats_n_full_load.h:200-233,
// Muls by reciCountAll; 1/400 is not a float), a cancellation of terms of size 1 that errs by a
// few float32 epsilons of them (tests/helpers/tolerance.ts `cancellation`: 2^-21 * terms), and
// 1/sqrt(var + 1e-5) magnifies that 5e4-fold. So channel 1 is checked through the variance its
// invstd implies, 1/invstd^2 - eps, against 0 within 2^-21 * (squareSum/n + mean^2).
forEachBackend(
  "norm family batch: aclnnSyncBatchNormGatherStats CANN example known answer",
  (ctx) => {
    const e = syncBatchNormGatherStatsExample();
    const d = ctx.device;
    const mean = on(e.mean, d);
    const variance = on(e.variance, d);
    const r = syncBatchNormGatherStats({
      ...e,
      totalSum: on(e.totalSum, d),
      totalSquareSum: on(e.totalSquareSum, d),
      sampleCount: on(e.sampleCount, d),
      mean,
      variance,
    });
    const epsF = Math.fround(1e-5);
    expectClose(r.batchMean, [0.75, 1], "batchMean");
    const invstd = f64(r.batchInvstd);
    assertClose([invstd[0]], [1 / Math.sqrt(0.1875 + epsF)], F32, "batchInvstd channel 0");
    const implied = 1 / invstd[1] ** 2 - epsF;
    assert.ok(
      Math.abs(implied) <= 2 ** -21 * 2,
      `batchInvstd channel 1 implies variance ${implied}`,
    );
    expectClose(mean, [360.075, 360.1], "mean (in place)");
    expectClose(variance, [360 + 7.5 / 399, 360], "variance (in place)");
  },
);

forEachBackend("norm family batch: aclnnSyncBatchNormGatherStats peer cases vs float64", (ctx) => {
  runAll(GATHER_CASES, (c) => {
    const i = c.inputs();
    const d = ctx.device;
    // Read before the call: on the CPU `on` hands over the same tensors, which the call updates.
    const before = {
      totalSum: arr(i.totalSum),
      totalSquareSum: arr(i.totalSquareSum),
      sampleCount: arr(i.sampleCount),
      mean: arr(i.mean),
      variance: arr(i.variance),
    };
    const mean = on(i.mean, d);
    const variance = on(i.variance, d);
    const call = () =>
      syncBatchNormGatherStats({
        totalSum: on(i.totalSum, d),
        totalSquareSum: on(i.totalSquareSum, d),
        sampleCount: on(i.sampleCount, d),
        mean,
        variance,
        momentum: c.momentum,
        eps: c.eps,
      });
    if (!chipAccepts(ctx.soc, "aclnnSyncBatchNormGatherStats", [c.dtype])) {
      return void assertChipRefuses(ctx, call);
    }
    const r = call();
    const e = syncBatchNormGatherStats64({
      ...before,
      channels: before.mean.length,
      momentum: Math.fround(c.momentum),
      eps: Math.fround(c.eps),
    });
    const label = `${c.source} ${c.dtype}`;
    const exp = (v: Float64Array) => rounded(Array.from(v), c.dtype);
    assert.equal(r.batchMean.dtype, c.dtype, `${label} batchMean dtype`);
    expectClose(r.batchMean, exp(e.batchMean), `${label} batchMean`);
    expectClose(r.batchInvstd, exp(e.batchInvstd), `${label} batchInvstd`);
    expectClose(mean, exp(e.mean), `${label} mean (in place)`);
    expectClose(variance, exp(e.variance), `${label} variance (in place)`);
  });
});
