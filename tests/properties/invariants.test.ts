/**
 * Invariants that hold whatever the data, checked on every backend without the oracle's
 * formulas (only sums of the outputs and inputs):
 * - gradBias (batchNormBackward, batchNormReduceBackward, the InfiniOp descriptor) and
 *   gradBeta (groupNormBackward) are the per-channel sums of gradOut;
 * - in training, BatchNorm's gradInput sums to ~0 per channel when the saved statistics are
 *   the batch's (and GroupNorm's per (n, group) with gamma = 1);
 * - batchNormStats of (x - mean) * invstd, normalised with batchNormElemt at x's own
 *   statistics, has mean ~0 and variance var / (var + eps) ~1;
 * - batchNormGatherStatsWithCounts of one rank returns that rank's statistics.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { batchNormBackward } from "../../src/ops/batch_norm_backward.ts";
import { batchNormElemt } from "../../src/ops/batch_norm_elemt.ts";
import { batchNormGatherStatsWithCounts } from "../../src/ops/batch_norm_gather_stats_with_counts.ts";
import { batchNormReduceBackward } from "../../src/ops/batch_norm_reduce_backward.ts";
import { batchNormStats } from "../../src/ops/batch_norm_stats.ts";
import { groupNormBackward } from "../../src/ops/group_norm_backward.ts";
import { createBatchNormBackwardDescriptor } from "../../src/ops/infiniop_batch_norm_backward.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { chipAccepts } from "../helpers/backends.ts";
import { invariantTolerance, toleranceFor } from "../helpers/tolerance.ts";
import { channelSplit, eachElement } from "../oracle/geometry.ts";
import { dtypeArb, epsArb, numel, property, seedArb, shapeArb, uniform } from "./harness.ts";
import { contiguous, layoutArb, place } from "./layouts.ts";

/** Per-channel sums of (N, C, *) data, and the per-channel sums of |values|. */
function channelSums(values: ArrayLike<number>, shape: readonly number[]) {
  const s = channelSplit(shape);
  const sum = new Float64Array(s.C);
  const abs = new Float64Array(s.C);
  eachElement(s, (i, c) => {
    sum[c] += values[i];
    abs[c] += Math.abs(values[i]);
  });
  return { sum, abs };
}

/** |sum| <= the invariant tolerance of n terms, relative to the sum of |terms|. */
function assertNearZero(sum: number, absSum: number, n: number, what: string): void {
  const t = invariantTolerance(n);
  assert.ok(
    Math.abs(sum) <= t.atol + t.rtol * absSum,
    `${what}: sum ${sum} is not ~0 (sum of |terms| ${absSum}, ${n} terms)`,
  );
}

const sumCase = shapeArb({ minChannels: 1 }).chain((shape) =>
  fc.record({
    shape: fc.constant(shape),
    dtype: dtypeArb,
    layout: layoutArb(shape.length),
    eps: epsArb,
    seed: seedArb,
  })
);

property("invariant: gradBias = gradBeta = the per-channel sum of gradOut", sumCase, (ctx, c) => {
  const d = ctx.device;
  const n = numel(c.shape);
  const C = c.shape[1];
  const f32 = "float32" as const;
  const gradOut = place(uniform(n, c.seed), c.shape, c.dtype, c.layout, d);
  const input = place(
    uniform(n, c.seed + 1, -2, 3),
    c.shape,
    c.dtype,
    contiguous(c.shape.length),
    d,
  );
  const stat = (seed: number, lo: number, hi: number) =>
    place(uniform(C, seed, lo, hi), [C], f32, contiguous(1), d).tensor;
  const expected = channelSums(gradOut.values, c.shape).sum;
  const tol = toleranceFor(f32);
  // float32 statistics: gradBias/gradBeta are float32 sums of the gradOut values.
  if (chipAccepts(ctx.soc, "aclnnBatchNormBackward", [c.dtype])) {
    for (const training of [true, false]) {
      const r = batchNormBackward({
        gradOut: gradOut.tensor,
        input: input.tensor,
        weight: stat(c.seed + 2, 0.5, 1.5),
        saveMean: stat(c.seed + 3, -1, 1),
        saveInvstd: stat(c.seed + 4, 0.5, 2),
        training,
        eps: c.eps,
        outputMask: [false, false, true],
      });
      assertClose(r.gradBias, expected, tol, `batchNormBackward training=${training} gradBias`);
    }
  }
  if (chipAccepts(ctx.soc, "aclnnBatchNormReduceBackward", [c.dtype])) {
    const r = batchNormReduceBackward({
      gradOut: gradOut.tensor,
      input: input.tensor,
      mean: stat(c.seed + 3, -1, 1),
      invstd: stat(c.seed + 4, 0.5, 2),
      inputG: true,
      weightG: false,
      biasG: true,
    });
    assertClose(r.gradBias, expected, tol, "batchNormReduceBackward gradBias");
    assertClose(r.sumDy, expected, tol, "batchNormReduceBackward sumDy");
  }
  const G = 1;
  const mixed = c.dtype !== f32;
  if (chipAccepts(ctx.soc, "aclnnGroupNormBackward", [c.dtype, f32], { mixedPrecision: mixed })) {
    const N = c.shape[0];
    const stats = (seed: number, lo: number, hi: number) =>
      place(uniform(N * G, seed, lo, hi), [N, G], f32, contiguous(2), d).tensor;
    const r = groupNormBackward({
      gradOut: gradOut.tensor,
      input: input.tensor,
      mean: stats(c.seed + 5, -1, 1),
      rstd: stats(c.seed + 6, 0.5, 2),
      group: G,
      outputMask: [false, false, true],
    });
    assertClose(r.gradBeta, expected, tol, "groupNormBackward gradBeta");
  }
});

