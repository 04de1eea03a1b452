/**
 * The forward operators (batchNormStats, batchNormGatherStatsWithCounts, batchNormElemt,
 * batchNormElemtBackward, batchNorm, groupNorm) on the CPU backend: values against float64
 * references written from the PyTorch/aclnn formulas, running-stat updates, dtypes, empty
 * tensors, every documented error code on the exact argument, and forward + backward composed
 * against finite differences.
 */

import assert from "node:assert/strict";
import { batchNorm } from "../src/ops/batch_norm.ts";
import { batchNormBackward } from "../src/ops/batch_norm_backward.ts";
import { batchNormElemt } from "../src/ops/batch_norm_elemt.ts";
import { batchNormElemtBackward } from "../src/ops/batch_norm_elemt_backward.ts";
import { batchNormGatherStatsWithCounts } from "../src/ops/batch_norm_gather_stats_with_counts.ts";
import { batchNormStats } from "../src/ops/batch_norm_stats.ts";
import { groupNorm } from "../src/ops/group_norm.ts";
import { groupNormBackward } from "../src/ops/group_norm_backward.ts";
import type { DType } from "../src/tensor/dtype.ts";
import { Tensor } from "../src/tensor/tensor.ts";
import { assertAclnnError, assertClose, toleranceFor } from "./helpers/assert.ts";
import { liveDelta, openSim, simStats } from "./helpers/ffi_sim.ts";
import {
  batchNormForward64,
  dot,
  groupNormForward64,
  numericalGradient,
} from "./helpers/reference.ts";

const NULLPTR = 161001;
const INVALID = 161002;
const F32 = toleranceFor("float32");

function rnd(shape: number[], seed: number, dtype: DType = "float32", low = -1, high = 1) {
  return Tensor.random(shape, { seed, dtype, low, high });
}

/** Biased mean/var per channel of a row-major (N, C, *) array, straight from the definition. */
function stats64(x: Float64Array, shape: readonly number[]) {
  const C = shape[1];
  const inner = shape.slice(2).reduce((a, b) => a * b, 1);
  const M = x.length / C;
  const mean = new Float64Array(C);
  const variance = new Float64Array(C);
  const ch = (i: number) => Math.floor(i / inner) % C;
  for (let i = 0; i < x.length; i++) mean[ch(i)] += x[i] / M;
  for (let i = 0; i < x.length; i++) variance[ch(i)] += (x[i] - mean[ch(i)]) ** 2 / M;
  return { mean, variance, M };
}

// ---------------------------------------------------------------- batchNormStats

Deno.test("batchNormStats: mean and 1/sqrt(biased var + eps) per channel, float32 [C]", () => {
  for (const shape of [[2, 3, 4, 5], [8, 64, 8, 8], [5, 7]]) {
    for (const dtype of ["float32", "float16", "bfloat16"] as DType[]) {
      const x = rnd(shape, 1, dtype, -2, 3);
      const eps = 1e-3;
      const r = batchNormStats({ input: x, eps });
      assert.equal(r.mean.dtype, "float32");
      assert.deepEqual(r.invstd.shape, [shape[1]]);
      const s = stats64(x.toFloat64Array(), shape);
      assertClose(r.mean, s.mean, F32, `${shape} ${dtype} mean`);
      assertClose(r.invstd, s.variance.map((v) => 1 / Math.sqrt(v + eps)), F32, `invstd`);
    }
  }
});

Deno.test("batchNormStats: non-contiguous input, preallocated outputs, empty batch", () => {
  const y = rnd([4, 3, 6, 5], 2).permute([0, 3, 1, 2]); // [4, 5, 3, 6] channels-last view
  assert.ok(!y.isContiguous());
  const x = y.contiguous();
  const mean = Tensor.zeros([5]);
  const invstd = Tensor.zeros([5]);
  const r = batchNormStats({ input: y, out: { mean, invstd } });
  assert.equal(r.mean, mean);
  const s = stats64(x.toFloat64Array(), x.shape);
  assertClose(mean, s.mean, F32);
  const empty = batchNormStats({ input: Tensor.zeros([0, 3, 4]) });
  // What CANN writes for an empty batch (ProcessEmptyTensorWithValue): mean 0, invstd NaN.
  assert.deepEqual(empty.mean.toArray(), [0, 0, 0]);
  assert.deepEqual(empty.invstd.toArray(), [NaN, NaN, NaN]);
});

Deno.test("batchNormStats: documented error codes", () => {
  const x = rnd([2, 3, 4], 1);
  assertAclnnError(() => batchNormStats({ input: undefined }), NULLPTR, "input");
  assertAclnnError(
    () => batchNormStats({ input: Tensor.zeros([2, 3], "int32") }),
    INVALID,
    "input",
  );
  assertAclnnError(() => batchNormStats({ input: Tensor.zeros([6]) }), INVALID, "input");
  assertAclnnError(() => batchNormStats({ input: Tensor.zeros([2, 0, 3]) }), INVALID, "input");
  assertAclnnError(
    () => batchNormStats({ input: x, out: { mean: Tensor.zeros([3], "float16") } }),
    INVALID,
    "mean",
  );
  assertAclnnError(
    () => batchNormStats({ input: x, out: { invstd: Tensor.zeros([4]) } }),
    INVALID,
    "invstd",
  );
  assertAclnnError(
    () => batchNormStats({ input: x, out: { mean: Tensor.zeros([1, 3]) } }),
    INVALID,
    "mean",
  );
  assertAclnnError(() => batchNormStats({ input: x, out: { mean: null } }), NULLPTR, "mean");
  assertAclnnError(
    () => batchNormStats({ input: x, eps: "1e-5" as unknown as number }),
    INVALID,
    "eps",
  );
});

