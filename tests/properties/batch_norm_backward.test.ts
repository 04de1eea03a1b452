/**
 * Properties of the BatchNorm backward family on every backend: batchNormReduceBackward,
 * batchNormBackward (training and evaluation), batchNormElemtBackward and the InfiniOp
 * descriptor's compute equal the float64 oracle over random shapes (ranks 2-8, dims 0-5),
 * layouts, dtypes (mixed where the op allows it), masks and eps; what the chip refuses is
 * refused with 161002 naming the SoC.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { batchNormBackward } from "../../src/ops/batch_norm_backward.ts";
import { batchNormElemtBackward } from "../../src/ops/batch_norm_elemt_backward.ts";
import { batchNormReduceBackward } from "../../src/ops/batch_norm_reduce_backward.ts";
import { createBatchNormBackwardDescriptor } from "../../src/ops/infiniop_batch_norm_backward.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import type { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, chipAccepts } from "../helpers/backends.ts";
import {
  batchNormBackward64,
  batchNormElemtBackward64,
  batchNormReduceBackward64,
  batchStats64,
  channelSplit,
  infiniopBatchNormBackward64,
  invstdOf,
} from "../oracle/mod.ts";
import { dtypeArb, epsArb, numel, property, seedArb, shapeArb, uniform } from "./harness.ts";
import {
  assertGapsUntouched,
  contiguous,
  type Layout,
  layoutArb,
  place,
  placeOutput,
} from "./layouts.ts";

const maskArb = fc.tuple(fc.boolean(), fc.boolean(), fc.boolean());
/** A per-channel dtype: the data's or float32 (mixed precision), or any float. */
const orFloat32 = (dtype: DType) => fc.constantFrom(dtype, "float32" as DType);

// ------------------------------------------------------------------ batchNormReduceBackward

const reduceCase = shapeArb({ minChannels: 1 }).chain((shape) =>
  dtypeArb.chain((dtype) =>
    fc.record({
      shape: fc.constant(shape),
      dtype: fc.constant(dtype),
      statsDType: dtypeArb,
      weightDType: fc.option(dtypeArb, { nil: undefined }),
      gradOutLayout: layoutArb(shape.length),
      inputLayout: layoutArb(shape.length),
      meanLayout: layoutArb(1),
      /** mean = the batch mean (else random values). */
      batchMean: fc.boolean(),
      masks: maskArb,
      seed: seedArb,
    })
  )
);

property("batchNormReduceBackward equals the oracle", reduceCase, (ctx, c) => {
  const d = ctx.device;
  const C = c.shape[1];
  const n = numel(c.shape);
  const gradOut = place(uniform(n, c.seed), c.shape, c.dtype, c.gradOutLayout, d);
  const input = place(uniform(n, c.seed + 1, -2, 3), c.shape, c.dtype, c.inputLayout, d);
  const meanValues = c.batchMean
    ? batchStats64(input.values, c.shape).mean
    : uniform(C, c.seed + 2);
  const mean = place(meanValues, [C], c.statsDType, c.meanLayout, d);
  const invstd = place(uniform(C, c.seed + 3, 0.5, 2), [C], c.statsDType, contiguous(1), d);
  const weight = c.weightDType === undefined
    ? undefined
    : place(uniform(C, c.seed + 4, 0.5, 1.5), [C], c.weightDType, contiguous(1), d);
  const [inputG, weightG, biasG] = c.masks;
  const call = () =>
    batchNormReduceBackward({
      gradOut: gradOut.tensor,
      input: input.tensor,
      mean: mean.tensor,
      invstd: invstd.tensor,
      weight: weight?.tensor,
      inputG,
      weightG,
      biasG,
    });
  const dtypes = [c.dtype, c.statsDType, c.weightDType];
  if (!chipAccepts(ctx.soc, "aclnnBatchNormReduceBackward", dtypes)) {
    assertChipRefuses(ctx, call);
    return;
  }
  const r = call();
  const e = batchNormReduceBackward64(
    gradOut.values,
    input.values,
    c.shape,
    mean.values,
    invstd.values,
  );
  const gradDType = c.weightDType ?? c.statsDType;
  const expect = (
    got: Tensor | null,
    want: Float64Array,
    on: boolean,
    dtype: DType,
    what: string,
  ) => {
    if (!on) return assert.equal(got, null, `${what} is masked off`);
    assert.ok(got, `${what} is computed`);
    assert.equal(got.dtype, dtype, `${what} dtype`);
    assert.deepEqual(got.shape, [C], `${what} shape`);
    assertClose(got, want, undefined, what);
  };
  expect(r.sumDy, e.sumDy, inputG, c.statsDType, "sumDy");
  expect(r.sumDyXmu, e.sumDyXmu, inputG, c.statsDType, "sumDyXmu");
  expect(r.gradWeight, e.gradWeight, weightG, gradDType, "gradWeight");
  expect(r.gradBias, e.gradBias, biasG, gradDType, "gradBias");
});

