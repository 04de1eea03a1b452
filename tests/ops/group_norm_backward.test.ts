import assert from "node:assert/strict";
import fc from "fast-check";
import {
  groupNormBackward,
  type GroupNormBackwardArgs,
} from "../../src/ops/group_norm_backward.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, chipAccepts, forEachBackend, on } from "../helpers/backends.ts";
import {
  cancellation,
  EXACT,
  F32_ARITHMETIC,
  TOLERANCE,
  toleranceFor,
} from "../helpers/tolerance.ts";
import { dot, groupNormBackward64, groupNormForward64, numericalGradient } from "../oracle/mod.ts";

const NULLPTR = 161001;
const INVALID = 161002;
const EPS = 1e-5;

function rnd(shape: number[], seed: number, dtype: DType = "float32", low = -1, high = 1) {
  return Tensor.random(shape, { seed, dtype, low, high });
}

/** A consistent problem: mean/rstd come from the float64 forward of the (rounded) input. */
function problem(
  N: number,
  C: number,
  HxW: number,
  G: number,
  dtype: DType = "float32",
  statsDType: DType = dtype,
  shape: number[] = [N, C, HxW],
) {
  const input = rnd(shape, 11, dtype, -2, 3);
  const gradOut = rnd(shape, 12, dtype);
  const gamma = rnd([C], 13, statsDType, 0.5, 1.5);
  const f = groupNormForward64(input.toFloat64Array(), N, C, HxW, G, undefined, undefined, EPS);
  return {
    gradOut,
    input,
    mean: Tensor.fromArray(f.mean, [N, G], statsDType),
    rstd: Tensor.fromArray(f.rstd, [N, G], statsDType),
    gamma,
    group: G,
  } satisfies GroupNormBackwardArgs;
}

function referenceOf(a: ReturnType<typeof problem>, N: number, C: number, HxW: number) {
  return groupNormBackward64(
    a.gradOut.toFloat64Array(),
    a.input.toFloat64Array(),
    a.mean.toFloat64Array(),
    a.rstd.toFloat64Array(),
    a.gamma.toFloat64Array(),
    N,
    C,
    HxW,
    a.group,
  );
}

/** Gradients by central differences of L = <dy, groupNorm(x, gamma, beta)>. */
function finiteDifferences(
  dy: Float64Array,
  x: Float64Array,
  gamma: Float64Array,
  N: number,
  C: number,
  HxW: number,
  G: number,
) {
  const beta = new Float64Array(C);
  const loss = (xv: Float64Array, gv: Float64Array, bv: Float64Array) =>
    dot(dy, groupNormForward64(xv, N, C, HxW, G, gv, bv, EPS).y);
  return {
    dx: numericalGradient((v) => loss(v, gamma, beta), x.slice()),
    dgamma: numericalGradient((v) => loss(x, v, beta), gamma.slice()),
    dbeta: numericalGradient((v) => loss(x, gamma, v), beta.slice()),
  };
}

/** float32 outputs vs exact derivatives: the outputs' rounding alone. */
const FD_TOL = F32_ARITHMETIC.float32;

// ---------------------------------------------------------------------------------------
// Errors

Deno.test("groupNormBackward: missing gradOut/input/mean/rstd is 161001", () => {
  const a = problem(2, 4, 3, 2);
  for (const name of ["gradOut", "input", "mean", "rstd"] as const) {
    for (const value of [undefined, null]) {
      assertAclnnError(() => groupNormBackward({ ...a, [name]: value }), NULLPTR, name);
    }
  }
});

Deno.test("groupNormBackward: a requested output given as null in out is 161002", () => {
  const a = problem(2, 4, 3, 2);
  // CANN's CheckParams maps every CheckMaskNotNull failure to 161002 (its doc says 161001).
  for (const name of ["gradInput", "gradGamma", "gradBeta"] as const) {
    assertAclnnError(() => groupNormBackward({ ...a, out: { [name]: null } }), INVALID, name);
  }
  // Masked off: null is fine.
  const r = groupNormBackward({ ...a, outputMask: [false, true, true], out: { gradInput: null } });
  assert.equal(r.gradInput, null);
});