// ---------------------------------------------------------------- gather stats

/** Per-rank stats of slices along dim 0, stacked into [W, C], and the counts. */
function perRank(x: Tensor, splits: number[], eps: number, dtype: DType = "float32") {
  const C = x.shape[1];
  const means: number[] = [];
  const invstds: number[] = [];
  const counts: number[] = [];
  let start = 0;
  for (const n of splits) {
    const part = x.slice(0, start, start + n);
    start += n;
    const r = batchNormStats({ input: part, eps });
    means.push(...r.mean.toArray());
    invstds.push(...r.invstd.toArray());
    counts.push(part.numel / C);
  }
  const W = splits.length;
  return {
    mean: Tensor.fromArray(means, [W, C], dtype),
    invstd: Tensor.fromArray(invstds, [W, C], dtype),
    counts: Tensor.fromArray(counts, [W], dtype),
  };
}

Deno.test("batchNormGatherStatsWithCounts: global stats equal whole-batch stats; running update unbiased", () => {
  const x = rnd([7, 6, 3, 5], 3, "float32", -1, 4);
  const eps = 1e-5;
  const momentum = 0.3;
  const g = perRank(x, [3, 1, 2, 1], eps);
  const rm0 = rnd([6], 4);
  const rv0 = rnd([6], 5, "float32", 0.5, 2);
  const runningMean = rm0.clone();
  const runningVar = rv0.clone();
  const r = batchNormGatherStatsWithCounts({
    input: x.slice(0, 0, 3),
    ...g,
    runningMean,
    runningVar,
    momentum,
    eps,
  });
  const s = stats64(x.toFloat64Array(), x.shape);
  assertClose(r.mean, s.mean, { rtol: 1e-5, atol: 1e-5 }, "mean");
  assertClose(r.invstd, s.variance.map((v) => 1 / Math.sqrt(v + eps)), { rtol: 1e-4 }, "invstd");
  const rm = rm0.toFloat64Array().map((v, c) => (1 - momentum) * v + momentum * s.mean[c]);
  const rv = rv0.toFloat64Array().map((v, c) =>
    (1 - momentum) * v + momentum * s.variance[c] * s.M / (s.M - 1)
  );
  assertClose(runningMean, rm, { rtol: 1e-5, atol: 1e-5 }, "runningMean");
  assertClose(runningVar, rv, { rtol: 1e-4, atol: 1e-5 }, "runningVar");
  assert.equal(r.mean.dtype, "float32");
});

Deno.test("batchNormGatherStatsWithCounts: float16/bfloat16 stats, outputs in mean's dtype", () => {
  const x = rnd([8, 4, 6], 6, "float32", -1, 2);
  for (const dtype of ["float16", "bfloat16"] as DType[]) {
    const g = perRank(x, [4, 4], 1e-5, dtype);
    const r = batchNormGatherStatsWithCounts({ input: x, ...g, momentum: 0.1, eps: 1e-5 });
    assert.equal(r.mean.dtype, dtype);
    const s = stats64(x.toFloat64Array(), x.shape);
    const tol = toleranceFor(dtype);
    assertClose(r.mean, s.mean, { rtol: tol.rtol * 2, atol: tol.atol * 2 }, dtype);
    assertClose(r.invstd, s.variance.map((v) => 1 / Math.sqrt(v + 1e-5)), {
      rtol: tol.rtol * 4,
      atol: tol.atol * 4,
    }, dtype);
  }
});

Deno.test("batchNormGatherStatsWithCounts: documented error codes", () => {
  const x = rnd([4, 3], 1);
  const ok = {
    input: x,
    mean: Tensor.zeros([2, 3]),
    invstd: Tensor.ones([2, 3]),
    counts: Tensor.fromArray([2, 2], [2]),
    momentum: 0.1,
    eps: 1e-5,
  };
  batchNormGatherStatsWithCounts(ok);
  for (const name of ["input", "mean", "invstd", "counts"] as const) {
    assertAclnnError(() => batchNormGatherStatsWithCounts({ ...ok, [name]: null }), NULLPTR, name);
  }
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, out: { mean: null } }),
    NULLPTR,
    "out.mean",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, counts: Tensor.fromArray([2, 2], [2], "int32") }),
    INVALID,
    "counts",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, runningVar: Tensor.zeros([3], "int32") }),
    INVALID,
    "runningVar",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, input: Tensor.zeros([3]) }),
    INVALID,
    "input",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, mean: Tensor.zeros([6]) }),
    INVALID,
    "mean",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, invstd: Tensor.ones([2, 3, 1]) }),
    INVALID,
    "invstd",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, counts: Tensor.ones([2, 1]) }),
    INVALID,
    "counts",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, counts: Tensor.ones([3]) }),
    INVALID,
    "counts",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, invstd: Tensor.ones([1, 3]) }),
    INVALID,
    "invstd",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, mean: Tensor.zeros([2, 4]) }),
    INVALID,
    "mean",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, runningMean: Tensor.zeros([4]) }),
    INVALID,
    "runningMean",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, out: { invstd: Tensor.zeros([2]) } }),
    INVALID,
    "out.invstd",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, momentum: Number.NaN }),
    INVALID,
    "momentum",
  );
});

