/**
 * syncBatchNormGatherStats (aclnnSyncBatchNormGatherStats) on every backend: batch statistics
 * and the in-place running update against the float64 oracle; the kernels' float32 steps bit for bit on
 * every backend; n = 1 (no guard on the CPU and the 950, the A2 kernel's biased fallback); the codes in
 * CANN's check order; the chips (bfloat16 on 950 only; refused off 950/A3/A2 naming the SoC).
 *
 * @module
 */

import assert from "node:assert/strict";
import { syncBatchNormGatherStats } from "../../src/ops/sync_batch_norm_gather_stats.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import {
  assertChipRefuses,
  type BackendContext,
  chipAccepts,
  forEachBackend,
  on,
} from "../helpers/backends.ts";
import { syncBatchNormGatherStats64 } from "../oracle/sync_batch_norm_gather_stats.ts";
import { cancellation, F32_ARITHMETIC, toleranceFor } from "../helpers/tolerance.ts";

const NULLPTR = 161001;
const INVALID = 161002;
const OP = "aclnnSyncBatchNormGatherStats";

interface Inputs {
  totalSum: Tensor;
  totalSquareSum: Tensor;
  sampleCount: Tensor;
  mean: Tensor;
  variance: Tensor;
}

/** Sums of real data: D devices of `count` elements per channel each. */
function inputs(D: number, C: number, count: number, seed: number, dtype: DType = "float32") {
  const x = Tensor.random([D, count, C], { seed, low: -1, high: 2 }).toFloat64Array();
  const s = new Array(D * C).fill(0);
  const q = new Array(D * C).fill(0);
  for (let d = 0; d < D; d++) {
    for (let i = 0; i < count; i++) {
      for (let c = 0; c < C; c++) {
        const v = x[(d * count + i) * C + c];
        s[d * C + c] += v;
        q[d * C + c] += v * v;
      }
    }
  }
  return {
    totalSum: Tensor.fromArray(s, [D, C], dtype),
    totalSquareSum: Tensor.fromArray(q, [D, C], dtype),
    sampleCount: Tensor.fromArray(new Array(D).fill(count), [D], dtype),
    mean: Tensor.random([C], { seed: seed + 1, dtype }),
    variance: Tensor.random([C], { seed: seed + 2, dtype, low: 0.5, high: 2 }),
  };
}

function onDevice(i: Inputs, ctx: BackendContext): Inputs {
  const d = ctx.device;
  return {
    totalSum: on(i.totalSum, d),
    totalSquareSum: on(i.totalSquareSum, d),
    sampleCount: on(i.sampleCount, d),
    mean: on(i.mean, d),
    variance: on(i.variance, d),
  };
}

function oracle(i: Inputs, momentum: number, eps: number) {
  return syncBatchNormGatherStats64({
    totalSum: i.totalSum.toFloat64Array(),
    totalSquareSum: i.totalSquareSum.toFloat64Array(),
    sampleCount: i.sampleCount.toFloat64Array(),
    mean: i.mean.toFloat64Array(),
    variance: i.variance.toFloat64Array(),
    channels: i.totalSum.shape[1],
    momentum,
    eps,
  });
}

forEachBackend("syncBatchNormGatherStats: batch and running statistics against float64", (ctx) => {
  let ran = 0;
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    if (!chipAccepts(ctx.soc, OP, [dtype])) continue;
    const host = inputs(4, 5, 16, 1, dtype);
    const i = onDevice(host, ctx);
    // Before the call: on the CPU backend host's mean and variance are the ones updated.
    const e = oracle(host, 0.1, 1e-5);
    const before = [...host.mean.toFloat64Array()];
    const r = syncBatchNormGatherStats({ ...i, momentum: 0.1, eps: 1e-5 });
    assert.deepEqual([r.batchMean.dtype, r.batchMean.shape], [dtype, [5]]);
    // batchVar = Q/n - mean² cancels terms of size Q/n (about 1) in float32.
    const tol = dtype === "float32"
      ? cancellation(F32_ARITHMETIC.float32, 4, 1)
      : toleranceFor(dtype);
    assertClose(r.batchMean, e.batchMean, tol, `${ctx.label} ${dtype} batchMean`);
    assertClose(r.batchInvstd, e.batchInvstd, tol, `${ctx.label} ${dtype} batchInvstd`);
    // In place: the very tensors passed as mean and variance now hold the running update.
    assertClose(i.mean, e.mean, tol, `${ctx.label} ${dtype} mean (in place)`);
    assertClose(i.variance, e.variance, tol, `${ctx.label} ${dtype} variance (in place)`);
    assert.notDeepEqual([...i.mean.toFloat64Array()], before);
    ran++;
  }
  assert.ok(ran >= 2, `${ctx.label}: ${ran} dtypes ran`);
});