Deno.test("groupNormBackward: dtype rules are 161002 naming the argument", () => {
  const a = problem(2, 4, 3, 2);
  const i32 = (t: Tensor) => Tensor.fromArray(t.toFloat64Array(), t.shape, "int32");
  const as = (t: Tensor, d: DType) => Tensor.fromArray(t.toFloat64Array(), t.shape, d);
  // gradOut dtype not float32/float16/bfloat16.
  assertAclnnError(
    () => groupNormBackward({ ...a, gradOut: i32(a.gradOut), input: i32(a.input) }),
    INVALID,
    "gradOut",
  );
  // input dtype != gradOut dtype.
  assertAclnnError(
    () => groupNormBackward({ ...a, input: as(a.input, "float16") }),
    INVALID,
    "input",
  );
  // mean neither gradOut's dtype nor float32.
  assertAclnnError(
    () => groupNormBackward({ ...a, mean: as(a.mean, "float16"), rstd: as(a.rstd, "float16") }),
    INVALID,
    "mean",
  );
  const h = problem(2, 4, 3, 2, "float16");
  assertAclnnError(
    () => groupNormBackward({ ...h, mean: as(h.mean, "bfloat16"), rstd: as(h.rstd, "bfloat16") }),
    INVALID,
    "mean",
  );
  assertAclnnError(
    () => groupNormBackward({ ...a, mean: i32(a.mean), rstd: i32(a.rstd) }),
    INVALID,
    "mean",
  );
  // rstd and gamma must have mean's dtype.
  assertAclnnError(() => groupNormBackward({ ...a, rstd: as(a.rstd, "float16") }), INVALID, "rstd");
  assertAclnnError(
    () => groupNormBackward({ ...a, gamma: as(a.gamma, "bfloat16") }),
    INVALID,
    "gamma",
  );
  // Mixed: fp16 data, fp32 stats, but gamma fp16 -> gamma != mean dtype.
  const m = problem(2, 4, 3, 2, "float16", "float32");
  assertAclnnError(
    () => groupNormBackward({ ...m, gamma: as(m.gamma, "float16") }),
    INVALID,
    "gamma",
  );
  // Outputs: gradInput in gradOut's dtype, gradGamma/gradBeta in mean's dtype.
  assertAclnnError(
    () => groupNormBackward({ ...a, out: { gradInput: Tensor.zeros([2, 4, 3], "float16") } }),
    INVALID,
    "gradInput",
  );
  assertAclnnError(
    () => groupNormBackward({ ...m, out: { gradGamma: Tensor.zeros([4], "float16") } }),
    INVALID,
    "gradGamma",
  );
  assertAclnnError(
    () => groupNormBackward({ ...m, out: { gradBeta: Tensor.zeros([4], "bfloat16") } }),
    INVALID,
    "gradBeta",
  );
  // A non-tensor argument.
  assertAclnnError(
    () => groupNormBackward({ ...a, gamma: {} as unknown as Tensor }),
    INVALID,
    "gamma",
  );
});

Deno.test("groupNormBackward: outputMask rules are 161002", () => {
  const a = problem(2, 4, 3, 2);
  for (const outputMask of [[true, true], [true, true, true, true], []]) {
    assertAclnnError(() => groupNormBackward({ ...a, outputMask }), INVALID, "outputMask");
  }
  assertAclnnError(
    () => groupNormBackward({ ...a, outputMask: "yes" as unknown as boolean[] }),
    INVALID,
    "outputMask",
  );
  assertAclnnError(
    () => groupNormBackward({ ...a, outputMask: [true, 1, true] as unknown as boolean[] }),
    INVALID,
    "outputMask.1",
  );
});

