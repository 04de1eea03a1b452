/**
 * Properties of the BatchNorm forward family on every backend: batchNormStats,
 * batchNormGatherStatsWithCounts (running statistics included), batchNormElemt and batchNorm
 * (training and evaluation, running statistics, momentum) equal the float64 oracle over
 * random shapes (ranks 2-8, dims 0-5), layouts, dtypes (mixed where the op allows it) and
 * eps, including the documented empty-batch values; what the chip refuses is refused with
 * 161002 naming the SoC, and training on one value per channel is refused with 161002.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { batchNorm } from "../../src/ops/batch_norm.ts";
import { batchNormElemt } from "../../src/ops/batch_norm_elemt.ts";
import { batchNormGatherStatsWithCounts } from "../../src/ops/batch_norm_gather_stats_with_counts.ts";
import { batchNormStats } from "../../src/ops/batch_norm_stats.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, chipAccepts } from "../helpers/backends.ts";
import {
  batchNorm64,
  batchNormElemt64,
  batchNormGatherStatsWithCounts64,
  batchNormStats64,
  channelSplit,
} from "../oracle/mod.ts";
import {
  dtypeArb,
  epsArb,
  momentumArb,
  numel,
  property,
  seedArb,
  shapeArb,
  uniform,
} from "./harness.ts";
import { assertGapsUntouched, contiguous, layoutArb, place, placeOutput } from "./layouts.ts";

// ------------------------------------------------------------------ batchNormStats

const statsCase = shapeArb({ minChannels: 1 }).chain((shape) =>
  fc.record({
    shape: fc.constant(shape),
    dtype: dtypeArb,
    eps: epsArb,
    layout: layoutArb(shape.length),
    seed: seedArb,
  })
);

property("batchNormStats equals the oracle", statsCase, (ctx, c) => {
  const input = place(
    uniform(numel(c.shape), c.seed, -2, 3),
    c.shape,
    c.dtype,
    c.layout,
    ctx.device,
  );
  const call = () => batchNormStats({ input: input.tensor, eps: c.eps });
  if (!chipAccepts(ctx.soc, "aclnnBatchNormStats", [c.dtype])) {
    assertChipRefuses(ctx, call, "input");
    return;
  }
  const r = call();
  const e = batchNormStats64(input.values, c.shape, c.eps);
  for (const k of ["mean", "invstd"] as const) {
    assert.equal(r[k].dtype, "float32", `${k} dtype`);
    assert.deepEqual(r[k].shape, [c.shape[1]], `${k} shape`);
    assertClose(r[k], e[k], undefined, k);
  }
});

// ------------------------------------------------------------------ gatherStatsWithCounts

const gatherCase = fc.record({
  /** input: rank 2-8, only its C counts. */
  inputShape: shapeArb({ minChannels: 1 }),
  dtype: dtypeArb,
  /** Per-rank mean/invstd dtype (the outputs follow it). */
  statsDType: dtypeArb,
  countsDType: dtypeArb,
  runningDType: dtypeArb,
  /** Per-rank counts; a rank may hold 0 elements. W = 0 is "no rank". */
  counts: fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 0, maxLength: 4 }),
  runningMean: fc.boolean(),
  runningVar: fc.boolean(),
  momentum: momentumArb,
  eps: epsArb,
  seed: seedArb,
});

