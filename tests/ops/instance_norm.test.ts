/**
 * instanceNorm (aclnnInstanceNorm) on the CPU backend and on the software CANN playing an Atlas
 * inference (310P) chip, the only one CANN runs it on: y, mean and the biased variance against
 * the float64 oracle for NCHW and NHWC, float32 and float16, strided views and dataFormat
 * strings that only start with a valid format; CANN's codes per check in its order (161001,
 * 161002, the SoC after the parameter checks, 561103 for the results' ViewCopy); the early
 * SUCCESS of an empty tensor; and the refusal on Atlas A2 and Ascend 950 naming the SoC.
 *
 * @module
 */

import assert from "node:assert/strict";
import { instanceNorm, type InstanceNormArgs } from "../../src/ops/instance_norm.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, type BackendContext, forEachBackend, on } from "../helpers/backends.ts";
import { instanceNorm64 } from "../oracle/instance_norm.ts";

const NULLPTR = 161001;
const INVALID = 161002;
const INNER_NULLPTR = 561103;
/** The one chip family aclnnInstanceNorm runs on (aclnn_instance_norm.cpp CheckPlatform). */
const P310 = ["Ascend310P3"];

function rnd(shape: number[], seed: number, dtype: DType = "float32", low = -2, high = 3) {
  return Tensor.random(shape, { seed, dtype, low, high });
}

interface Case {
  name: string;
  shape: number[];
  format: string;
  dtype: DType;
  /** Pass x as a non-contiguous view (a transposed copy transposed back). */
  strided?: boolean;
}

// C and H * W span at least 32 bytes each, as the 310P kernel needs (aclnnInstanceNorm.md).
const CASES: Case[] = [
  { name: "NCHW float32", shape: [2, 8, 3, 4], format: "NCHW", dtype: "float32" },
  { name: "NHWC float32", shape: [2, 3, 4, 8], format: "NHWC", dtype: "float32" },
  { name: "NCHW float16", shape: [2, 16, 4, 4], format: "NCHW", dtype: "float16" },
  { name: "NHWC float16", shape: [1, 4, 4, 16], format: "NHWC", dtype: "float16" },
  {
    name: "NCHW strided float32",
    shape: [2, 8, 4, 3],
    format: "NCHW",
    dtype: "float32",
    strided: true,
  },
  { name: "'NHWC_any' prefix", shape: [2, 2, 4, 8], format: "NHWC_any", dtype: "float32" },
  { name: "'NCHWxyz' prefix", shape: [1, 8, 2, 4], format: "NCHWxyz", dtype: "float32" },
];

function args(ctx: BackendContext, c: Case, seed = 1): InstanceNormArgs {
  const nhwc = c.format.startsWith("NHWC");
  const C = nhwc ? c.shape[3] : c.shape[1];
  let x = rnd(c.shape, seed, c.dtype);
  if (c.strided) x = x.transpose(2, 3).contiguous().transpose(2, 3);
  return {
    x: on(x, ctx.device),
    gamma: on(rnd([C], seed + 1, c.dtype, 0.5, 1.5), ctx.device),
    beta: on(rnd([C], seed + 2, c.dtype, -1, 1), ctx.device),
    dataFormat: c.format,
  };
}

forEachBackend("instanceNorm: y, mean and biased variance per (n, c) (float64 oracle)", (ctx) => {
  for (const c of CASES) {
    const a = args(ctx, c);
    const x = a.x as Tensor;
    const nhwc = c.format.startsWith("NHWC");
    using r = instanceNorm({ ...a, eps: 1e-3 });
    const e = instanceNorm64(
      x.toFloat64Array(),
      c.shape,
      nhwc,
      (a.gamma as Tensor).toFloat64Array(),
      (a.beta as Tensor).toFloat64Array(),
      Math.fround(1e-3),
    );
    const [N, d1, , d3] = c.shape;
    const stat = nhwc ? [N, 1, 1, d3] : [N, d1, 1, 1];
    const what = `${ctx.label} ${c.name}`;
    assert.deepEqual([r.y.shape, r.mean.shape, r.variance.shape], [c.shape, stat, stat], what);
    for (const t of [r.y, r.mean, r.variance]) assert.equal(t.dtype, c.dtype, what);
    assertClose(r.mean, e.mean, undefined, `${what} mean`);
    assertClose(r.variance, e.variance, undefined, `${what} variance (biased, not rstd)`);
    assertClose(r.y, e.y, undefined, `${what} y`);
  }
}, { socs: P310 });