Deno.test("groupNormBackward: output shape rules are 161002 naming the output", () => {
  const a = problem(2, 4, 3, 2);
  // gradInput shape must equal input's (same numel is not enough).
  assertAclnnError(
    () => groupNormBackward({ ...a, out: { gradInput: Tensor.zeros([2, 12]) } }),
    INVALID,
    "gradInput",
  );
  // gradGamma/gradBeta shape must equal gamma's.
  for (const name of ["gradGamma", "gradBeta"] as const) {
    assertAclnnError(
      () => groupNormBackward({ ...a, out: { [name]: Tensor.zeros([1, 4]) } }),
      INVALID,
      name,
    );
    assertAclnnError(
      () => groupNormBackward({ ...a, out: { [name]: Tensor.zeros([5]) } }),
      INVALID,
      name,
    );
    // Without gamma: numel must be C (any shape).
    assertAclnnError(
      () => groupNormBackward({ ...a, gamma: undefined, out: { [name]: Tensor.zeros([3]) } }),
      INVALID,
      name,
    );
    const r = groupNormBackward({ ...a, gamma: undefined, out: { [name]: Tensor.zeros([2, 2]) } });
    assert.deepEqual(r[name]?.shape, [2, 2]);
  }
  // gamma of shape [1, 4]: outputs allocated with that shape, and [4] is rejected.
  const g2 = a.gamma.view([1, 4]);
  assert.deepEqual(groupNormBackward({ ...a, gamma: g2 }).gradGamma?.shape, [1, 4]);
  assertAclnnError(
    () => groupNormBackward({ ...a, gamma: g2, out: { gradBeta: Tensor.zeros([4]) } }),
    INVALID,
    "gradBeta",
  );
});

Deno.test("groupNormBackward: group, N, C, HxW and numel rules are 161002", () => {
  const a = problem(2, 4, 3, 2);
  for (const group of [0, -1]) {
    assertAclnnError(() => groupNormBackward({ ...a, group }), INVALID, "group");
  }
  // C % group != 0.
  assertAclnnError(() => groupNormBackward({ ...a, group: 3 }), INVALID, "group");
  // group not an integer / missing.
  assertAclnnError(() => groupNormBackward({ ...a, group: 1.5 }), INVALID, "group");
  assertAclnnError(
    () => groupNormBackward({ ...a, group: undefined as unknown as number }),
    INVALID,
    "group",
  );
  assertAclnnError(
    () => groupNormBackward({ ...a, group: "2" as unknown as number }),
    INVALID,
    "group",
  );
  // N, C, HxW must be integers >= 0.
  for (const name of ["N", "C", "HxW"] as const) {
    assertAclnnError(() => groupNormBackward({ ...a, [name]: -2 }), INVALID, name);
    assertAclnnError(() => groupNormBackward({ ...a, [name]: 2.5 }), INVALID, name);
  }
  // numel(input) != N*C*HxW (explicit HxW that does not fit).
  assertAclnnError(() => groupNormBackward({ ...a, HxW: 4 }), INVALID, "input");
  // numel(gradOut) != N*C*HxW.
  assertAclnnError(
    () => groupNormBackward({ ...a, gradOut: rnd([2, 4, 4], 1) }),
    INVALID,
    "gradOut",
  );
  // mean / rstd numel != N*group.
  assertAclnnError(() => groupNormBackward({ ...a, mean: Tensor.zeros([2, 1]) }), INVALID, "mean");
  assertAclnnError(() => groupNormBackward({ ...a, rstd: Tensor.zeros([5]) }), INVALID, "rstd");
  // gamma present with numel != C.
  assertAclnnError(() => groupNormBackward({ ...a, gamma: Tensor.ones([3]) }), INVALID, "gamma");
  // N/C/HxW cannot be inferred from an input of rank < 2.
  const flat = { ...a, input: a.input.reshape([24]), gradOut: a.gradOut.reshape([24]) };
  assertAclnnError(() => groupNormBackward({ ...flat, C: 4, HxW: 3 }), INVALID, "N");
  assertAclnnError(() => groupNormBackward({ ...flat, N: 2, HxW: 3 }), INVALID, "C");
  assertAclnnError(() => groupNormBackward({ ...flat, N: 2, C: 4 }), INVALID, "HxW");
  const scalar = { ...a, input: Tensor.fromArray([1], []), gradOut: Tensor.fromArray([1], []) };
  assertAclnnError(() => groupNormBackward(scalar), INVALID, "N");
});