forEachBackend("syncBatchNormGatherStats: an int32 sampleCount counts as a float one", (ctx) => {
  // CANN's sampleCount lists hold DT_INT32 (aclnn_sync_batch_norm_gather_stats.cpp), and the
  // count is cast to INT32 anyway: the same results as the float32 count of the same values.
  const host = inputs(3, 4, 7, 9);
  const asFloat = onDevice(host, ctx);
  const asInt = onDevice({ ...host, sampleCount: Tensor.fromArray([7, 7, 7], [3], "int32") }, ctx);
  const a = syncBatchNormGatherStats({ ...asFloat, momentum: 0.2, eps: 1e-5 });
  const b = syncBatchNormGatherStats({ ...asInt, momentum: 0.2, eps: 1e-5 });
  for (
    const [x, y, what] of [
      [a.batchMean, b.batchMean, "batchMean"],
      [a.batchInvstd, b.batchInvstd, "batchInvstd"],
      [asFloat.mean, asInt.mean, "mean (in place)"],
      [asFloat.variance, asInt.variance, "variance (in place)"],
    ] as const
  ) {
    assert.deepEqual([...y.toFloat64Array()], [...x.toFloat64Array()], `${ctx.label} ${what}`);
  }
});

// The kernels' float32 steps (ops-nn op_kernel/arch35/sync_batch_norm_gather_stats_n_full_load.h
// NFullLoadBatchNormVF; experimental/.../sync_batch_norm_gather_stats_kernel.h
// ComputeAndCopyOut), written out here with one Math.fround per vector operation: the CPU
// backend and the software CANN (tests/sim/sim_ops_sync_batch_norm_gather_stats.c) both give
// these bits.
forEachBackend("syncBatchNormGatherStats: the kernel's float32 steps, bit for bit", (ctx) => {
  if (!chipAccepts(ctx.soc, OP, ["float32"])) return;
  const host = inputs(3, 4, 7, 5);
  const mean0 = host.mean.toFloat64Array();
  const mean = on(host.mean, ctx.device);
  const r = syncBatchNormGatherStats({
    totalSum: on(host.totalSum, ctx.device),
    totalSquareSum: on(host.totalSquareSum, ctx.device),
    sampleCount: on(host.sampleCount, ctx.device),
    mean,
    variance: on(host.variance, ctx.device),
    momentum: 0.3,
    eps: 1e-3,
  });
  const f = Math.fround;
  const [m, eps, n] = [f(0.3), f(1e-3), f(21)];
  const S = host.totalSum.toFloat64Array();
  const Q = host.totalSquareSum.toFloat64Array();
  for (let c = 0; c < 4; c++) {
    const s = f(f(f(S[c]) + S[4 + c]) + S[8 + c]);
    const q = f(f(f(Q[c]) + Q[4 + c]) + Q[8 + c]);
    const bm = f(s * f(1 / n));
    const v = f(f(q * f(1 / n)) - f(bm * bm));
    const label = `${ctx.label} channel ${c}`;
    assert.equal(r.batchMean.toFloat64Array()[c], bm, `${label} batchMean`);
    assert.equal(r.batchInvstd.toFloat64Array()[c], f(1 / f(Math.sqrt(f(v + eps)))), label);
    assert.equal(mean.toFloat64Array()[c], f(f(mean0[c] * f(1 - m)) + f(bm * m)), label);
  }
});