// ---------------------------------------------------------------- elemt / elemt backward

Deno.test("batchNormElemt: (x - mean) * invstd * w + b in input's dtype", () => {
  for (const dtype of ["float32", "float16", "bfloat16"] as DType[]) {
    const shape = [3, 4, 5];
    const x = rnd(shape, 1, dtype);
    const mean = rnd([4], 2, dtype);
    const invstd = rnd([4], 3, dtype, 0.5, 2);
    const w = rnd([4], 4, dtype);
    const b = rnd([4], 5, dtype);
    const y = batchNormElemt({ input: x, weight: w, bias: b, mean, invstd, eps: 1e-5 });
    assert.equal(y.dtype, dtype);
    const ref = batchNormForward64(
      x.toFloat64Array(),
      shape,
      w.toFloat64Array(),
      b.toFloat64Array(),
      0,
      { mean: mean.toFloat64Array(), variance: invstd.toFloat64Array().map((v) => 1 / (v * v)) },
    );
    assertClose(y, ref.y, toleranceFor(dtype), dtype);
  }
  const empty = batchNormElemt({
    input: Tensor.zeros([0, 2]),
    mean: Tensor.zeros([2]),
    invstd: Tensor.ones([2]),
  });
  assert.deepEqual(empty.shape, [0, 2]);
});

Deno.test("batchNormElemt: documented error codes", () => {
  const ok = { input: rnd([2, 3], 1), mean: Tensor.zeros([3]), invstd: Tensor.ones([3]) };
  // CANN returns 161002 (not 161001) for these nulls: CheckBatchNormElemtParams.
  for (const name of ["input", "mean", "invstd"] as const) {
    assertAclnnError(() => batchNormElemt({ ...ok, [name]: undefined }), INVALID, name);
  }
  assertAclnnError(() => batchNormElemt({ ...ok, out: { output: null } }), INVALID, "output");
  assertAclnnError(
    () => batchNormElemt({ ...ok, mean: Tensor.zeros([3], "float16") }),
    INVALID,
    "mean",
  );
  assertAclnnError(
    () => batchNormElemt({ ...ok, weight: Tensor.ones([3], "bfloat16") }),
    INVALID,
    "weight",
  );
  assertAclnnError(
    () => batchNormElemt({ ...ok, out: { output: Tensor.zeros([2, 3], "float16") } }),
    INVALID,
    "output",
  );
  assertAclnnError(
    () => batchNormElemt({ ...ok, out: { output: Tensor.zeros([3, 2]) } }),
    INVALID,
    "output",
  );
  assertAclnnError(() => batchNormElemt({ ...ok, bias: Tensor.ones([1, 3]) }), INVALID, "bias");
  assertAclnnError(() => batchNormElemt({ ...ok, invstd: Tensor.ones([4]) }), INVALID, "invstd");
  assertAclnnError(() => batchNormElemt({ ...ok, input: Tensor.zeros([3]) }), INVALID, "input");
  assertAclnnError(
    () => batchNormElemt({ ...ok, input: Tensor.zeros([2, 0]), mean: Tensor.zeros([0]) }),
    INVALID,
    "input",
  );
});

Deno.test("batchNormElemtBackward: equals batchNormBackward's training gradInput", () => {
  for (const shape of [[2, 3, 4, 5], [8, 64, 8, 8]]) {
    const C = shape[1];
    const x = rnd(shape, 1, "float32", -2, 3);
    const dy = rnd(shape, 2);
    const w = rnd([C], 3, "float32", 0.5, 1.5);
    const fwd = batchNorm({ input: x, weight: w, training: true });
    const full = batchNormBackward({
      gradOut: dy,
      input: x,
      weight: w,
      saveMean: fwd.saveMean,
      saveInvstd: fwd.saveInvstd,
      training: true,
    });
    // sums as batchNormReduceBackward would give them, computed here from the definition
    const inner = shape.slice(2).reduce((a, b) => a * b, 1);
    const xs = x.toFloat64Array();
    const dys = dy.toFloat64Array();
    const m = fwd.saveMean.toFloat64Array();
    const sumDy = new Float64Array(C);
    const sumDyXmu = new Float64Array(C);
    for (let i = 0; i < xs.length; i++) {
      const c = Math.floor(i / inner) % C;
      sumDy[c] += dys[i];
      sumDyXmu[c] += dys[i] * (xs[i] - m[c]);
    }
    const M = xs.length / C;
    for (
      const counter of [
        Tensor.fromArray([M], [1], "int32"),
        Tensor.fromArray([M / 2, M / 2], [2], "float32"),
        Tensor.fromArray([M], [1, 1], "float16"),
      ]
    ) {
      const gi = batchNormElemtBackward({
        gradOut: dy,
        input: x,
        mean: fwd.saveMean,
        invstd: fwd.saveInvstd,
        weight: w,
        sumDy: Tensor.fromArray(sumDy, [C]),
        sumDyXmu: Tensor.fromArray(sumDyXmu, [C]),
        counter,
      });
      assertClose(gi, full.gradInput!, { rtol: 1e-4, atol: 1e-5 }, `${shape} ${counter.dtype}`);
    }
  }
});