// ------------------------------------------------------------------ batchNormBackward

const backwardCase = shapeArb().chain((shape) =>
  dtypeArb.chain((dtype) =>
    fc.record({
      shape: fc.constant(shape),
      dtype: fc.constant(dtype),
      training: fc.boolean(),
      /** weight/runningMean/runningVar dtype. */
      paramDType: orFloat32(dtype),
      /** saveMean/saveInvstd dtype. */
      saveDType: orFloat32(dtype),
      weight: fc.boolean(),
      running: fc.boolean(),
      save: fc.constantFrom("batch", "random", "absent"),
      mask: maskArb,
      eps: epsArb,
      gradOutLayout: layoutArb(shape.length),
      inputLayout: layoutArb(shape.length),
      weightLayout: layoutArb(1),
      /** A preallocated gradInput in this layout (else allocated by the op). */
      gradInputLayout: fc.option(layoutArb(shape.length), { nil: undefined }),
      seed: seedArb,
    })
  )
);

property("batchNormBackward (training and eval) equals the oracle", backwardCase, (ctx, c) => {
  const d = ctx.device;
  const C = c.shape[1];
  const n = numel(c.shape);
  const gradOut = place(uniform(n, c.seed), c.shape, c.dtype, c.gradOutLayout, d);
  const input = place(uniform(n, c.seed + 1, -2, 3), c.shape, c.dtype, c.inputLayout, d);
  const perChannel = (values: Float64Array, dtype: DType, layout: Layout = contiguous(1)) =>
    place(values, [C], dtype, layout, d);
  const weight = c.weight
    ? perChannel(uniform(C, c.seed + 2, 0.5, 1.5), c.paramDType, c.weightLayout)
    : undefined;
  const runningMean = c.running ? perChannel(uniform(C, c.seed + 3), c.paramDType) : undefined;
  const runningVar = c.running
    ? perChannel(uniform(C, c.seed + 4, 0.1, 2), c.paramDType)
    : undefined;
  const batch = batchStats64(input.values, c.shape);
  const saveValues = c.save === "batch"
    ? { mean: batch.mean, invstd: invstdOf(batch.variance, c.eps) }
    : { mean: uniform(C, c.seed + 5), invstd: uniform(C, c.seed + 6, 0.5, 2) };
  // An empty batch has no invstd (NaN): the gradients over it are 0 whatever the saves hold.
  // 16-bit saves on a chip that reads the variance from saveInvstd included: the library passes
  // that variance in float32 (tests/ffi/npu_ops.test.ts "backward ops: batchNormBackward with
  // 16-bit saves uses the caller's invstd").
  const saveDType = c.saveDType;
  const saveMean = c.save === "absent" ? undefined : perChannel(saveValues.mean, saveDType);
  const saveInvstd = c.save === "absent"
    ? undefined
    : perChannel(saveValues.invstd.map((v) => Number.isNaN(v) ? 1 : v), saveDType);
  const gradInputOut = c.gradInputLayout && c.mask[0]
    ? placeOutput(c.shape, c.dtype, c.gradInputLayout, d)
    : undefined;
  const call = () =>
    batchNormBackward({
      gradOut: gradOut.tensor,
      input: input.tensor,
      weight: weight?.tensor,
      runningMean: runningMean?.tensor,
      runningVar: runningVar?.tensor,
      saveMean: saveMean?.tensor,
      saveInvstd: saveInvstd?.tensor,
      training: c.training,
      eps: c.eps,
      outputMask: c.mask,
      out: gradInputOut ? { gradInput: gradInputOut.tensor } : undefined,
    });
  const dtypes = [
    c.dtype,
    weight && c.paramDType,
    runningMean && c.paramDType,
    saveMean && saveDType,
  ];
  if (!chipAccepts(ctx.soc, "aclnnBatchNormBackward", dtypes)) {
    assertChipRefuses(ctx, call);
    return;
  }
  const r = call();
  const e = batchNormBackward64({
    dy: gradOut.values,
    x: input.values,
    shape: c.shape,
    weight: weight?.values,
    runningMean: runningMean?.values,
    runningVar: runningVar?.values,
    saveMean: saveMean?.values,
    saveInvstd: saveInvstd?.values,
    training: c.training,
    eps: c.eps,
  });
  const gradDType = weight ? c.paramDType : c.dtype;
  if (c.mask[0]) {
    assert.ok(r.gradInput, "gradInput is computed");
    assert.equal(r.gradInput.dtype, c.dtype, "gradInput dtype");
    assert.deepEqual(r.gradInput.shape, c.shape, "gradInput shape");
    if (gradInputOut) {
      assert.equal(r.gradInput, gradInputOut.tensor, "out.gradInput is the result");
      assertGapsUntouched(gradInputOut, "out.gradInput");
    }
    assertClose(r.gradInput, e.gradInput, undefined, "gradInput");
  } else assert.equal(r.gradInput, null, "gradInput is masked off");
  for (const [k, on] of [["gradWeight", c.mask[1]], ["gradBias", c.mask[2]]] as const) {
    const got = r[k];
    if (!on) {
      assert.equal(got, null, `${k} is masked off`);
      continue;
    }
    assert.ok(got, `${k} is computed`);
    assert.equal(got.dtype, gradDType, `${k} dtype`);
    assertClose(got, e[k], undefined, k);
  }
});