Deno.test("groupNormBackward: a rank-9 tensor in any argument is refused with 161002 naming it", () => {
  // Tensors go up to rank 64 (issue 10); the operator allows ranks 0-8, as CANN does. The call
  // is made (not just the tensor built), once per argument, the others staying valid.
  const a = problem(2, 4, 3, 2);
  const nine = (t: Tensor) => t.reshape([...t.shape, ...new Array(9 - t.rank).fill(1)]);
  assert.equal(nine(a.gradOut).rank, 9);
  for (const name of ["gradOut", "input", "mean", "rstd", "gamma"] as const) {
    const e = assertAclnnError(
      () => groupNormBackward({ ...a, [name]: nine(a[name]) }),
      INVALID,
      name,
    );
    assert.match(e.message, /rank 9/, e.message);
  }
  for (const name of ["gradInput", "gradGamma", "gradBeta"] as const) {
    const shape = name === "gradInput" ? a.input.shape : a.gamma.shape;
    const out = { [name]: nine(Tensor.zeros(shape)) };
    assertAclnnError(() => groupNormBackward({ ...a, out }), INVALID, name);
  }
});

Deno.test("groupNormBackward: the Atlas A2/A3 limits (C <= 240000, C/group <= 8000) are not imposed", () => {
  const run = (C: number) => {
    const x = Tensor.zeros([1, C, 1]);
    return groupNormBackward({
      gradOut: Tensor.ones([1, C, 1]),
      input: x,
      mean: Tensor.zeros([1]),
      rstd: Tensor.ones([1]),
      group: 1,
      outputMask: [false, false, true],
    });
  };
  assert.equal(run(8001).gradBeta?.numel, 8001);
  const r = run(240001);
  assert.equal(r.gradBeta?.numel, 240001);
  assert.equal(r.gradBeta?.toFloat64Array()[240000], 1);
});

// ---------------------------------------------------------------------------------------
// Values

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

Deno.test("groupNormBackward: rank 2 (HxW = 1), 3, 4 and 8", () => {
  const shapes: number[][] = [[4, 6], [2, 6, 5], [2, 4, 3, 2], [2, 4, 1, 2, 1, 3, 1, 2]];
  for (const shape of shapes) {
    const [N, C] = shape;
    const HxW = shape.slice(2).reduce((p, d) => p * d, 1);
    const G = 2;
    const a = problem(N, C, HxW, G, "float32", "float32", shape);
    const r = groupNormBackward(a);
    assert.deepEqual(r.gradInput!.shape, shape);
    const ref = referenceOf(a, N, C, HxW);
    const tol = toleranceFor("float32");
    assertClose(r.gradInput!, ref.gradInput, tol, `rank ${shape.length} gradInput`);
    assertClose(r.gradGamma!, ref.gradGamma, tol, `rank ${shape.length} gradGamma`);
    assertClose(r.gradBeta!, ref.gradBeta, tol, `rank ${shape.length} gradBeta`);
  }
});