Deno.test("batchNormElemtBackward: dtypes, empty input, out", () => {
  for (const dtype of ["float16", "bfloat16"] as DType[]) {
    const x = rnd([4, 3, 2], 1, dtype);
    const gi = batchNormElemtBackward({
      gradOut: rnd([4, 3, 2], 2, dtype),
      input: x,
      mean: Tensor.zeros([3]),
      invstd: Tensor.ones([3]),
      sumDy: Tensor.zeros([3]),
      sumDyXmu: Tensor.zeros([3]),
      counter: Tensor.fromArray([8], [1], "int32"),
    });
    assert.equal(gi.dtype, dtype);
    assertClose(gi, rnd([4, 3, 2], 2, dtype), toleranceFor(dtype)); // w = invstd = 1, sums 0
  }
  const out = Tensor.full([0, 3], 7);
  const gi = batchNormElemtBackward({
    gradOut: Tensor.zeros([0, 3]),
    input: Tensor.zeros([0, 3]),
    mean: Tensor.zeros([3]),
    invstd: Tensor.ones([3]),
    sumDy: Tensor.zeros([3]),
    sumDyXmu: Tensor.zeros([3]),
    counter: Tensor.zeros([1], "int32"),
    out: { gradInput: out },
  });
  assert.equal(gi, out);
});

Deno.test("batchNormElemtBackward: documented error codes", () => {
  const ok = {
    gradOut: rnd([2, 3, 2], 1),
    input: rnd([2, 3, 2], 2),
    mean: Tensor.zeros([3]),
    invstd: Tensor.ones([3]),
    sumDy: Tensor.zeros([3]),
    sumDyXmu: Tensor.zeros([3]),
    counter: Tensor.fromArray([4], [1], "int32"),
  };
  batchNormElemtBackward(ok);
  for (
    const name of ["gradOut", "input", "mean", "invstd", "sumDy", "sumDyXmu", "counter"] as const
  ) {
    assertAclnnError(() => batchNormElemtBackward({ ...ok, [name]: null }), NULLPTR, name);
  }
  assertAclnnError(
    () => batchNormElemtBackward({ ...ok, out: { gradInput: null } }),
    NULLPTR,
    "gradInput",
  );
  assertAclnnError(
    () => batchNormElemtBackward({ ...ok, counter: Tensor.ones([1], "bfloat16") }),
    INVALID,
    "counter",
  );
  assertAclnnError(
    () => batchNormElemtBackward({ ...ok, sumDy: Tensor.zeros([3], "int32") }),
    INVALID,
    "sumDy",
  );
  assertAclnnError(
    () => batchNormElemtBackward({ ...ok, weight: Tensor.zeros([3], "int32") }),
    INVALID,
    "weight",
  );
  assertAclnnError(
    () => batchNormElemtBackward({ ...ok, input: Tensor.zeros([12]), gradOut: Tensor.zeros([12]) }),
    INVALID,
    "input",
  );
  assertAclnnError(
    () =>
      batchNormElemtBackward({
        ...ok,
        input: Tensor.zeros([2, 0, 2]),
        gradOut: Tensor.zeros([2, 0, 2]),
      }),
    INVALID,
    "input",
  );
  assertAclnnError(
    () => batchNormElemtBackward({ ...ok, gradOut: Tensor.zeros([2, 3, 3]) }),
    INVALID,
    "gradOut",
  );
  assertAclnnError(
    () => batchNormElemtBackward({ ...ok, out: { gradInput: Tensor.zeros([2, 6]) } }),
    INVALID,
    "gradInput",
  );
  for (const name of ["mean", "invstd", "sumDy", "sumDyXmu", "weight"] as const) {
    assertAclnnError(
      () => batchNormElemtBackward({ ...ok, [name]: Tensor.zeros([4]) }),
      INVALID,
      name,
    );
  }
});

// ---------------------------------------------------------------- batchNorm

Deno.test("batchNorm training: output, saveMean/saveInvstd and running stats match PyTorch", () => {
  for (const shape of [[2, 3, 4, 5], [8, 64, 8, 8], [6, 5]]) {
    const C = shape[1];
    const x = rnd(shape, 1, "float32", -2, 3);
    const w = rnd([C], 2, "float32", 0.5, 1.5);
    const b = rnd([C], 3);
    const rm0 = rnd([C], 4);
    const rv0 = rnd([C], 5, "float32", 0.5, 2);
    const runningMean = rm0.clone();
    const runningVar = rv0.clone();
    const eps = 1e-4;
    const momentum = 0.2;
    const r = batchNorm({
      input: x,
      weight: w,
      bias: b,
      runningMean,
      runningVar,
      training: true,
      momentum,
      eps,
    });
    const ref = batchNormForward64(
      x.toFloat64Array(),
      shape,
      w.toFloat64Array(),
      b.toFloat64Array(),
      eps,
    );
    assertClose(r.output, ref.y, { rtol: 1e-5, atol: 2e-5 }, `${shape} output`);
    assertClose(r.saveMean, ref.mean, F32, "saveMean");
    assertClose(r.saveInvstd, ref.invstd, F32, "saveInvstd");
    assert.equal(r.saveMean.dtype, "float32");
    const s = stats64(x.toFloat64Array(), shape);
    assertClose(
      runningMean,
      rm0.toFloat64Array().map((v, c) => 0.8 * v + 0.2 * s.mean[c]),
      F32,
      "runningMean",
    );
    assertClose(
      runningVar,
      rv0.toFloat64Array().map((v, c) => 0.8 * v + 0.2 * s.variance[c] * s.M / (s.M - 1)),
      F32,
      "runningVar",
    );
  }
});

