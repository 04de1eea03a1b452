/**
 * Properties of GroupNorm on every backend: groupNorm and groupNormBackward equal the
 * float64 oracle over random shapes (ranks 2-8, dims 0-5), groups (every divisor of C),
 * layouts, dtypes (fp16/bf16 data with fp32 statistics where the chip allows it), masks and
 * eps; what the chip refuses is refused with 161002 naming the SoC.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { groupNorm } from "../../src/ops/group_norm.ts";
import { groupNormBackward } from "../../src/ops/group_norm_backward.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, chipAccepts } from "../helpers/backends.ts";
import { groupNorm64, groupNormBackward64, groupStats64, invstdOf } from "../oracle/mod.ts";
import { dtypeArb, epsArb, numel, property, seedArb, shapeArb, uniform } from "./harness.ts";
import { assertGapsUntouched, contiguous, layoutArb, place, placeOutput } from "./layouts.ts";

/** A group count that divides C (any of 1..3 when C = 0). */
function groupArb(C: number): fc.Arbitrary<number> {
  if (C === 0) return fc.integer({ min: 1, max: 3 });
  const divisors = Array.from({ length: C }, (_, i) => i + 1).filter((g) => C % g === 0);
  return fc.constantFrom(...divisors);
}

/** (N, C, HxW) of a rank >= 2 shape. */
function geometry(shape: readonly number[]) {
  return { N: shape[0], C: shape[1], HxW: numel(shape.slice(2)) };
}

// ------------------------------------------------------------------ groupNorm

const groupNormCase = shapeArb().chain((shape) =>
  fc.record({
    shape: fc.constant(shape),
    group: groupArb(shape[1]),
    dtype: dtypeArb,
    gamma: fc.boolean(),
    beta: fc.boolean(),
    eps: epsArb,
    inputLayout: layoutArb(shape.length),
    outputLayout: fc.option(layoutArb(shape.length), { nil: undefined }),
    seed: seedArb,
  })
);

property("groupNorm equals the oracle", groupNormCase, (ctx, c) => {
  const d = ctx.device;
  const { N, C, HxW } = geometry(c.shape);
  const input = place(uniform(numel(c.shape), c.seed, -2, 3), c.shape, c.dtype, c.inputLayout, d);
  const one = (on: boolean, seed: number, lo: number, hi: number) =>
    on ? place(uniform(C, seed, lo, hi), [C], c.dtype, contiguous(1), d) : undefined;
  const gamma = one(c.gamma, c.seed + 1, 0.5, 1.5);
  const beta = one(c.beta, c.seed + 2, -1, 1);
  const out = c.outputLayout ? placeOutput(c.shape, c.dtype, c.outputLayout, d) : undefined;
  const call = () =>
    groupNorm({
      input: input.tensor,
      gamma: gamma?.tensor,
      beta: beta?.tensor,
      group: c.group,
      eps: c.eps,
      out: out ? { output: out.tensor } : undefined,
    });
  if (!chipAccepts(ctx.soc, "aclnnGroupNorm", [c.dtype])) {
    assertChipRefuses(ctx, call);
    return;
  }
  const r = call();
  const e = groupNorm64(input.values, N, C, HxW, c.group, gamma?.values, beta?.values, c.eps);
  assert.deepEqual(r.output.shape, c.shape);
  assert.equal(r.output.dtype, c.dtype);
  if (out) {
    assert.equal(r.output, out.tensor, "out.output is the result");
    assertGapsUntouched(out, "out.output");
  }
  assertClose(r.output, e.output, undefined, "output");
  for (const k of ["mean", "rstd"] as const) {
    assert.deepEqual(r[k].shape, [N, c.group], `${k} shape`);
    assert.equal(r[k].dtype, c.dtype, `${k} dtype (input's)`);
    assertClose(r[k], e[k], undefined, k);
  }
});

// ------------------------------------------------------------------ groupNormBackward