Deno.test("groupNormBackward: ranks 0 and 1 with explicit N, C, HxW", () => {
  const a = problem(2, 4, 3, 2);
  const expected = groupNormBackward(a);
  const flat = groupNormBackward({
    ...a,
    input: a.input.reshape([24]),
    gradOut: a.gradOut.reshape([24]),
    mean: a.mean.reshape([4]),
    N: 2,
    C: 4,
    HxW: 3,
  });
  assert.deepEqual(flat.gradInput!.shape, [24]);
  assertClose(flat.gradInput!, expected.gradInput!, EXACT);
  assertClose(flat.gradGamma!, expected.gradGamma!, EXACT);
  // gradOut may have another shape than input: only its numel counts.
  const mixed = groupNormBackward({ ...a, input: a.input.reshape([24]), N: 2, C: 4, HxW: 3 });
  assertClose(mixed.gradInput!, expected.gradInput!, EXACT);

  // Rank 0: one element, one group. xhat = (x - mean) * rstd; gradInput = rstd * (dy - dy -
  // xhat * dy * xhat) = -rstd * dy * xhat^2, gradGamma = dy * xhat, gradBeta = dy.
  const r = groupNormBackward({
    gradOut: Tensor.fromArray([3], []),
    input: Tensor.fromArray([2], []),
    mean: Tensor.fromArray([0.5], []),
    rstd: Tensor.fromArray([2], []),
    gamma: Tensor.fromArray([1], []),
    N: 1,
    C: 1,
    HxW: 1,
    group: 1,
  });
  assert.deepEqual(r.gradInput!.shape, []);
  assert.deepEqual(r.gradGamma!.shape, []);
  assertClose(r.gradInput!, [-2 * 3 * 9]);
  assertClose(r.gradGamma!, [9]);
  assertClose(r.gradBeta!, [3]);
});

Deno.test("groupNormBackward: explicit N, C, HxW reinterpret the input's shape", () => {
  // [2, 6, 4] read as (N=2, C=3, HxW=8) equals the [2, 3, 8] problem.
  const a = problem(2, 3, 8, 3);
  const expected = groupNormBackward(a);
  const r = groupNormBackward({
    ...a,
    input: a.input.reshape([2, 6, 4]),
    gradOut: a.gradOut.reshape([2, 6, 4]),
    C: 3,
    HxW: 8,
  });
  assert.deepEqual(r.gradInput!.shape, [2, 6, 4]);
  assertClose(r.gradInput!, expected.gradInput!, EXACT);
  assertClose(r.gradBeta!, expected.gradBeta!, EXACT);
});

Deno.test("groupNormBackward: non-contiguous and channels-last inputs", () => {
  const [N, C, H, W, G] = [2, 4, 3, 2, 2];
  const a = problem(N, C, H * W, G, "float32", "float32", [N, C, H, W]);
  const expected = groupNormBackward(a);
  // Channels-last: storage (N, H, W, C), viewed as (N, C, H, W).
  const nhwc = (t: Tensor) => t.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2]);
  const x = nhwc(a.input);
  const dy = nhwc(a.gradOut);
  assert.equal(x.isContiguous(), false);
  assert.deepEqual(x.strides, [H * W * C, 1, W * C, C]);
  const r = groupNormBackward({ ...a, input: x, gradOut: dy });
  assertClose(r.gradInput!, expected.gradInput!, F32_ARITHMETIC.float32);
  assertClose(r.gradGamma!, expected.gradGamma!, F32_ARITHMETIC.float32);
  assertClose(r.gradBeta!, expected.gradBeta!, F32_ARITHMETIC.float32);
  // An allocated gradInput keeps the input's layout (PyTorch's preserve_format).
  assert.deepEqual(r.gradInput!.strides, x.strides, "channels-last kept");

  // Strided views: every other element of a larger tensor, a transposed (C, N) mean, a
  // stepped gamma.
  const wide = Tensor.zeros([N, C, H, 2 * W]);
  const sx = wide.slice(3, 0, 2 * W, 2).copy_(a.input);
  const meanT = a.mean.permute([1, 0]).contiguous().permute([1, 0]);
  const rstdT = a.rstd.permute([1, 0]).contiguous().permute([1, 0]);
  const gammaWide = Tensor.zeros([2 * C]);
  const sg = gammaWide.slice(0, 1, 2 * C, 2).copy_(a.gamma);
  assert.equal(sx.isContiguous() || meanT.isContiguous() || sg.isContiguous(), false);
  const s = groupNormBackward({ ...a, input: sx, mean: meanT, rstd: rstdT, gamma: sg });
  assertClose(s.gradInput!, expected.gradInput!, F32_ARITHMETIC.float32);
  assertClose(s.gradGamma!, expected.gradGamma!, F32_ARITHMETIC.float32);
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