property("batchNormGatherStatsWithCounts equals the oracle", gatherCase, (ctx, c) => {
  const d = ctx.device;
  const C = c.inputShape[1];
  const W = c.counts.length;
  // At least two elements overall (the unbiased running variance divides by n - 1), and a
  // first rank that is not empty (a leading rank of count 0 has its own test:
  // tests/ops/batch_norm_gather_stats_with_counts.test.ts "batchNormGatherStatsWithCounts: a
  // rank of count 0 contributes nothing, also first"); here later ranks may be empty.
  const counts = W > 0 && (c.counts[0] === 0 || c.counts.reduce((a, b) => a + b, 0) < 2)
    ? c.counts.map((v, w) => (w === 0 ? v + 2 : v))
    : c.counts;
  const input = place(
    new Float64Array(numel(c.inputShape)),
    c.inputShape,
    c.dtype,
    contiguous(c.inputShape.length),
    d,
  );
  // Per-rank statistics as batchNormStats makes them: var_w >= 0, invstd = 1/sqrt(var + eps).
  const varW = uniform(W * C, c.seed + 1, 0.1, 3);
  const mean = place(uniform(W * C, c.seed, -2, 2), [W, C], c.statsDType, contiguous(2), d);
  const invstd = place(
    varW.map((v) => 1 / Math.sqrt(v + c.eps)),
    [W, C],
    c.statsDType,
    contiguous(2),
    d,
  );
  const countsT = place(counts, [W], c.countsDType, contiguous(1), d);
  const running = (on: boolean, seed: number, lo: number, hi: number) =>
    on ? place(uniform(C, seed, lo, hi), [C], c.runningDType, contiguous(1), d) : undefined;
  const runningMean = running(c.runningMean, c.seed + 2, -1, 1);
  const runningVar = running(c.runningVar, c.seed + 3, 0.5, 2);
  const call = () =>
    batchNormGatherStatsWithCounts({
      input: input.tensor,
      mean: mean.tensor,
      invstd: invstd.tensor,
      counts: countsT.tensor,
      runningMean: runningMean?.tensor,
      runningVar: runningVar?.tensor,
      momentum: c.momentum,
      eps: c.eps,
    });
  const dtypes = [
    c.dtype,
    c.statsDType,
    c.countsDType,
    runningMean && c.runningDType,
    runningVar && c.runningDType,
  ];
  if (!chipAccepts(ctx.soc, "aclnnBatchNormGatherStatsWithCounts", dtypes)) {
    assertChipRefuses(ctx, call);
    return;
  }
  const r = call();
  const e = batchNormGatherStatsWithCounts64({
    mean: mean.values,
    invstd: invstd.values,
    counts: countsT.values,
    C,
    runningMean: runningMean?.values,
    runningVar: runningVar?.values,
    momentum: c.momentum,
    eps: c.eps,
  });
  for (const k of ["mean", "invstd"] as const) {
    assert.equal(r[k].dtype, c.statsDType, `${k} dtype (the per-rank mean's)`);
    assert.deepEqual(r[k].shape, [C], `${k} shape`);
    assertClose(r[k], e[k], undefined, `global ${k}`);
  }
  if (runningMean) assertClose(runningMean.tensor, e.runningMean!, undefined, "runningMean");
  if (runningVar) assertClose(runningVar.tensor, e.runningVar!, undefined, "runningVar");
});

// ------------------------------------------------------------------ batchNormElemt

const elemtCase = shapeArb({ minChannels: 1 }).chain((shape) =>
  fc.record({
    shape: fc.constant(shape),
    dtype: dtypeArb,
    weight: fc.boolean(),
    bias: fc.boolean(),
    eps: epsArb,
    inputLayout: layoutArb(shape.length),
    meanLayout: layoutArb(1),
    outputLayout: fc.option(layoutArb(shape.length), { nil: undefined }),
    seed: seedArb,
  })
);

property("batchNormElemt equals the oracle", elemtCase, (ctx, c) => {
  const d = ctx.device;
  const C = c.shape[1];
  const input = place(uniform(numel(c.shape), c.seed, -2, 3), c.shape, c.dtype, c.inputLayout, d);
  const one = (seed: number, lo: number, hi: number, layout = contiguous(1)) =>
    place(uniform(C, seed, lo, hi), [C], c.dtype, layout, d);
  const mean = one(c.seed + 1, -1, 1, c.meanLayout);
  const invstd = one(c.seed + 2, 0.5, 2);
  const weight = c.weight ? one(c.seed + 3, 0.5, 1.5) : undefined;
  const bias = c.bias ? one(c.seed + 4, -1, 1) : undefined;
  const out = c.outputLayout ? placeOutput(c.shape, c.dtype, c.outputLayout, d) : undefined;
  const call = () =>
    batchNormElemt({
      input: input.tensor,
      mean: mean.tensor,
      invstd: invstd.tensor,
      weight: weight?.tensor,
      bias: bias?.tensor,
      eps: c.eps,
      out: out ? { output: out.tensor } : undefined,
    });
  if (!chipAccepts(ctx.soc, "aclnnBatchNormElemt", [c.dtype])) {
    assertChipRefuses(ctx, call, "input");
    return;
  }
  const y = call();
  assert.equal(y.dtype, c.dtype);
  assert.deepEqual(y.shape, c.shape);
  if (out) {
    assert.equal(y, out.tensor, "out.output is the result");
    assertGapsUntouched(out, "out.output");
  }
  const e = batchNormElemt64({
    x: input.values,
    shape: c.shape,
    mean: mean.values,
    invstd: invstd.values,
    weight: weight?.values,
    bias: bias?.values,
  });
  assertClose(y, e, undefined, "output");
});