forEachBackend("instanceNorm: an NHWC x gives the NCHW results of the same data", (ctx) => {
  const x = rnd([2, 8, 3, 4], 7);
  const gamma = rnd([8], 8, "float32", 0.5, 1.5);
  const beta = rnd([8], 9);
  const common = { gamma: on(gamma, ctx.device), beta: on(beta, ctx.device) };
  using a = instanceNorm({ ...common, x: on(x, ctx.device), dataFormat: "NCHW" });
  const xh = x.permute([0, 2, 3, 1]).contiguous();
  using b = instanceNorm({ ...common, x: on(xh, ctx.device), dataFormat: "NHWC" });
  const tol = { rtol: 2 ** -21, atol: 2 ** -21 };
  assertClose(b.mean.toFloat64Array(), a.mean.toFloat64Array(), tol, `${ctx.label} mean`);
  assertClose(b.variance.toFloat64Array(), a.variance.toFloat64Array(), tol, `${ctx.label} var`);
  const yh = b.y.permute([0, 3, 1, 2]).toFloat64Array();
  assertClose(yh, a.y.toFloat64Array(), tol, `${ctx.label} y`);
}, { socs: P310 });

forEachBackend("instanceNorm: given outputs of any strides receive the results", (ctx) => {
  const c = CASES[0];
  const a = args(ctx, c, 3);
  using plain = instanceNorm(a);
  // y as a transposed view of a contiguous buffer; mean and variance as strided slices.
  const yBuf = Tensor.zeros([2, 8, 4, 3], "float32", ctx.device);
  const y = yBuf.transpose(2, 3);
  const statBuf = Tensor.zeros([2, 8, 1, 2], "float32", ctx.device);
  const varBuf = Tensor.zeros([2, 8, 1, 3], "float32", ctx.device);
  const mean = statBuf.slice(3, 0, 1);
  const variance = varBuf.slice(3, 2, 3);
  using r = instanceNorm({ ...a, out: { y, mean, variance } });
  assert.equal(r.y, y);
  const exact = { rtol: 0, atol: 0 };
  assertClose(y.toFloat64Array(), plain.y.toFloat64Array(), exact, `${ctx.label} y`);
  assertClose(mean.toFloat64Array(), plain.mean.toFloat64Array(), exact, `${ctx.label} mean`);
  assertClose(variance, plain.variance.toFloat64Array(), exact, `${ctx.label} variance`);
  for (const t of [yBuf, statBuf, varBuf]) t.dispose();
}, { socs: P310 });

forEachBackend("instanceNorm: the codes of CANN's checks, in its order", (ctx) => {
  const c = CASES[0];
  const a = args(ctx, c);
  const d = ctx.device;
  const x = a.x as Tensor;
  const run = (over: Partial<Record<keyof InstanceNormArgs, unknown>>) => () =>
    instanceNorm({ ...a, ...over } as InstanceNormArgs);
  // CheckNotNull: the tensors, then dataFormat; before the format and dtype checks.
  assertAclnnError(run({ x: undefined, dataFormat: "bad" }), NULLPTR, "x");
  assertAclnnError(run({ gamma: null }), NULLPTR, "gamma");
  assertAclnnError(run({ beta: undefined, dataFormat: "bad" }), NULLPTR, "beta");
  assertAclnnError(run({ out: { variance: null }, dataFormat: "bad" }), NULLPTR, "variance");
  assertAclnnError(run({ dataFormat: undefined }), NULLPTR, "dataFormat");
  // CheckParamValid: the first four characters.
  for (const f of ["NCH", "nchw", "ND", "", "NC HW"]) {
    assertAclnnError(run({ dataFormat: f }), INVALID, "dataFormat");
  }
  assertAclnnError(run({ dataFormat: 4 }), INVALID, "dataFormat");
  assertAclnnError(
    run({ dataFormat: "NCH", x: on(rnd([2, 8, 3, 4], 1, "bfloat16"), d) }),
    INVALID,
    "dataFormat",
  );
  // CheckDtypeValid: x float32/float16, the rest x's dtype.
  assertAclnnError(run({ x: on(rnd([2, 8, 3, 4], 1, "bfloat16"), d) }), INVALID, "x");
  assertAclnnError(run({ gamma: on(Tensor.ones([8], "float16"), d) }), INVALID, "gamma");
  assertAclnnError(run({ beta: on(Tensor.ones([8], "float16"), d) }), INVALID, "beta");
  const f16Mean = Tensor.zeros([2, 8, 1, 1], "float16", d);
  assertAclnnError(run({ out: { mean: f16Mean } }), INVALID, "mean");
  // CheckShape (x <= 8 dims) before CheckInputAndWeightShape (x 4-D).
  const x9 = on(Tensor.zeros([1, 8, 1, 1, 1, 1, 1, 1, 2]), d);
  const e9 = assertAclnnError(run({ x: x9 }), INVALID, "x");
  assert.match(e9.message, /at most 8/);
  // CheckInputAndWeightShape.
  assertAclnnError(run({ x: on(rnd([2, 8, 12], 1), d) }), INVALID, "x");
  assertAclnnError(run({ gamma: on(Tensor.ones([1, 8]), d) }), INVALID, "gamma");
  assertAclnnError(run({ beta: on(Tensor.ones([8, 1]), d) }), INVALID, "beta");
  assertAclnnError(run({ gamma: on(Tensor.ones([4]), d) }), INVALID, "gamma");
  // NHWC: C is dim 3 (here 4), so a gamma of x's dim 1 is refused.
  assertAclnnError(run({ dataFormat: "NHWC" }), INVALID, "gamma");
  // The results' ViewCopy and the kernel's C values of beta: 561103.
  const yWrong = Tensor.zeros([2, 8, 4, 3], "float32", d);
  assertAclnnError(run({ out: { y: yWrong } }), INNER_NULLPTR, "y");
  const meanFlat = Tensor.zeros([2, 8], "float32", d);
  assertAclnnError(run({ out: { mean: meanFlat } }), INNER_NULLPTR, "mean");
  const nhwcStat = Tensor.zeros([2, 8, 1, 1], "float32", d);
  const xh = on(rnd([2, 3, 4, 8], 1), d);
  assertAclnnError(
    run({ x: xh, dataFormat: "NHWC", out: { variance: nhwcStat } }),
    INNER_NULLPTR,
    "variance",
  );
  assertAclnnError(run({ beta: on(Tensor.ones([9]), d) }), INNER_NULLPTR, "beta");
  for (const t of [f16Mean, yWrong, meanFlat, nhwcStat]) t.dispose();
  assert.ok(x.numel > 0);
}, { socs: P310 });