Deno.test("batchNorm eval: running statistics, empty save tensors, nothing updated", () => {
  const shape = [4, 3, 5];
  const x = rnd(shape, 1);
  const rm = rnd([3], 2);
  const rv = rnd([3], 3, "float32", 0.5, 2);
  const rmBefore = rm.toArray();
  const r = batchNorm({ input: x, runningMean: rm, runningVar: rv, training: false, eps: 1e-5 });
  const ref = batchNormForward64(x.toFloat64Array(), shape, undefined, undefined, 1e-5, {
    mean: rm.toFloat64Array(),
    variance: rv.toFloat64Array(),
  });
  assertClose(r.output, ref.y, F32);
  assert.deepEqual(r.saveMean.shape, [0]);
  assert.deepEqual(r.saveInvstd.shape, [0]);
  assert.deepEqual(rm.toArray(), rmBefore);
  // No running stats: mean 0, var 1.
  const plain = batchNorm({ input: x, training: false, eps: 1e-12 });
  assertClose(plain.output, x, F32);
  // Given save tensors of any size are neither validated nor written in eval mode.
  const sm = Tensor.full([7], 9);
  const e = batchNorm({ input: x, training: false, out: { saveMean: sm, saveInvstd: null } });
  assert.equal(e.saveMean, sm);
  assert.deepEqual(sm.toArray(), new Array(7).fill(9));
});

Deno.test("batchNorm: float16/bfloat16 data, channels-last view, empty batch", () => {
  for (const dtype of ["float16", "bfloat16"] as DType[]) {
    const shape = [4, 6, 3, 3];
    const x = rnd(shape, 7, dtype, -1, 2);
    const r = batchNorm({ input: x, training: true, eps: 1e-5 });
    assert.equal(r.output.dtype, dtype);
    const ref = batchNormForward64(x.toFloat64Array(), shape, undefined, undefined, 1e-5);
    const tol = toleranceFor(dtype);
    assertClose(r.output, ref.y, { rtol: tol.rtol, atol: tol.atol * 2 }, dtype);
    assertClose(r.saveInvstd, ref.invstd, F32, dtype);
  }
  const base = rnd([2, 4, 4, 3], 8); // NHWC storage
  const x = base.permute([0, 3, 1, 2]); // logical NCHW
  const r = batchNorm({ input: x, training: true });
  const ref = batchNormForward64(x.toFloat64Array(), x.shape, undefined, undefined, 1e-5);
  assertClose(r.output, ref.y, { rtol: 1e-5, atol: 2e-5 });

  const rm = Tensor.full([3], 5);
  const empty = batchNorm({ input: Tensor.zeros([0, 3, 2]), runningMean: rm, training: true });
  assert.deepEqual(empty.output.shape, [0, 3, 2]);
  assert.deepEqual(empty.saveMean.toArray(), [0, 0, 0]);
  assert.deepEqual(empty.saveInvstd.toArray(), [NaN, NaN, NaN]);
  assert.deepEqual(rm.toArray(), [5, 5, 5]);
});

Deno.test("batchNorm: NaN propagates to its channel only", () => {
  const values = rnd([3, 2, 2], 1).toArray();
  values[0] = Number.NaN; // channel 0
  const r = batchNorm({ input: Tensor.fromArray(values, [3, 2, 2]), training: true });
  const y = r.output.toArray();
  assert.ok(Number.isNaN(r.saveMean.toArray()[0]));
  assert.ok(Number.isFinite(r.saveMean.toArray()[1]));
  assert.ok(y.filter((_, i) => Math.floor(i / 2) % 2 === 0).every(Number.isNaN));
  assert.ok(y.filter((_, i) => Math.floor(i / 2) % 2 === 1).every(Number.isFinite));
});