// ------------------------------------------------------------------ batchNormElemtBackward

const elemtBackwardCase = shapeArb({ minChannels: 1 }).chain((shape) =>
  fc.record({
    shape: fc.constant(shape),
    dtype: dtypeArb,
    /** mean/invstd/weight/sumDy/sumDyXmu dtypes (any float each). */
    statsDType: dtypeArb,
    sumsDType: dtypeArb,
    weight: fc.option(dtypeArb, { nil: undefined }),
    counterDType: fc.constantFrom<DType>("int32", "float32", "float16"),
    counts: fc.array(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 3 }),
    gradOutLayout: layoutArb(shape.length),
    inputLayout: layoutArb(shape.length),
    gradInputLayout: fc.option(layoutArb(shape.length), { nil: undefined }),
    seed: seedArb,
  })
);

property("batchNormElemtBackward equals the oracle", elemtBackwardCase, (ctx, c) => {
  const d = ctx.device;
  const C = c.shape[1];
  const n = numel(c.shape);
  const gradOut = place(uniform(n, c.seed), c.shape, c.dtype, c.gradOutLayout, d);
  const input = place(uniform(n, c.seed + 1, -2, 3), c.shape, c.dtype, c.inputLayout, d);
  const one = (seed: number, dtype: DType, lo = -1, hi = 1) =>
    place(uniform(C, seed, lo, hi), [C], dtype, contiguous(1), d);
  const mean = one(c.seed + 2, c.statsDType);
  const invstd = one(c.seed + 3, c.statsDType, 0.5, 2);
  const weight = c.weight ? one(c.seed + 4, c.weight, 0.5, 1.5) : undefined;
  const sumDy = one(c.seed + 5, c.sumsDType, -5, 5);
  const sumDyXmu = one(c.seed + 6, c.sumsDType, -5, 5);
  const counter = place(c.counts, [c.counts.length], c.counterDType, contiguous(1), d);
  const out = c.gradInputLayout ? placeOutput(c.shape, c.dtype, c.gradInputLayout, d) : undefined;
  const call = () =>
    batchNormElemtBackward({
      gradOut: gradOut.tensor,
      input: input.tensor,
      mean: mean.tensor,
      invstd: invstd.tensor,
      weight: weight?.tensor,
      sumDy: sumDy.tensor,
      sumDyXmu: sumDyXmu.tensor,
      counter: counter.tensor,
      out: out ? { gradInput: out.tensor } : undefined,
    });
  const dtypes = [c.dtype, c.statsDType, c.sumsDType, c.weight];
  if (!chipAccepts(ctx.soc, "aclnnBatchNormElemtBackward", dtypes)) {
    assertChipRefuses(ctx, call);
    return;
  }
  const gradInput = call();
  assert.equal(gradInput.dtype, c.dtype);
  assert.deepEqual(gradInput.shape, c.shape);
  if (out) {
    assert.equal(gradInput, out.tensor, "out.gradInput is the result");
    assertGapsUntouched(out, "out.gradInput");
  }
  const e = batchNormElemtBackward64({
    dy: gradOut.values,
    x: input.values,
    shape: c.shape,
    mean: mean.values,
    invstd: invstd.values,
    weight: weight?.values,
    sumDy: sumDy.values,
    sumDyXmu: sumDyXmu.values,
    counter: counter.values,
  });
  assertClose(gradInput, e, undefined, "gradInput");
});