const infiniopSumCase = fc.record({
  N: fc.integer({ min: 0, max: 5 }),
  C: fc.integer({ min: 1, max: 5 }),
  L: fc.integer({ min: 0, max: 5 }),
  seed: seedArb,
});

property(
  "invariant: the InfiniOp descriptor's gradBias is the per-channel sum of gradOutput",
  infiniopSumCase,
  (ctx, c) => {
    const d = ctx.device;
    const shape = [c.N, c.C, c.L];
    const n = numel(shape);
    const gradOutput = place(uniform(n, c.seed), shape, "float32", contiguous(3), d);
    const per = (seed: number, lo: number, hi: number) =>
      place(uniform(c.C, seed, lo, hi), [c.C], "float32", contiguous(1), d).tensor;
    const t = {
      gradInput: Tensor.zeros(shape, "float32", d),
      gradWeight: Tensor.zeros([c.C], "float32", d),
      gradBias: Tensor.zeros([c.C], "float32", d),
      input: place(uniform(n, c.seed + 1), shape, "float32", contiguous(3), d).tensor,
      gradOutput: gradOutput.tensor,
      weight: per(c.seed + 2, 0.5, 1.5),
      runningMean: per(c.seed + 3, -1, 1),
      runningVar: per(c.seed + 4, 0.5, 2),
    };
    using desc = createBatchNormBackwardDescriptor(t);
    desc.compute(t);
    assertClose(t.gradBias, channelSums(gradOutput.values, shape).sum, undefined, "gradBias");
  },
);

const trainingCase = shapeArb({ minChannels: 1 }).chain((shape) =>
  fc.record({
    shape: fc.constant(shape),
    layout: layoutArb(shape.length),
    weight: fc.boolean(),
    eps: epsArb,
    seed: seedArb,
  })
);

property(
  "invariant: training gradInput sums to ~0 per channel at the batch's statistics",
  trainingCase,
  (ctx, c) => {
    const d = ctx.device;
    const n = numel(c.shape);
    const C = c.shape[1];
    const input = place(uniform(n, c.seed, -2, 3), c.shape, "float32", c.layout, d);
    const gradOut = place(
      uniform(n, c.seed + 1),
      c.shape,
      "float32",
      contiguous(c.shape.length),
      d,
    );
    // The batch's statistics, as the backend computes them (what a training step feeds back).
    const stats = batchNormStats({ input: input.tensor, eps: c.eps });
    const weight = c.weight
      ? place(uniform(C, c.seed + 2, 0.5, 1.5), [C], "float32", contiguous(1), d).tensor
      : undefined;
    const r = batchNormBackward({
      gradOut: gradOut.tensor,
      input: input.tensor,
      weight,
      saveMean: stats.mean,
      saveInvstd: stats.invstd,
      training: true,
      eps: c.eps,
      outputMask: [true, false, false],
    });
    const M = channelSplit(c.shape).M;
    if (M === 0) return;
    const { sum, abs } = channelSums(r.gradInput!.toFloat64Array(), c.shape);
    // The terms of sum(gradInput) are w * invstd * (dy - mean(dy) - xhat * k): bound the
    // rounding by the sum of |w * invstd * dy| terms (what the cancellation started from).
    const invstd = stats.invstd.toFloat64Array();
    const w = weight?.toFloat64Array();
    const dyAbs = channelSums(gradOut.values.map(Math.abs), c.shape).sum;
    for (let ch = 0; ch < C; ch++) {
      const scale = Math.abs((w ? w[ch] : 1) * invstd[ch]) * 3 * dyAbs[ch] + abs[ch];
      assertNearZero(sum[ch], scale, M, `channel ${ch}`);
    }
  },
);