Deno.test("batchNorm: documented error codes", () => {
  const x = rnd([2, 3, 4], 1);
  assertAclnnError(() => batchNorm({ input: null, training: true }), NULLPTR, "input");
  assertAclnnError(
    () => batchNorm({ input: x, training: true, out: { output: null } }),
    NULLPTR,
    "output",
  );
  assertAclnnError(
    () => batchNorm({ input: x, training: true, out: { saveMean: null } }),
    NULLPTR,
    "saveMean",
  );
  assertAclnnError(
    () => batchNorm({ input: x, training: true, out: { saveInvstd: null } }),
    NULLPTR,
    "saveInvstd",
  );
  assertAclnnError(
    () => batchNorm({ input: x, training: undefined as unknown as boolean }),
    INVALID,
    "training",
  );
  assertAclnnError(
    () => batchNorm({ input: Tensor.zeros([2, 3], "int32"), training: true }),
    INVALID,
    "input",
  );
  assertAclnnError(
    () => batchNorm({ input: x, weight: Tensor.ones([3], "int32"), training: true }),
    INVALID,
    "weight",
  );
  assertAclnnError(
    () =>
      batchNorm({ input: x, training: true, out: { output: Tensor.zeros([2, 3, 4], "float16") } }),
    INVALID,
    "output",
  );
  assertAclnnError(
    () => batchNorm({ input: x, training: true, out: { output: Tensor.zeros([2, 3, 5]) } }),
    INVALID,
    "output",
  );
  assertAclnnError(() => batchNorm({ input: Tensor.zeros([3]), training: true }), INVALID, "input");
  for (const name of ["weight", "bias", "runningMean", "runningVar"] as const) {
    assertAclnnError(
      () => batchNorm({ input: x, [name]: Tensor.ones([4]), training: false }),
      INVALID,
      name,
    );
  }
  assertAclnnError(
    () => batchNorm({ input: x, training: true, out: { saveInvstd: Tensor.zeros([2]) } }),
    INVALID,
    "saveInvstd",
  );
  assertAclnnError(
    () => batchNorm({ input: x, training: true, momentum: Infinity }),
    INVALID,
    "momentum",
  );
});

// ---------------------------------------------------------------- groupNorm

Deno.test("groupNorm: output, mean and rstd (biased) match PyTorch", () => {
  const cases: [number[], number][] = [[[2, 6, 4, 5], 3], [[8, 64, 8, 8], 32], [[3, 4], 2], [
    [2, 6, 2, 2, 2],
    6,
  ]];
  for (const [shape, group] of cases) {
    for (const dtype of ["float32", "float16", "bfloat16"] as DType[]) {
      const [N, C] = shape;
      const HxW = shape.slice(2).reduce((a, b) => a * b, 1);
      const x = rnd(shape, 1, dtype, -2, 3);
      const gamma = rnd([C], 2, dtype, 0.5, 1.5);
      const beta = rnd([C], 3, dtype);
      const eps = 1e-5;
      const r = groupNorm({ input: x, gamma, beta, group, eps });
      assert.equal(r.output.dtype, dtype);
      assert.deepEqual(r.mean.shape, [N, group]);
      const ref = groupNormForward64(
        x.toFloat64Array(),
        N,
        C,
        HxW,
        group,
        gamma.toFloat64Array(),
        beta.toFloat64Array(),
        eps,
      );
      const tol = toleranceFor(dtype);
      const loose = { rtol: tol.rtol, atol: tol.atol * 4 };
      assertClose(r.output, ref.y, dtype === "float32" ? { rtol: 1e-5, atol: 2e-5 } : loose);
      assertClose(r.mean, ref.mean, tol, `${shape} ${dtype} mean`);
      assertClose(r.rstd, ref.rstd, tol, `${shape} ${dtype} rstd`);
    }
  }
});

Deno.test("groupNorm: explicit N/C/HxW, out tensors, non-contiguous input, empty batch", () => {
  const base = rnd([2, 5, 5, 4], 4);
  const x = base.permute([0, 3, 1, 2]); // [2, 4, 5, 5] channels-last
  const output = Tensor.zeros([2, 4, 5, 5]);
  const mean = Tensor.zeros([2, 2]);
  const rstd = Tensor.zeros([2, 2]);
  const r = groupNorm({ input: x, N: 2, C: 4, HxW: 25, group: 2, out: { output, mean, rstd } });
  assert.equal(r.output, output);
  const ref = groupNormForward64(x.toFloat64Array(), 2, 4, 25, 2, undefined, undefined, 1e-5);
  assertClose(output, ref.y, { rtol: 1e-5, atol: 2e-5 });
  assertClose(rstd, ref.rstd, F32);
  const empty = groupNorm({ input: Tensor.zeros([0, 4, 3]), group: 2 });
  assert.deepEqual(empty.mean.shape, [0, 2]);
  const noSpatial = groupNorm({ input: Tensor.zeros([2, 4, 0]), group: 2 });
  assert.deepEqual(noSpatial.mean.toArray(), [0, 0, 0, 0]);
  assert.deepEqual(noSpatial.rstd.toArray(), [NaN, NaN, NaN, NaN]);
});