forEachBackend(
  "instanceNorm: an empty tensor is SUCCESS writing nothing (shapes still checked)",
  (ctx) => {
    const d = ctx.device;
    const x = on(Tensor.zeros([2, 8, 0, 4]), d);
    const gamma = on(Tensor.ones([8]), d);
    const beta = on(Tensor.zeros([8]), d);
    const mean = Tensor.full([2, 8, 1, 1], 7, "float32", d);
    using r = instanceNorm({ x, gamma, beta, dataFormat: "NCHW", out: { mean } });
    assert.deepEqual([...mean.toFloat64Array()], new Array(16).fill(7), "given mean untouched");
    assert.ok([...r.variance.toFloat64Array()].every(Number.isNaN), "allocated variance is NaN");
    assert.deepEqual(r.y.shape, [2, 8, 0, 4]);
    // An empty gamma (C = 0) with a wrong y shape: nothing is copied, nothing refused.
    const x0 = on(Tensor.zeros([2, 0, 3, 4]), d);
    const e0 = on(Tensor.zeros([0]), d);
    const yOdd = Tensor.zeros([5], "float32", d);
    using _ = instanceNorm({ x: x0, gamma: e0, beta: e0, dataFormat: "NCHW", out: { y: yOdd } });
    // CheckInputAndWeightShape comes first: an empty x with a gamma of another C is refused.
    assertAclnnError(
      () => instanceNorm({ x, gamma: on(Tensor.ones([5]), d), beta, dataFormat: "NCHW" }),
      INVALID,
      "gamma",
    );
    for (const t of [mean, yOdd]) t.dispose();
  },
  { socs: P310 },
);

forEachBackend(
  "instanceNorm: only the Atlas inference series runs it; the refusal names the SoC and follows the parameter checks",
  (ctx) => {
    const c = CASES[0];
    const a = args(ctx, c);
    const d = ctx.device;
    assertChipRefuses(ctx, () => instanceNorm(a), "device");
    // After CheckParams: a bad dataFormat, a bfloat16 x, a 9-D x are refused first ...
    assertAclnnError(() => instanceNorm({ ...a, dataFormat: "HWCN" }), INVALID, "dataFormat");
    const bf = on(rnd([2, 8, 3, 4], 1, "bfloat16"), d);
    assertAclnnError(() => instanceNorm({ ...a, x: bf }), INVALID, "x");
    assertAclnnError(() => instanceNorm({ ...a, x: undefined }), NULLPTR, "x");
    // ... but CheckPlatform comes before CheckInputAndWeightShape: a 3-D x meets the SoC.
    const x3 = on(rnd([2, 8, 12], 1), d);
    const e = assertChipRefuses(ctx, () => instanceNorm({ ...a, x: x3 }), "device");
    assert.ok(e.message.includes("aclnnInstanceNorm"), e.message);
  },
  { cpu: false, socs: ["Ascend910B4", "Ascend950PR_9599"] },
);