const backwardCase = shapeArb().chain((shape) =>
  dtypeArb.chain((dtype) =>
    fc.record({
      shape: fc.constant(shape),
      group: groupArb(shape[1]),
      dtype: fc.constant(dtype),
      /** mean/rstd/gamma dtype: the data's or float32 (mixed precision). */
      statsDType: fc.constantFrom(dtype, "float32" as DType),
      gamma: fc.boolean(),
      /** mean/rstd: the forward's (consistent) or arbitrary values. */
      forwardStats: fc.boolean(),
      mask: fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()),
      eps: epsArb,
      gradOutLayout: layoutArb(shape.length),
      inputLayout: layoutArb(shape.length),
      meanLayout: layoutArb(2),
      gradInputLayout: fc.option(layoutArb(shape.length), { nil: undefined }),
      seed: seedArb,
    })
  )
);

property("groupNormBackward equals the oracle", backwardCase, (ctx, c) => {
  const d = ctx.device;
  const { N, C, HxW } = geometry(c.shape);
  const G = c.group;
  const n = numel(c.shape);
  const gradOut = place(uniform(n, c.seed), c.shape, c.dtype, c.gradOutLayout, d);
  const input = place(uniform(n, c.seed + 1, -2, 3), c.shape, c.dtype, c.inputLayout, d);
  const st = groupStats64(input.values, N, C, HxW, G);
  const meanValues = c.forwardStats ? st.mean : uniform(N * G, c.seed + 2);
  const rstdValues = c.forwardStats
    ? invstdOf(st.variance, c.eps).map((v) => Number.isNaN(v) ? 1 : v)
    : uniform(N * G, c.seed + 3, 0.5, 2);
  const mean = place(meanValues, [N, G], c.statsDType, c.meanLayout, d);
  const rstd = place(rstdValues, [N, G], c.statsDType, contiguous(2), d);
  const gamma = c.gamma
    ? place(uniform(C, c.seed + 4, 0.5, 1.5), [C], c.statsDType, contiguous(1), d)
    : undefined;
  const out = c.gradInputLayout && c.mask[0]
    ? placeOutput(c.shape, c.dtype, c.gradInputLayout, d)
    : undefined;
  const call = () =>
    groupNormBackward({
      gradOut: gradOut.tensor,
      input: input.tensor,
      mean: mean.tensor,
      rstd: rstd.tensor,
      gamma: gamma?.tensor,
      group: G,
      outputMask: c.mask,
      out: out ? { gradInput: out.tensor } : undefined,
    });
  const accepted = chipAccepts(ctx.soc, "aclnnGroupNormBackward", [c.dtype, c.statsDType], {
    mixedPrecision: c.statsDType !== c.dtype,
  });
  if (!accepted) {
    assertChipRefuses(ctx, call);
    return;
  }
  const r = call();
  const e = groupNormBackward64(
    gradOut.values,
    input.values,
    mean.values,
    rstd.values,
    gamma?.values,
    N,
    C,
    HxW,
    G,
  );
  if (c.mask[0]) {
    assert.ok(r.gradInput, "gradInput is computed");
    assert.equal(r.gradInput.dtype, c.dtype, "gradInput dtype (gradOut's)");
    assert.deepEqual(r.gradInput.shape, c.shape, "gradInput shape");
    if (out) {
      assert.equal(r.gradInput, out.tensor, "out.gradInput is the result");
      assertGapsUntouched(out, "out.gradInput");
    }
    assertClose(r.gradInput, e.gradInput, undefined, "gradInput");
  } else assert.equal(r.gradInput, null, "gradInput is masked off");
  for (const [k, on] of [["gradGamma", c.mask[1]], ["gradBeta", c.mask[2]]] as const) {
    const got = r[k];
    if (!on) {
      assert.equal(got, null, `${k} is masked off`);
      continue;
    }
    assert.ok(got, `${k} is computed`);
    assert.equal(got.dtype, c.statsDType, `${k} dtype (mean's)`);
    assert.deepEqual(got.shape, [C], `${k} shape`);
    assertClose(got, e[k], undefined, k);
  }
});