Deno.test("groupNorm: documented error codes", () => {
  const x = rnd([2, 4, 3], 1);
  const ok = { input: x, group: 2 };
  assertAclnnError(() => groupNorm({ ...ok, input: undefined }), NULLPTR, "input");
  for (const name of ["output", "mean", "rstd"] as const) {
    assertAclnnError(() => groupNorm({ ...ok, out: { [name]: null } }), NULLPTR, name);
  }
  assertAclnnError(
    () => groupNorm({ ...ok, input: Tensor.zeros([2, 4], "int32") }),
    INVALID,
    "input",
  );
  assertAclnnError(
    () => groupNorm({ ...ok, gamma: Tensor.ones([4], "float16") }),
    INVALID,
    "gamma",
  );
  assertAclnnError(
    () => groupNorm({ ...ok, out: { mean: Tensor.zeros([2, 2], "bfloat16") } }),
    INVALID,
    "mean",
  );
  assertAclnnError(() => groupNorm({ ...ok, input: Tensor.zeros([8]) }), INVALID, "input");
  assertAclnnError(() => groupNorm({ ...ok, group: 0 }), INVALID, "group");
  assertAclnnError(() => groupNorm({ ...ok, group: 3 }), INVALID, "group");
  assertAclnnError(() => groupNorm({ ...ok, group: 1.5 }), INVALID, "group");
  assertAclnnError(
    () => groupNorm({ input: x } as unknown as Parameters<typeof groupNorm>[0]),
    INVALID,
    "group",
  );
  assertAclnnError(() => groupNorm({ ...ok, eps: 0 }), INVALID, "eps");
  assertAclnnError(() => groupNorm({ ...ok, N: -1 }), INVALID, "N");
  assertAclnnError(() => groupNorm({ ...ok, N: 3 }), INVALID, "N");
  assertAclnnError(() => groupNorm({ ...ok, C: 8 }), INVALID, "C");
  assertAclnnError(() => groupNorm({ ...ok, HxW: 4 }), INVALID, "HxW");
  assertAclnnError(
    () => groupNorm({ ...ok, out: { output: Tensor.zeros([2, 4, 4]) } }),
    INVALID,
    "output",
  );
  assertAclnnError(
    () => groupNorm({ ...ok, out: { rstd: Tensor.zeros([4]) } }),
    INVALID,
    "rstd",
  );
  assertAclnnError(() => groupNorm({ ...ok, beta: Tensor.zeros([2, 2]) }), INVALID, "beta");
  assertAclnnError(() => groupNorm({ ...ok, gamma: Tensor.zeros([5]) }), INVALID, "gamma");
});

// ---------------------------------------------------------------- forward + backward vs finite differences

Deno.test("batchNorm (training) -> batchNormBackward equals finite differences of the forward", () => {
  const shape = [3, 2, 4];
  const C = 2;
  const x = rnd(shape, 1, "float32", -1, 2);
  const w = rnd([C], 2, "float32", 0.5, 1.5);
  const b = rnd([C], 3);
  const dy = rnd(shape, 4);
  const eps = 1e-3;
  const fwd = batchNorm({ input: x, weight: w, bias: b, training: true, eps });
  const grads = batchNormBackward({
    gradOut: dy,
    input: x,
    weight: w,
    saveMean: fwd.saveMean,
    saveInvstd: fwd.saveInvstd,
    training: true,
    eps,
  });
  const dy64 = dy.toFloat64Array();
  const x64 = x.toFloat64Array();
  const w64 = w.toFloat64Array();
  const b64 = b.toFloat64Array();
  const loss = (xv: Float64Array, wv: Float64Array, bv: Float64Array) =>
    dot(dy64, batchNormForward64(xv, shape, wv, bv, eps).y);
  const tol = { rtol: 1e-3, atol: 1e-4 };
  assertClose(grads.gradInput!, numericalGradient((v) => loss(v, w64, b64), x64), tol, "dx");
  assertClose(grads.gradWeight!, numericalGradient((v) => loss(x64, v, b64), w64), tol, "dw");
  assertClose(grads.gradBias!, numericalGradient((v) => loss(x64, w64, v), b64), tol, "db");
});

Deno.test("groupNorm -> groupNormBackward equals finite differences of the forward", () => {
  const [N, C, HxW, group] = [2, 4, 3, 2];
  const shape = [N, C, HxW];
  const x = rnd(shape, 1, "float32", -1, 2);
  const gamma = rnd([C], 2, "float32", 0.5, 1.5);
  const beta = rnd([C], 3);
  const dy = rnd(shape, 4);
  const eps = 1e-3;
  const fwd = groupNorm({ input: x, gamma, beta, group, eps });
  const grads = groupNormBackward({
    gradOut: dy,
    input: x,
    mean: fwd.mean,
    rstd: fwd.rstd,
    gamma,
    group,
  });
  const dy64 = dy.toFloat64Array();
  const x64 = x.toFloat64Array();
  const g64 = gamma.toFloat64Array();
  const b64 = beta.toFloat64Array();
  const loss = (xv: Float64Array, gv: Float64Array, bv: Float64Array) =>
    dot(dy64, groupNormForward64(xv, N, C, HxW, group, gv, bv, eps).y);
  const tol = { rtol: 1e-3, atol: 1e-4 };
  assertClose(grads.gradInput!, numericalGradient((v) => loss(v, g64, b64), x64), tol, "dx");
  assertClose(grads.gradGamma!, numericalGradient((v) => loss(x64, v, b64), g64), tol, "dgamma");
  assertClose(grads.gradBeta!, numericalGradient((v) => loss(x64, g64, v), b64), tol, "dbeta");
});

// ---------------------------------------------------------------- NPU (software CANN)

/** Same values, dtype and shape on the device as on the CPU backend. */
function sameOnNpu(dev: Tensor, cpu: Tensor, what: string): void {
  assert.notEqual(dev.device, "cpu", `${what} device`);
  assert.equal(dev.dtype, cpu.dtype, `${what} dtype`);
  assert.deepEqual(dev.shape, cpu.shape, `${what} shape`);
  const tol = toleranceFor(cpu.dtype);
  assertClose(
    dev,
    cpu,
    { rtol: Math.max(1e-4, 2 * tol.rtol), atol: Math.max(1e-4, 2 * tol.atol) },
    what,
  );
}

