/**
 * The oracle checked against itself by independent routes, with no kernel involved: every
 * gradient formula equals central differences of its float64 forward, the SyncBatchNorm
 * pieces recombine into whole-batch BatchNorm, and the empty-batch values are the README's.
 *
 * @module
 */

import assert from "node:assert/strict";
import { assertClose } from "../helpers/assert.ts";
import { FINITE_DIFFERENCES } from "../helpers/tolerance.ts";
import {
  batchNorm64,
  batchNormBackward64,
  batchNormBackwardAt64,
  batchNormElemt64,
  batchNormElemtBackward64,
  batchNormForward64,
  batchNormGatherStatsWithCounts64,
  batchNormReduceBackward64,
  batchNormStats64,
  batchStats64,
  dot,
  groupNorm64,
  groupNormBackward64,
  groupNormForward64,
  infiniopBatchNormBackward64,
  numericalGradient,
} from "./mod.ts";

/** Deterministic values in [low, high). */
function values(n: number, seed: number, low = -1, high = 1): Float64Array {
  const out = new Float64Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) % 2147483648;
    out[i] = low + (high - low) * (s / 2147483648);
  }
  return out;
}

const FD = FINITE_DIFFERENCES;

Deno.test("oracle: BatchNorm backward (training and eval) equals finite differences", () => {
  const shape = [3, 2, 4];
  const x = values(24, 1, -2, 2);
  const dy = values(24, 2);
  const w = new Float64Array([0.7, -1.3]);
  const b = new Float64Array([0.1, 0.2]);
  const eps = 0.5;
  for (const training of [true, false]) {
    const stats = training
      ? undefined
      : { mean: new Float64Array([0.3, -0.2]), variance: new Float64Array([0.8, 1.7]) };
    const fwd = batchNormForward64(x, shape, w, b, eps, stats);
    const g = batchNormBackwardAt64(dy, x, shape, w, fwd.mean, fwd.invstd, training);
    const loss = (xv: Float64Array, wv: Float64Array, bv: Float64Array) =>
      dot(dy, batchNormForward64(xv, shape, wv, bv, eps, stats).y);
    assertClose(g.gradInput, numericalGradient((v) => loss(v, w, b), x.slice()), FD, "dx");
    assertClose(g.gradWeight, numericalGradient((v) => loss(x, v, b), w.slice()), FD, "dw");
    assertClose(g.gradBias, numericalGradient((v) => loss(x, w, v), b.slice()), FD, "db");
    // The operator's form picks the same statistics from its arguments.
    const op = batchNormBackward64({
      dy,
      x,
      shape,
      weight: w,
      saveMean: training ? fwd.mean : undefined,
      saveInvstd: training ? fwd.invstd : undefined,
      runningMean: stats?.mean,
      runningVar: stats?.variance,
      training,
      eps,
    });
    assertClose(op.gradInput, g.gradInput, FD, `op training=${training}`);
  }
});

Deno.test("oracle: GroupNorm backward (uncentred form) equals finite differences", () => {
  const [N, C, HxW, group] = [2, 4, 3, 2];
  const x = values(24, 3, -2, 2);
  const dy = values(24, 4);
  const gamma = new Float64Array([0.5, -1.2, 2, 0.9]);
  const beta = new Float64Array([0.1, 0, -0.3, 0.2]);
  const eps = 0.25;
  const fwd = groupNormForward64(x, N, C, HxW, group, gamma, beta, eps);
  const g = groupNormBackward64(dy, x, fwd.mean, fwd.rstd, gamma, N, C, HxW, group);
  const loss = (xs: Float64Array, gv: Float64Array, bv: Float64Array) =>
    dot(dy, groupNormForward64(xs, N, C, HxW, group, gv, bv, eps).y);
  assertClose(g.gradInput, numericalGradient((v) => loss(v, gamma, beta), x.slice()), FD, "dx");
  assertClose(g.gradGamma, numericalGradient((v) => loss(x, v, beta), gamma.slice()), FD, "dg");
  assertClose(g.gradBeta, numericalGradient((v) => loss(x, gamma, v), beta.slice()), FD, "db");
});

Deno.test("oracle: the InfiniOp gradient is the derivative of the seed's forward (no eps)", () => {
  const shape = [3, 2, 4];
  const x = values(24, 5, -2, 2);
  const dy = values(24, 6);
  const w = new Float64Array([0.9, 1.4]);
  const b = new Float64Array([0.3, -0.2]);
  const { mean, variance } = batchStats64(x, shape);
  const g = infiniopBatchNormBackward64({
    dy,
    x,
    shape,
    weight: w,
    runningMean: mean,
    runningVar: variance,
  });
  const loss = (xv: Float64Array, wv: Float64Array, bv: Float64Array) =>
    dot(dy, batchNormForward64(xv, shape, wv, bv, 0).y);
  assertClose(g.gradInput, numericalGradient((v) => loss(v, w, b), x.slice()), FD, "dx");
  assertClose(g.gradWeight, numericalGradient((v) => loss(x, v, b), w.slice()), FD, "dw");
  assertClose(g.gradBias, numericalGradient((v) => loss(x, w, v), b.slice()), FD, "db");
});