property(
  "invariant: GroupNorm gradInput sums to ~0 per (n, group) at the forward's statistics",
  trainingCase,
  (ctx, c) => {
    const d = ctx.device;
    const [N, C] = c.shape;
    const HxW = numel(c.shape.slice(2));
    if (N * C * HxW === 0) return;
    const n = numel(c.shape);
    const input = place(uniform(n, c.seed, -2, 3), c.shape, "float32", c.layout, d);
    const gradOut = place(
      uniform(n, c.seed + 1),
      c.shape,
      "float32",
      contiguous(c.shape.length),
      d,
    );
    const G = 1;
    // group = 1: one group per sample; its statistics in float64 (the forward's).
    const mean = new Float64Array(N);
    const rstd = new Float64Array(N);
    const size = C * HxW;
    for (let k = 0; k < N; k++) {
      const part = input.values.subarray(k * size, (k + 1) * size);
      const m = part.reduce((a, b) => a + b, 0) / size;
      mean[k] = m;
      rstd[k] = 1 / Math.sqrt(part.reduce((a, b) => a + (b - m) ** 2, 0) / size + c.eps);
    }
    const r = groupNormBackward({
      gradOut: gradOut.tensor,
      input: input.tensor,
      mean: place(mean, [N, G], "float32", contiguous(2), d).tensor,
      rstd: place(rstd, [N, G], "float32", contiguous(2), d).tensor,
      group: G,
      outputMask: [true, false, false],
    });
    const gi = r.gradInput!.toFloat64Array();
    for (let k = 0; k < N; k++) {
      const part = gi.subarray(k * size, (k + 1) * size);
      const sum = part.reduce((a, b) => a + b, 0);
      let dyAbs = 0;
      for (let i = k * size; i < (k + 1) * size; i++) dyAbs += Math.abs(gradOut.values[i]);
      const abs = part.reduce((a, b) => a + Math.abs(b), 0);
      assertNearZero(sum, rstd[k] * 3 * dyAbs + abs, size, `sample ${k}`);
    }
  },
);

const normalisedCase = shapeArb({ minChannels: 1 }).chain((shape) =>
  fc.record({
    shape: fc.constant(shape),
    layout: layoutArb(shape.length),
    seed: seedArb,
  })
);

property(
  "invariant: batchNormStats of (x - mean) * invstd has mean ~0 and variance var/(var+eps) ~1",
  normalisedCase,
  (ctx, c) => {
    const d = ctx.device;
    const M = channelSplit(c.shape).M;
    if (M < 2) return;
    const eps = 1e-5;
    const input = place(uniform(numel(c.shape), c.seed, -2, 3), c.shape, "float32", c.layout, d);
    const s = batchNormStats({ input: input.tensor, eps });
    const y = batchNormElemt({ input: input.tensor, mean: s.mean, invstd: s.invstd, eps });
    const t = batchNormStats({ input: y, eps });
    const invstd = s.invstd.toFloat64Array();
    const variance = invstd.map((v) => 1 / (v * v) - eps);
    const tol = invariantTolerance(M);
    // mean(y) = (mean(x) - mean) * invstd ~ 0; var(y) = var * invstd^2 = var / (var + eps).
    assertClose(t.mean, new Float64Array(invstd.length), tol, "mean of the normalised data");
    const ratio = variance.map((v) => v / (v + eps));
    const varY = t.invstd.toFloat64Array().map((v) => 1 / (v * v) - eps);
    assertClose(varY, ratio, tol, "variance of the normalised data");
    for (let ch = 0; ch < ratio.length; ch++) {
      // ~1 unless the channel's own variance is comparable to eps.
      if (variance[ch] > 1e3 * eps) assert.ok(Math.abs(varY[ch] - 1) < 2e-3, `var ${varY[ch]}`);
    }
  },
);

property(
  "invariant: batchNormGatherStatsWithCounts of one rank returns that rank's statistics",
  statsGatherCase(),
  (ctx, c) => {
    const d = ctx.device;
    const M = channelSplit(c.shape).M;
    if (M === 0) return;
    const input = place(uniform(numel(c.shape), c.seed, -2, 3), c.shape, "float32", c.layout, d);
    const s = batchNormStats({ input: input.tensor, eps: c.eps });
    const C = c.shape[1];
    const g = batchNormGatherStatsWithCounts({
      input: input.tensor,
      mean: s.mean.reshape([1, C]),
      invstd: s.invstd.reshape([1, C]),
      counts: place([M], [1], "float32", contiguous(1), d).tensor,
      momentum: 0.1,
      eps: c.eps,
    });
    const tol = toleranceFor("float32");
    assertClose(g.mean, s.mean, tol, "gathered mean");
    assertClose(g.invstd, s.invstd, tol, "gathered invstd");
  },
);

function statsGatherCase() {
  return shapeArb({ minChannels: 1 }).chain((shape) =>
    fc.record({
      shape: fc.constant(shape),
      layout: layoutArb(shape.length),
      eps: epsArb,
      seed: seedArb,
    })
  );
}