// ------------------------------------------------------------------ batchNorm

const batchNormCase = shapeArb().chain((shape) =>
  dtypeArb.chain((dtype) =>
    fc.record({
      shape: fc.constant(shape),
      dtype: fc.constant(dtype),
      /** weight/bias/running statistics dtype. */
      paramDType: fc.constantFrom(dtype, "float32" as DType),
      training: fc.boolean(),
      weight: fc.boolean(),
      bias: fc.boolean(),
      runningMean: fc.boolean(),
      runningVar: fc.boolean(),
      momentum: momentumArb,
      eps: epsArb,
      inputLayout: layoutArb(shape.length),
      outputLayout: fc.option(layoutArb(shape.length), { nil: undefined }),
      seed: seedArb,
    })
  )
);

property("batchNorm (training and eval, running statistics) equals the oracle", batchNormCase, (
  ctx,
  c,
) => {
  const d = ctx.device;
  const C = c.shape[1];
  const input = place(uniform(numel(c.shape), c.seed, -2, 3), c.shape, c.dtype, c.inputLayout, d);
  const one = (on: boolean, seed: number, lo: number, hi: number) =>
    on ? place(uniform(C, seed, lo, hi), [C], c.paramDType, contiguous(1), d) : undefined;
  const weight = one(c.weight, c.seed + 1, 0.5, 1.5);
  const bias = one(c.bias, c.seed + 2, -1, 1);
  const runningMean = one(c.runningMean, c.seed + 3, -1, 1);
  const runningVar = one(c.runningVar, c.seed + 4, 0.25, 2);
  const out = c.outputLayout ? placeOutput(c.shape, c.dtype, c.outputLayout, d) : undefined;
  const call = () =>
    batchNorm({
      input: input.tensor,
      weight: weight?.tensor,
      bias: bias?.tensor,
      runningMean: runningMean?.tensor,
      runningVar: runningVar?.tensor,
      training: c.training,
      momentum: c.momentum,
      eps: c.eps,
      out: out ? { output: out.tensor } : undefined,
    });
  const params = [weight, bias, runningMean, runningVar].some((t) => t) ? c.paramDType : undefined;
  if (!chipAccepts(ctx.soc, "aclnnBatchNorm", [c.dtype, params])) {
    assertChipRefuses(ctx, call);
    return;
  }
  if (c.training && c.shape[1] > 0 && channelSplit(c.shape).M === 1) {
    // The running variance would divide by M - 1 = 0: refused, nothing written.
    assertAclnnError(call, 161002, "input");
    if (runningVar) assertClose(runningVar.tensor, runningVar.values, undefined, "untouched");
    return;
  }
  const r = call();
  const e = batchNorm64({
    x: input.values,
    shape: c.shape,
    weight: weight?.values,
    bias: bias?.values,
    runningMean: runningMean?.values,
    runningVar: runningVar?.values,
    training: c.training,
    momentum: c.momentum,
    eps: c.eps,
  });
  assert.equal(r.output.dtype, c.dtype);
  assert.deepEqual(r.output.shape, c.shape);
  if (out) {
    assert.equal(r.output, out.tensor, "out.output is the result");
    assertGapsUntouched(out, "out.output");
  }
  assertClose(r.output, e.output, undefined, "output");
  const saveShape = c.training ? [C] : [0];
  for (const k of ["saveMean", "saveInvstd"] as const) {
    assert.deepEqual(r[k].shape, saveShape, `${k} shape`);
    if (c.training) assert.equal(r[k].dtype, "float32", `${k} dtype`);
    assertClose(r[k], e[k], undefined, k);
  }
  if (runningMean) assertClose(runningMean.tensor, e.runningMean!, undefined, "runningMean");
  if (runningVar) assertClose(runningVar.tensor, e.runningVar!, undefined, "runningVar");
});