Deno.test("oracle: reduce + elemt backward recombine into the training gradient", () => {
  const shape = [4, 3, 5];
  const x = values(60, 7, -2, 3);
  const dy = values(60, 8);
  const w = new Float64Array([0.5, 1, 1.5]);
  const s = batchNormStats64(x, shape, 1e-3);
  const r = batchNormReduceBackward64(dy, x, shape, s.mean, s.invstd);
  const whole = batchNormBackwardAt64(dy, x, shape, w, s.mean, s.invstd, true);
  assertClose(r.gradWeight, whole.gradWeight, FD, "gradWeight");
  assertClose(r.gradBias, whole.gradBias, FD, "gradBias");
  const gi = batchNormElemtBackward64({
    dy,
    x,
    shape,
    mean: s.mean,
    invstd: s.invstd,
    weight: w,
    sumDy: r.sumDy,
    sumDyXmu: r.sumDyXmu,
    counter: [12, 8],
  });
  assertClose(gi, whole.gradInput, FD, "gradInput");
});

Deno.test("oracle: gathered per-rank statistics equal the whole batch's", () => {
  const C = 3;
  const parts = [[2, C, 4], [1, C, 4], [3, C, 4]];
  const xs = parts.map((shape, k) => values(shape[0] * C * 4, 10 + k, -1, 4));
  const eps = 1e-3;
  const stats = parts.map((shape, k) => batchNormStats64(xs[k], shape, eps));
  const all = new Float64Array(xs.flatMap((x) => [...x]));
  const wholeShape = [6, C, 4];
  const g = batchNormGatherStatsWithCounts64({
    mean: stats.flatMap((s) => [...s.mean]),
    invstd: stats.flatMap((s) => [...s.invstd]),
    counts: parts.map((shape) => shape[0] * 4),
    C,
    runningMean: [0, 0, 0],
    runningVar: [1, 1, 1],
    momentum: 0.25,
    eps,
  });
  const bn = batchNorm64({
    x: all,
    shape: wholeShape,
    runningMean: [0, 0, 0],
    runningVar: [1, 1, 1],
    training: true,
    momentum: 0.25,
    eps,
  });
  assertClose(g.mean, bn.saveMean, FD, "mean");
  assertClose(g.invstd, bn.saveInvstd, FD, "invstd");
  assertClose(g.runningMean!, bn.runningMean!, FD, "runningMean");
  assertClose(g.runningVar!, bn.runningVar!, FD, "runningVar");
  // And batchNorm's output is batchNormElemt at the batch statistics.
  const y = batchNormElemt64({ x: all, shape: wholeShape, mean: g.mean, invstd: g.invstd });
  assertClose(bn.output, y, FD, "output");
});

Deno.test("oracle: empty batches give the README's values", () => {
  const s = batchNormStats64([], [0, 3, 4], 1e-5);
  assert.deepEqual([...s.mean], [0, 0, 0]);
  assert.deepEqual([...s.invstd], [NaN, NaN, NaN]);
  const bn = batchNorm64({
    x: [],
    shape: [0, 3],
    runningMean: [5, 5, 5],
    runningVar: [2, 2, 2],
    training: true,
    momentum: 0.5,
    eps: 1e-5,
  });
  assert.deepEqual([...bn.saveMean], [0, 0, 0]);
  assert.deepEqual([...bn.saveInvstd], [NaN, NaN, NaN]);
  assert.deepEqual([...bn.runningMean!], [5, 5, 5], "running statistics untouched");
  assert.deepEqual([...bn.runningVar!], [2, 2, 2]);
  const gn = groupNorm64([], 2, 4, 0, 2, undefined, undefined, 1e-5);
  assert.deepEqual([...gn.mean], [0, 0, 0, 0]);
  assert.deepEqual([...gn.rstd], [NaN, NaN, NaN, NaN]);
  const none = batchNormGatherStatsWithCounts64({
    mean: [],
    invstd: [],
    counts: [],
    C: 2,
    runningMean: [1, 2],
    momentum: 0.1,
    eps: 1e-5,
  });
  assert.deepEqual([...none.mean], [0, 0]);
  assert.deepEqual([...none.invstd], [NaN, NaN]);
  assert.deepEqual([...none.runningMean!], [1, 2]);
  const infinite = [Infinity, Infinity, Infinity];
  const r = batchNormReduceBackward64([], [], [0, 3, 2], [0, 0, 0], infinite);
  for (const k of ["sumDy", "sumDyXmu", "gradWeight", "gradBias"] as const) {
    assert.deepEqual([...r[k]], [0, 0, 0], k);
  }
  const b = batchNormBackwardAt64([], [], [2, 3, 0], undefined, [0, 0, 0], infinite, true);
  assert.deepEqual([...b.gradWeight], [0, 0, 0]);
  assert.deepEqual([...b.gradBias], [0, 0, 0]);
  const g = groupNormBackward64([], [], [0, 0], [1, 1], undefined, 2, 4, 0, 1);
  assert.deepEqual([...g.gradGamma], [0, 0, 0, 0]);
  assert.deepEqual([...g.gradBeta], [0, 0, 0, 0]);
});