forEachBackend("syncBatchNormGatherStats: n = 1 has no guard except in the A2 kernel", (ctx) => {
  const d = ctx.device;
  const mean = on(Tensor.fromArray([0, 0], [2]), d);
  const variance = on(Tensor.fromArray([1, 1], [2]), d);
  syncBatchNormGatherStats({
    totalSum: on(Tensor.fromArray([2, 3], [1, 2]), d),
    totalSquareSum: on(Tensor.fromArray([4, 9], [1, 2]), d),
    sampleCount: on(Tensor.fromArray([1], [1]), d),
    mean,
    variance,
    momentum: 0.5,
  });
  assert.deepEqual(mean.toArray(), [1, 1.5]);
  const v = variance.toFloat64Array();
  if (ctx.soc?.name === "Ascend910B") {
    // experimental kernel: k = momentum when n <= 1, so variance = 1·0.5 + 0·0.5.
    assert.deepEqual([...v], [0.5, 0.5]);
  } else {
    // k = n/(n-1)·m = +inf and v = 0: 0·inf = NaN, as the 950 kernel computes.
    assert.ok(v.every(Number.isNaN), `${ctx.label}: ${v}`);
  }
});

forEachBackend("syncBatchNormGatherStats: errors in CANN's check order", (ctx) => {
  const i = onDevice(inputs(2, 3, 4, 9), ctx);
  const d = ctx.device;
  assertAclnnError(
    () => syncBatchNormGatherStats({ ...i, sampleCount: undefined }),
    NULLPTR,
    "sampleCount",
  );
  assertAclnnError(
    () => syncBatchNormGatherStats({ ...i, out: { batchInvstd: null } }),
    NULLPTR,
    "batchInvstd",
  );
  // dtypes before shapes: a float16 mean of the wrong length is a dtype error.
  assertAclnnError(
    () => syncBatchNormGatherStats({ ...i, mean: on(Tensor.zeros([7], "float16"), d) }),
    INVALID,
    "mean",
  );
  assertAclnnError(
    () =>
      syncBatchNormGatherStats({
        ...i,
        out: {
          batchMean: on(Tensor.zeros([3], "float16"), d),
          batchInvstd: on(Tensor.zeros([3]), d),
        },
      }),
    INVALID,
    "batchInvstd",
  );
  assertAclnnError(
    () => syncBatchNormGatherStats({ ...i, totalSum: on(Tensor.zeros([6]), d) }),
    INVALID,
    "totalSum",
  );
  assertAclnnError(
    () => syncBatchNormGatherStats({ ...i, sampleCount: on(Tensor.zeros([3]), d) }),
    INVALID,
    "sampleCount",
  );
  assertAclnnError(
    () => syncBatchNormGatherStats({ ...i, variance: on(Tensor.zeros([4]), d) }),
    INVALID,
    "variance",
  );
  const e = assertAclnnError(
    () =>
      syncBatchNormGatherStats({
        ...i,
        totalSum: on(Tensor.zeros([0, 3]), d),
        totalSquareSum: on(Tensor.zeros([0, 3]), d),
        sampleCount: on(Tensor.zeros([0]), d),
      }),
    INVALID,
    "totalSum",
  );
  assert.match(e.message, /dim 0 \(devices\) is zero/);
  // No channel: success, nothing written.
  const r = syncBatchNormGatherStats({
    totalSum: on(Tensor.zeros([2, 0]), d),
    totalSquareSum: on(Tensor.zeros([2, 0]), d),
    sampleCount: on(Tensor.ones([2]), d),
    mean: on(Tensor.zeros([0]), d),
    variance: on(Tensor.zeros([0]), d),
  });
  assert.deepEqual(r.batchMean.shape, [0]);
});

forEachBackend(
  "syncBatchNormGatherStats: bfloat16 needs the 950; other products refused",
  (ctx) => {
    const i = onDevice(inputs(2, 3, 4, 11, "bfloat16"), ctx);
    const e = assertChipRefuses(ctx, () => syncBatchNormGatherStats(i), "totalSum");
    assert.match(e.message, /bfloat16/);
  },
  { cpu: false, socs: ["Ascend910B4", "Ascend910_9391"] },
);

forEachBackend("syncBatchNormGatherStats: refused off Ascend 950 and Atlas A2/A3", (ctx) => {
  const i = onDevice(inputs(2, 3, 4, 12), ctx);
  assertChipRefuses(ctx, () => syncBatchNormGatherStats(i), "device");
}, { cpu: false, socs: ["Ascend910A", "Ascend310P3", "Ascend310B1"] });