Deno.test("npu: every forward op on the software CANN equals the CPU backend", () => {
  const before = simStats();
  {
    using npu = openSim();
    for (const dtype of ["float32", "float16", "bfloat16"] as DType[]) {
      const shape = [4, 6, 3, 5];
      const C = shape[1];
      const x = rnd(shape, 1, dtype, -1, 2);
      const xd = x.to(npu);
      const label = (op: string) => `${op} ${dtype}`;

      const s = batchNormStats({ input: x, eps: 1e-4 });
      const sd = batchNormStats({ input: xd, eps: 1e-4 });
      sameOnNpu(sd.mean, s.mean, label("stats mean"));
      sameOnNpu(sd.invstd, s.invstd, label("stats invstd"));

      const g = perRank(x, [1, 3], 1e-4, "float32");
      const rm = rnd([C], 4);
      const rv = rnd([C], 5, "float32", 0.5, 2);
      const gArgs = { momentum: 0.2, eps: 1e-4 };
      const rmd = rm.to(npu);
      const rvd = rv.to(npu);
      const gs = batchNormGatherStatsWithCounts({
        input: x,
        ...g,
        runningMean: rm,
        runningVar: rv,
        ...gArgs,
      });
      const gsd = batchNormGatherStatsWithCounts({
        input: xd,
        mean: g.mean.to(npu),
        invstd: g.invstd.to(npu),
        counts: g.counts.to(npu),
        runningMean: rmd,
        runningVar: rvd,
        ...gArgs,
      });
      sameOnNpu(gsd.mean, gs.mean, label("gather mean"));
      sameOnNpu(gsd.invstd, gs.invstd, label("gather invstd"));
      sameOnNpu(rmd, rm, label("gather runningMean"));
      sameOnNpu(rvd, rv, label("gather runningVar"));

      const stat = (seed: number, low = -1, high = 1) => rnd([C], seed, dtype, low, high);
      const e = { mean: stat(6), invstd: stat(7, 0.5, 2), weight: stat(8), bias: stat(9) };
      const ed = Object.fromEntries(Object.entries(e).map(([k, v]) => [k, v.to(npu)]));
      sameOnNpu(
        batchNormElemt({ input: xd, ...ed } as Parameters<typeof batchNormElemt>[0]),
        batchNormElemt({ input: x, ...e }),
        label("elemt"),
      );

      const dy = rnd(shape, 10, dtype);
      const eb = {
        mean: rnd([C], 11),
        invstd: rnd([C], 12, "float32", 0.5, 2),
        weight: rnd([C], 13),
        sumDy: rnd([C], 14),
        sumDyXmu: rnd([C], 15),
        counter: Tensor.fromArray([30, 30], [2], "int32"),
      };
      const ebd = Object.fromEntries(Object.entries(eb).map(([k, v]) => [k, v.to(npu)]));
      sameOnNpu(
        batchNormElemtBackward(
          { gradOut: dy.to(npu), input: xd, ...ebd } as Parameters<
            typeof batchNormElemtBackward
          >[0],
        ),
        batchNormElemtBackward({ gradOut: dy, input: x, ...eb }),
        label("elemt backward"),
      );

      for (const training of [true, false]) {
        const rm2 = rnd([C], 16);
        const rv2 = rnd([C], 17, "float32", 0.5, 2);
        const rm2d = rm2.to(npu);
        const rv2d = rv2.to(npu);
        const w = rnd([C], 18);
        const flags = { training, momentum: 0.3, eps: 1e-4 };
        const bn = batchNorm({ input: x, weight: w, runningMean: rm2, runningVar: rv2, ...flags });
        const bnd = batchNorm({
          input: xd,
          weight: w.to(npu),
          runningMean: rm2d,
          runningVar: rv2d,
          ...flags,
        });
        const what = label(`batchNorm training=${training}`);
        sameOnNpu(bnd.output, bn.output, `${what} output`);
        sameOnNpu(rm2d, rm2, `${what} runningMean`);
        sameOnNpu(rv2d, rv2, `${what} runningVar`);
        if (training) {
          sameOnNpu(bnd.saveMean, bn.saveMean, `${what} saveMean`);
          sameOnNpu(bnd.saveInvstd, bn.saveInvstd, `${what} saveInvstd`);
        } else {
          assert.deepEqual(bnd.saveMean.shape, [0]);
        }
      }

      const gamma = rnd([C], 19, dtype);
      const gn = groupNorm({ input: x, gamma, group: 3, eps: 1e-4 });
      const gnd = groupNorm({ input: xd, gamma: gamma.to(npu), group: 3, eps: 1e-4 });
      sameOnNpu(gnd.output, gn.output, label("groupNorm output"));
      sameOnNpu(gnd.mean, gn.mean, label("groupNorm mean"));
      sameOnNpu(gnd.rstd, gn.rstd, label("groupNorm rstd"));
    }
  }
  assert.deepEqual(liveDelta(before, simStats()), {});
});
