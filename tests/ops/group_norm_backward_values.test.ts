/**
 * groupNormBackward's values: CANN's documentation example, float32 against the float64 formula
 * and finite differences of the forward (also as a property over random shapes), gamma absent,
 * float16/bfloat16 data with same-dtype or float32 statistics, empty tensors, outputMask, NaN
 * and Inf confined to their group.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { groupNormBackward } from "../../src/ops/group_norm_backward.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import {
  cancellation,
  EXACT,
  F32_ARITHMETIC,
  TOLERANCE,
  toleranceFor,
} from "../helpers/tolerance.ts";
import { groupNormBackward64, groupNormForward64 } from "../oracle/mod.ts";
import {
  EPS,
  FD_TOL,
  finiteDifferences,
  problem,
  referenceOf,
} from "../fixtures/group_norm_backward_problem.ts";

Deno.test("groupNormBackward: the CANN doc example (1..24, N=2, C=3, HxW=4, group=1)", () => {
  const v = Array.from({ length: 24 }, (_, i) => i + 1);
  const x = Tensor.fromArray(v, [2, 3, 4]);
  const r32 = Math.fround(0.2896827);
  const r = groupNormBackward({
    gradOut: Tensor.fromArray(v, [2, 3, 4]),
    input: x,
    mean: Tensor.fromArray([6.5, 18.5], [2, 1]),
    rstd: Tensor.fromArray([0.2896827, 0.2896827], [2, 1]),
    gamma: Tensor.ones([3]),
    N: 2,
    C: 3,
    HxW: 4,
    group: 1,
    outputMask: [true, true, true],
  });
  // By hand: gradBeta_c = sum of dy over (n, hw): c0 = 1..4 + 13..16 = 10 + 58, etc.
  assertClose(r.gradBeta!, [68, 100, 132]);
  // gradGamma_c = rstd * sum(x * (x - mean)): c0 = -35 - 227 = -262, c1 = 5 + 5, c2 = 173 + 365.
  assertClose(r.gradGamma!, [-262 * r32, 10 * r32, 538 * r32], F32_ARITHMETIC.float32);
  // dy == x, so sum(dy)/M == mean and sum(dy * xhat)/M == rstd * 143/12 (the variance * rstd):
  // gradInput = rstd * (x - mean) * (1 - rstd^2 * 143/12), nearly 0 as rstd ~ 1/sqrt(var).
  const k = 1 - r32 * r32 * 143 / 12;
  const expected = v.map((xi) => r32 * (xi - (xi <= 12 ? 6.5 : 18.5)) * k);
  // ~3e-7 values, the cancellation of terms rstd * dy ~ 7: float32 arithmetic (the CPU
  // backend's, and a chip's) leaves a few float32 epsilons of those terms.
  assertClose(r.gradInput!, expected, cancellation(F32_ARITHMETIC.float32, 24 * r32, 1));
  assert.equal(r.gradInput!.dtype, "float32");
  assert.deepEqual(r.gradInput!.shape, [2, 3, 4]);
  assert.deepEqual(r.gradGamma!.shape, [3]);
});

Deno.test("groupNormBackward: float32 matches the float64 formula and finite differences", () => {
  const [N, C, HxW, G] = [3, 6, 5, 3];
  const a = problem(N, C, HxW, G);
  const r = groupNormBackward(a);
  const ref = referenceOf(a, N, C, HxW);
  assertClose(r.gradInput!, ref.gradInput, toleranceFor("float32"), "gradInput");
  assertClose(r.gradGamma!, ref.gradGamma, toleranceFor("float32"), "gradGamma");
  assertClose(r.gradBeta!, ref.gradBeta, toleranceFor("float32"), "gradBeta");

  // Independently: finite differences of the forward, with mean/rstd recomputed by it. Use
  // float64 stats so the gradient is taken exactly at the forward's statistics.
  const x = a.input.toFloat64Array();
  const dy = a.gradOut.toFloat64Array();
  const gamma = a.gamma.toFloat64Array();
  const f = groupNormForward64(x, N, C, HxW, G, undefined, undefined, EPS);
  const exact = groupNormBackward({
    ...a,
    mean: Tensor.fromArray(f.mean, [N, G]),
    rstd: Tensor.fromArray(f.rstd, [N, G]),
  });
  const fd = finiteDifferences(dy, x, gamma, N, C, HxW, G);
  assertClose(exact.gradInput!, fd.dx, FD_TOL, "gradInput vs FD");
  assertClose(exact.gradGamma!, fd.dgamma, FD_TOL, "gradGamma vs FD");
  assertClose(exact.gradBeta!, fd.dbeta, FD_TOL, "gradBeta vs FD");
});

Deno.test("groupNormBackward: gamma absent means all ones", () => {
  const a = problem(2, 4, 3, 2);
  const without = groupNormBackward({ ...a, gamma: undefined });
  const ones = groupNormBackward({ ...a, gamma: Tensor.ones([4]) });
  assertClose(without.gradInput!, ones.gradInput!, EXACT);
  assertClose(without.gradGamma!, ones.gradGamma!, EXACT);
  assert.deepEqual(without.gradGamma!.shape, [4]);
  assert.equal(without.gradGamma!.dtype, "float32");
  const ref = groupNormBackward64(
    a.gradOut.toFloat64Array(),
    a.input.toFloat64Array(),
    a.mean.toFloat64Array(),
    a.rstd.toFloat64Array(),
    undefined,
    2,
    4,
    3,
    2,
  );
  assertClose(without.gradInput!, ref.gradInput, toleranceFor("float32"));
});

Deno.test("groupNormBackward: float16/bfloat16, same-dtype and mixed with float32 stats", () => {
  const [N, C, HxW, G] = [2, 6, 4, 2];
  const cases: [DType, DType][] = [
    ["float16", "float16"],
    ["bfloat16", "bfloat16"],
    ["float16", "float32"],
    ["bfloat16", "float32"],
    ["float32", "float32"],
  ];
  for (const [dtype, statsDType] of cases) {
    const a = problem(N, C, HxW, G, dtype, statsDType);
    const r = groupNormBackward(a);
    assert.equal(r.gradInput!.dtype, dtype);
    assert.equal(r.gradGamma!.dtype, statsDType);
    assert.equal(r.gradBeta!.dtype, statsDType);
    const ref = referenceOf(a, N, C, HxW);
    const what = `${dtype}/${statsDType}`;
    assertClose(r.gradInput!, ref.gradInput, toleranceFor(dtype), `${what} gradInput`);
    assertClose(r.gradGamma!, ref.gradGamma, toleranceFor(statsDType), `${what} gradGamma`);
    assertClose(r.gradBeta!, ref.gradBeta, toleranceFor(statsDType), `${what} gradBeta`);
  }
});

Deno.test("groupNormBackward: empty tensors give zero-filled per-channel outputs", () => {
  // N = 0.
  const r0 = groupNormBackward({
    gradOut: Tensor.zeros([0, 4, 3]),
    input: Tensor.zeros([0, 4, 3]),
    mean: Tensor.zeros([0, 2]),
    rstd: Tensor.zeros([0, 2]),
    gamma: Tensor.ones([4]),
    group: 2,
  });
  assert.deepEqual(r0.gradInput!.shape, [0, 4, 3]);
  assertClose(r0.gradGamma!, [0, 0, 0, 0]);
  assertClose(r0.gradBeta!, [0, 0, 0, 0]);
  // HxW = 0, with preallocated outputs full of garbage: they are zero-filled.
  const out = { gradGamma: Tensor.full([4], 7), gradBeta: Tensor.full([4], -7) };
  const r1 = groupNormBackward({
    gradOut: Tensor.zeros([2, 4, 0]),
    input: Tensor.zeros([2, 4, 0]),
    mean: Tensor.zeros([2, 2]),
    rstd: Tensor.ones([2, 2]),
    group: 2,
    out,
  });
  assert.equal(r1.gradGamma, out.gradGamma);
  assertClose(out.gradGamma, [0, 0, 0, 0]);
  assertClose(out.gradBeta, [0, 0, 0, 0]);
  assert.deepEqual(r1.gradInput!.shape, [2, 4, 0]);
  // C = 0.
  const r2 = groupNormBackward({
    gradOut: Tensor.zeros([2, 0, 3]),
    input: Tensor.zeros([2, 0, 3]),
    mean: Tensor.zeros([2]),
    rstd: Tensor.zeros([2]),
    group: 1,
  });
  assert.deepEqual(r2.gradGamma!.shape, [0]);
  assert.deepEqual(r2.gradInput!.shape, [2, 0, 3]);
});

Deno.test("groupNormBackward: outputMask selects outputs; masked-off ones are not validated", () => {
  const a = problem(2, 4, 3, 2);
  const all = groupNormBackward(a);
  const wrong = { gradInput: Tensor.zeros([7]), gradGamma: Tensor.full([9], 5, "float16") };
  const r = groupNormBackward({ ...a, outputMask: [false, false, true], out: wrong });
  assert.equal(r.gradInput, null);
  assert.equal(r.gradGamma, null);
  assertClose(r.gradBeta!, all.gradBeta!, EXACT);
  assertClose(wrong.gradGamma, new Array(9).fill(5)); // untouched
  const only = groupNormBackward({ ...a, outputMask: [true, false, false] });
  assert.equal(only.gradGamma, null);
  assert.equal(only.gradBeta, null);
  assertClose(only.gradInput!, all.gradInput!, EXACT);
  const none = groupNormBackward({ ...a, outputMask: [false, false, false] });
  assert.deepEqual({ ...none }, { gradInput: null, gradGamma: null, gradBeta: null });
});

Deno.test("groupNormBackward: NaN and Inf propagate through their group only", () => {
  const [N, C, HxW, G] = [2, 4, 3, 2];
  const a = problem(N, C, HxW, G);
  const x = a.input.toFloat64Array();
  x[0] = NaN; // n = 0, channel 0, group 0
  const r = groupNormBackward({ ...a, input: Tensor.fromArray(x, [N, C, HxW]) });
  const gi = r.gradInput!.toFloat64Array();
  const D = C / G;
  for (let i = 0; i < gi.length; i++) {
    const n = Math.floor(i / (C * HxW));
    const g = Math.floor((Math.floor(i / HxW) % C) / D);
    assert.equal(Number.isNaN(gi[i]), n === 0 && g === 0, `gradInput[${i}] = ${gi[i]}`);
  }
  const gg = r.gradGamma!.toFloat64Array();
  assert.deepEqual(Array.from(gg, Number.isNaN), [true, false, false, false]);
  assert.ok(r.gradBeta!.toFloat64Array().every(Number.isFinite));

  const dy = a.gradOut.toFloat64Array();
  dy[C * HxW + 2 * HxW] = Infinity; // n = 1, channel 2, group 1
  const s = groupNormBackward({ ...a, gradOut: Tensor.fromArray(dy, [N, C, HxW]) });
  assert.equal(s.gradBeta!.toFloat64Array()[2], Infinity);
  assert.ok(Number.isFinite(s.gradBeta!.toFloat64Array()[0]));
  const sgi = s.gradInput!.toFloat64Array();
  assert.ok(sgi.slice(0, C * HxW).every(Number.isFinite), "batch 0 unaffected");
  assert.ok(sgi.slice(C * HxW + 2 * HxW).some((v) => !Number.isFinite(v)), "group hit");
});

Deno.test("groupNormBackward: property: random shapes match finite differences", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 3 }), // N
      fc.integer({ min: 1, max: 3 }), // groups
      fc.integer({ min: 1, max: 3 }), // channels per group
      fc.integer({ min: 1, max: 4 }), // HxW
      fc.boolean(), // gamma given
      fc.integer({ min: 1, max: 1_000_000 }), // seed
      (N, G, D, HxW, withGamma, seed) => {
        const C = G * D;
        const x = Tensor.random([N, C, HxW], { seed, low: -2, high: 2 }).toFloat64Array();
        const dy = Tensor.random([N, C, HxW], { seed: seed + 1 }).toFloat64Array();
        const gamma = withGamma
          ? Tensor.random([C], { seed: seed + 2, low: 0.5, high: 1.5 }).toFloat64Array()
          : new Float64Array(C).fill(1);
        const f = groupNormForward64(x, N, C, HxW, G, undefined, undefined, EPS);
        const r = groupNormBackward({
          gradOut: Tensor.fromArray(dy, [N, C, HxW]),
          input: Tensor.fromArray(x, [N, C, HxW]),
          mean: Tensor.fromArray(f.mean, [N, G]),
          rstd: Tensor.fromArray(f.rstd, [N, G]),
          gamma: withGamma ? Tensor.fromArray(gamma, [C]) : undefined,
          group: G,
        });
        const fd = finiteDifferences(dy, x, gamma, N, C, HxW, G);
        // float32 outputs and float32 mean/rstd: a group of nearly equal values has a large
        // rstd, which amplifies the rounding of the stored mean and rstd: the float32 entry of
        // the tolerance table, scaled by it.
        const rtol = TOLERANCE.float32.rtol;
        const groupOf = (c: number) => Math.floor(c / D);
        const rOf = (n: number, c: number) => Math.max(1, f.rstd[n * G + groupOf(c)]);
        const within = (what: string, got: Float64Array, want: Float64Array, scale: number[]) => {
          for (let i = 0; i < got.length; i++) {
            const err = Math.abs(got[i] - want[i]);
            const bound = rtol * scale[i] * (1 + Math.abs(want[i]));
            assert.ok(err <= bound, `${what}[${i}]: got ${got[i]}, want ${want[i]}`);
          }
        };
        const giScale = Array.from(
          fd.dx,
          (_, i) => rOf(Math.floor(i / (C * HxW)), Math.floor(i / HxW) % C),
        );
        const ggScale = Array.from(gamma, (_, c) => {
          let m = 1;
          for (let n = 0; n < N; n++) m = Math.max(m, rOf(n, c));
          return m;
        });
        within("gradInput", r.gradInput!.toFloat64Array(), fd.dx, giScale);
        within("gradGamma", r.gradGamma!.toFloat64Array(), fd.dgamma, ggScale);
        assertClose(r.gradBeta!, fd.dbeta, F32_ARITHMETIC.float32, "gradBeta");
        // And the oracle at the same (float32) statistics, to the outputs' rounding.
        const tol = F32_ARITHMETIC.float32;
        const ref = groupNormBackward64(
          dy,
          x,
          Float64Array.from(f.mean, Math.fround),
          Float64Array.from(f.rstd, Math.fround),
          gamma,
          N,
          C,
          HxW,
          G,
        );
        assertClose(r.gradInput!, ref.gradInput, tol, "gradInput vs formula");
        assertClose(r.gradGamma!, ref.gradGamma, tol, "gradGamma vs formula");
      },
    ),
    { numRuns: 25, seed: 20240601 },
  );
});