// ------------------------------------------------------------------ InfiniOp descriptor

const infiniopCase = fc.record({
  N: fc.integer({ min: 0, max: 5 }),
  C: fc.integer({ min: 1, max: 5 }),
  L: fc.integer({ min: 0, max: 5 }),
  dtype: dtypeArb,
  /** running statistics: the batch's (the seed's reading) or arbitrary ones. */
  batchStats: fc.boolean(),
  training: fc.option(fc.boolean(), { nil: undefined }),
  eps: fc.option(epsArb, { nil: undefined }),
  inPlace: fc.boolean(),
  gradWeightLayout: layoutArb(1),
  gradBiasLayout: layoutArb(1),
  workspace: fc.boolean(),
  seed: seedArb,
});

property("the InfiniOp descriptor's compute equals the oracle", infiniopCase, (ctx, c) => {
  const d = ctx.device;
  const { N, C, L, dtype } = c;
  const shape = [N, C, L];
  const data = contiguous(3);
  const input = place(uniform(N * C * L, c.seed, -2, 3), shape, dtype, data, d);
  const gradOutput = place(uniform(N * C * L, c.seed + 1), shape, dtype, data, d);
  const weight = place(uniform(C, c.seed + 2, 0.5, 1.5), [C], dtype, contiguous(1), d);
  const batch = batchStats64(input.values, shape);
  const usable = c.batchStats && channelSplit(shape).M >= 2;
  const runningMean = place(
    usable ? batch.mean : uniform(C, c.seed + 3),
    [C],
    dtype,
    contiguous(1),
    d,
  );
  // Var of the batch plus a margin: with eps 0 a zero variance would make invstd infinite.
  const varValues = usable ? batch.variance.map((v) => v + 0.05) : uniform(C, c.seed + 4, 0.25, 2);
  const runningVar = place(varValues, [C], dtype, contiguous(1), d);
  const gradWeight = placeOutput([C], dtype, c.gradWeightLayout, d);
  const gradBias = placeOutput([C], dtype, c.gradBiasLayout, d);
  const gradInput = c.inPlace ? gradOutput : placeOutput(shape, dtype, data, d);
  const tensors = {
    gradInput: gradInput.tensor,
    gradWeight: gradWeight.tensor,
    gradBias: gradBias.tensor,
    input: input.tensor,
    gradOutput: gradOutput.tensor,
    weight: weight.tensor,
    runningMean: runningMean.tensor,
    runningVar: runningVar.tensor,
  };
  const create = () =>
    createBatchNormBackwardDescriptor({ ...tensors, eps: c.eps, training: c.training });
  if (!chipAccepts(ctx.soc, "aclnnBatchNormBackward", [dtype])) {
    // The descriptor is made from descriptions; the chip refuses at compute.
    using desc = create();
    assertChipRefuses(ctx, () => desc.compute(tensors));
    return;
  }
  using desc = create();
  assert.equal(desc.eps, c.eps ?? 0);
  const e = infiniopBatchNormBackward64({
    dy: gradOutput.values,
    x: input.values,
    shape,
    weight: weight.values,
    runningMean: runningMean.values,
    runningVar: runningVar.values,
    eps: c.eps,
    training: c.training,
  });
  desc.compute({
    ...tensors,
    workspace: c.workspace ? new Uint8Array(desc.workspaceSize) : undefined,
  });
  assertClose(
    gradInput.tensor,
    e.gradInput,
    undefined,
    c.inPlace ? "gradInput (in place)" : "gradInput",
  );
  assertClose(gradWeight.tensor, e.gradWeight, undefined, "gradWeight");
  assertClose(gradBias.tensor, e.gradBias, undefined, "gradBias");
  assertGapsUntouched(gradWeight, "gradWeight");
  assertGapsUntouched(gradBias, "gradBias");
});