Deno.test("groupNormBackward: out tensors, including strided views, receive the results", () => {
  const a = problem(2, 4, 3, 2);
  const expected = groupNormBackward(a);
  const gradInput = Tensor.zeros([2, 3, 4]).permute([0, 2, 1]); // (2, 4, 3), not contiguous
  const gradGammaStore = Tensor.full([8], -1);
  const gradGamma = gradGammaStore.slice(0, 0, 8, 2);
  const gradBeta = Tensor.zeros([4]);
  const r = groupNormBackward({ ...a, out: { gradInput, gradGamma, gradBeta } });
  assert.equal(r.gradInput, gradInput);
  assert.equal(r.gradGamma, gradGamma);
  assert.equal(r.gradBeta, gradBeta);
  assertClose(gradInput, expected.gradInput!, EXACT);
  assertClose(gradGamma, expected.gradGamma!, EXACT);
  assertClose(gradBeta, expected.gradBeta!, EXACT);
  // The gaps of the strided view are untouched.
  assertClose(gradGammaStore.slice(0, 1, 8, 2), [-1, -1, -1, -1]);
  // gradInput may not overwrite gradOut: CANN documents no in-place use, so an output that
  // shares memory with an input is refused (issue 12), as PyTorch refuses it.
  const dy = a.gradOut.clone();
  assertAclnnError(
    () => groupNormBackward({ ...a, gradOut: dy, out: { gradInput: dy } }),
    INVALID,
    "gradInput",
  );
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

// ---------------------------------------------------------------------------------------
// Every backend (the software CANN as Ascend 950 and Atlas A2 when built)

forEachBackend(
  "groupNormBackward: mixed precision, layouts, masks and a flat input equal the oracle",
  (ctx) => {
    const d = ctx.device;
    const [N, C, HxW, G] = [2, 6, 5, 3];
    for (const statsDType of ["float32", "float16"] as const) {
      const a = problem(N, C, HxW, G, "float16", statsDType);
      const dev = {
        ...a,
        gradOut: on(a.gradOut, d),
        input: on(a.input.permute([0, 2, 1]).contiguous().permute([0, 2, 1]), d),
        mean: on(a.mean, d),
        rstd: on(a.rstd, d),
        gamma: on(a.gamma, d),
      };
      const mixed = statsDType !== "float16";
      const what = `float16 data, ${statsDType} statistics`;
      if (!chipAccepts(ctx.soc, "aclnnGroupNormBackward", ["float16"], { mixedPrecision: mixed })) {
        assertChipRefuses(ctx, () => groupNormBackward(dev), "mean");
        continue;
      }
      const r = groupNormBackward(dev);
      const e = referenceOf(a, N, C, HxW);
      for (const name of ["gradInput", "gradGamma", "gradBeta"] as const) {
        assert.equal(r[name]!.device, d, `${what}: ${name} device`);
        assert.equal(r[name]!.dtype, name === "gradInput" ? "float16" : statsDType);
        assertClose(r[name]!, e[name], undefined, `${what}: ${name}`);
      }
      // Masks, gamma absent, and a rank-1 input with explicit N/C/HxW.
      const m = groupNormBackward({
        ...dev,
        gamma: undefined,
        input: dev.input.reshape([N * C * HxW]),
        N,
        C,
        HxW,
        outputMask: [true, false, true],
      });
      const em = groupNormBackward64(
        a.gradOut.toFloat64Array(),
        a.input.toFloat64Array(),
        a.mean.toFloat64Array(),
        a.rstd.toFloat64Array(),
        undefined,
        N,
        C,
        HxW,
        G,
      );
      assert.equal(m.gradGamma, null);
      assertClose(m.gradInput!, em.gradInput, undefined, `${what}: flat gradInput`);
      assertClose(m.gradBeta!, em.gradBeta, undefined, `${what}: flat gradBeta`);
      // Validation runs before the native call: same code and argument as on the CPU.
      assertAclnnError(() => groupNormBackward({ ...dev, group: 4 }), INVALID, "group");
    }
  },
);
