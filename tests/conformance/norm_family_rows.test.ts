/**
 * Conformance of the fused LayerNorm operators of the norm family (addLayerNorm,
 * addLayerNormGrad, deepNorm, deepNormGrad, fastLayerNorm) with their peers' own tests: CANN's
 * examples with a derived known answer, the shapes, dtypes, value ranges and attributes of
 * CANN's ST cases and torch_npu's tests (tests/fixtures/conformance/norm_family_rows.ts, each
 * case citing its source), compared with the float64 oracle (tests/oracle/) under the tolerance
 * table. Every case runs on every backend; a chip that does not run an operator or dtype must
 * refuse it (aclnnFastLayerNorm runs on Atlas A2/A3 only).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  addLayerNorm,
  addLayerNormGrad,
  deepNorm,
  deepNormGrad,
  type DType,
  fastLayerNorm,
  type Tensor,
} from "../../mod.ts";
import {
  addLayerNormExample,
  addLayerNormGradExample,
  deepNormExample,
  deepNormGradExample,
  fastLayerNormExample,
} from "../fixtures/conformance/norm_family_examples.ts";
import {
  ADD_LAYER_NORM_CASES,
  ADD_LAYER_NORM_GRAD_CASES,
  addLayerNormInputs,
  addLayerNormOutDType,
  DEEP_NORM_CASES,
  DEEP_NORM_GRAD_CASES,
  DEEP_NORM_GRAD_ZERO_CASES,
  deepNormGradZeroInputs,
  deepNormInputs,
  FAST_LAYER_NORM_UT,
  fastLayerNormUtInputs,
  type GradCase,
  rowGeometry,
  rowGradInputs,
} from "../fixtures/conformance/norm_family_rows.ts";
import { assertClose } from "../helpers/assert.ts";
import {
  assertChipRefuses,
  type BackendContext,
  chipAccepts,
  forEachBackend,
} from "../helpers/backends.ts";
import { looser, toleranceFor } from "../helpers/tolerance.ts";
import {
  addLayerNormGrad64,
  deepNormGrad64,
  fusedLayerNorm,
  layerNorm64,
  rounded,
} from "../oracle/mod.ts";
import { expectClose, f64, on, runAll } from "./common.ts";

const arr = (t: Tensor) => Array.from(f64(t));
const F32 = toleranceFor("float32");

// ops-nn add_layer_norm example: every row of x1 + x2 (+ bias) is constant (5 and -1; 5.5 and
// -0.5 with the bias 0.5), so its variance is 0: mean is that constant, rstd = 1/sqrt(1e-6) =
// 1000, y = 0 * gamma + beta = 0.1 everywhere, x = the constant.
forEachBackend("norm family rows: aclnnAddLayerNorm CANN example known answer", (ctx) => {
  const e = addLayerNormExample();
  const d = ctx.device;
  for (const bias of [undefined, e.bias]) {
    const r = addLayerNorm({
      ...e,
      x1: on(e.x1, d),
      x2: on(e.x2, d),
      gamma: on(e.gamma, d),
      beta: on(e.beta, d),
      bias: bias && on(bias, d),
    });
    const [a, b] = bias ? [5.5, -0.5] : [5, -1];
    const label = `bias ${bias ? "0.5" : "none"}`;
    expectClose(r.y, new Array(16).fill(0.1), `${label} y`);
    expectClose(r.mean, [a, b], `${label} mean`);
    expectClose(r.rstd, [1000, 1000], `${label} rstd`);
    expectClose(r.x, [...new Array(8).fill(a), ...new Array(8).fill(b)], `${label} x`);
  }
});

forEachBackend("norm family rows: aclnnAddLayerNorm peer cases vs float64", (ctx) => {
  runAll(ADD_LAYER_NORM_CASES, (c, k) => {
    const i = addLayerNormInputs(c, k);
    const d = ctx.device;
    const dtypes: DType[] = [c.x1, c.x2 ?? c.x1, c.gamma ?? c.x1];
    const call = () =>
      addLayerNorm({
        x1: on(i.x1, d),
        x2: on(i.x2, d),
        gamma: on(i.gamma, d),
        beta: on(i.beta, d),
        bias: i.bias && on(i.bias, d),
        epsilon: c.eps,
        additionalOutput: true,
      });
    if (!chipAccepts(ctx.soc, "aclnnAddLayerNorm", dtypes)) {
      return void assertChipRefuses(ctx, call);
    }
    const r = call();
    const ty = addLayerNormOutDType(c);
    const [rows, cols] = rowGeometry(c.shape, c.normDims);
    const e = fusedLayerNorm(arr(i.x1), arr(i.x2), rows, cols, c.eps, arr(i.gamma), arr(i.beta), {
      bias: i.bias && arr(i.bias),
    });
    const label = `${c.source} ${JSON.stringify(c.shape)} ${dtypes.join("/")}`;
    assert.equal(r.y.dtype, ty, `${label} y dtype`);
    expectClose(r.y, e.y, `${label} y`, toleranceFor(ty));
    expectClose(r.mean, e.mean, `${label} mean`, F32);
    expectClose(r.rstd, e.rstd, `${label} rstd`, F32);
    // x: the float32 sum rounded once to y's dtype (tests/ops/add_layer_norm.test.ts).
    expectClose(r.x, e.x, `${label} x`, looser(F32, toleranceFor(ty)));
  });
});

// ops-nn add_layer_norm_grad example, by hand: x = x1 + x2 = {3,4,5,8}, {9,10,13,14},
// {15,18,19,20}; dbeta = column sums of dy = {15, 18, 21, 24}; dgamma = sum of dy * (x - mean) *
// rstd: row 0 has rstd 0, row 1 gives {5*8, 6*9, 7*12, 8*13}, row 2 gives 2 * {9*13, 10*16,
// 11*17, 12*18}: {274, 374, 458, 536}; dx of row 0 (rstd 0) is dsum's {1, 2, 3, 4}; the other
// rows from the oracle.
forEachBackend("norm family rows: aclnnAddLayerNormGrad CANN example known answer", (ctx) => {
  const e = addLayerNormGradExample();
  const d = ctx.device;
  const t = (x: Tensor) => on(x, d);
  const r = addLayerNormGrad({
    dy: t(e.dy),
    x1: t(e.x1),
    x2: t(e.x2),
    rstd: t(e.rstd),
    mean: t(e.mean),
    gamma: t(e.gamma),
    dsum: t(e.dsum),
  });
  expectClose(r.dbeta, [15, 18, 21, 24], "dbeta");
  expectClose(r.dgamma, [274, 374, 458, 536], "dgamma");
  assertClose(f64(r.dx).slice(0, 4), [1, 2, 3, 4], F32, "dx row 0");
  const o = addLayerNormGrad64(
    arr(e.dy),
    arr(e.x1),
    arr(e.x2),
    arr(e.rstd),
    arr(e.mean),
    arr(e.gamma),
    3,
    4,
    arr(e.dsum),
  );
  expectClose(r.dx, o.dx, "dx");
});

forEachBackend("norm family rows: aclnnAddLayerNormGrad peer cases vs float64", (ctx) => {
  runAll(ADD_LAYER_NORM_GRAD_CASES, (c, k) => {
    const i = rowGradInputs(c, 22000 + 10 * k, false);
    const d = ctx.device;
    const call = () =>
      addLayerNormGrad({
        dy: on(i.dy, d),
        x1: on(i.a, d),
        x2: on(i.b, d),
        rstd: on(i.rstd, d),
        mean: on(i.mean, d),
        gamma: on(i.gamma, d),
        dsum: i.dsum && on(i.dsum, d),
      });
    if (!chipAccepts(ctx.soc, "aclnnAddLayerNormGrad", [c.dtype])) {
      return void assertChipRefuses(ctx, call);
    }
    const r = call();
    const e = addLayerNormGrad64(
      arr(i.dy),
      arr(i.a),
      arr(i.b),
      arr(i.rstd),
      arr(i.mean),
      arr(i.gamma),
      i.rows,
      i.cols,
      i.dsum && arr(i.dsum),
    );
    const label = `${c.source} ${JSON.stringify(c.shape)} ${c.dtype}`;
    assert.equal(r.dx.dtype, c.dtype, `${label} dx dtype`);
    // The ST draws rstd from (-5, 5) too: with one element per row (id 183) dx = -rstd^3 * (x -
    // mean)^2 * dy * gamma reaches 1e5, past float16's largest value, so the expected dx is the
    // oracle's rounded to dx's dtype (an overflow is expected as an infinity).
    expectClose(r.dx, rounded(e.dx, c.dtype), `${label} dx`);
    expectClose(r.dgamma, e.dgamma, `${label} dgamma`);
    expectClose(r.dbeta, e.dbeta, `${label} dbeta`);
  });
});

// ops-nn deep_norm example, by hand: s = 0.3 * x + gx = {2.3, 2.6, 2.9, 5.2}, {5.5, 5.8, 8.1,
// 8.4}, {8.7, 11, 11.3, 11.6}: mean = {3.25, 6.95, 10.65}; row 0's variance is (0.95^2 + 0.65^2
// + 0.35^2 + 1.95^2) / 4 = 1.3125, so rstd[0] = 1/sqrt(1.3125 + 1e-6); y from the oracle.
forEachBackend("norm family rows: aclnnDeepNorm CANN example known answer", (ctx) => {
  const e = deepNormExample();
  const d = ctx.device;
  const r = deepNorm({
    x: on(e.x, d),
    gx: on(e.gx, d),
    beta: on(e.beta, d),
    gamma: on(e.gamma, d),
    alpha: e.alpha,
    epsilon: e.epsilon,
  });
  expectClose(r.mean, [3.25, 6.95, 10.65], "mean");
  assertClose(f64(r.rstd).slice(0, 1), [1 / Math.sqrt(1.3125 + 1e-6)], F32, "rstd row 0");
  const o = fusedLayerNorm(arr(e.x), arr(e.gx), 3, 4, 1e-6, arr(e.gamma), arr(e.beta), {
    alpha: 0.3,
  });
  expectClose(r.rstd, o.rstd, "rstd");
  expectClose(r.y, o.y, "y");
});

forEachBackend("norm family rows: aclnnDeepNorm peer cases vs float64", (ctx) => {
  runAll(DEEP_NORM_CASES, (c, k) => {
    const i = deepNormInputs(c, k);
    const d = ctx.device;
    const call = () =>
      deepNorm({
        x: on(i.x, d),
        gx: on(i.gx, d),
        beta: on(i.beta, d),
        gamma: on(i.gamma, d),
        alpha: c.alpha,
        epsilon: c.eps,
      });
    if (!chipAccepts(ctx.soc, "aclnnDeepNorm", [c.dtype])) return void assertChipRefuses(ctx, call);
    const r = call();
    const [rows, cols] = rowGeometry(c.shape, c.normDims);
    const e = fusedLayerNorm(arr(i.x), arr(i.gx), rows, cols, c.eps, arr(i.gamma), arr(i.beta), {
      alpha: c.alpha,
    });
    const label = `${c.source} ${JSON.stringify(c.shape)} ${c.dtype}`;
    assert.equal(r.y.dtype, c.dtype, `${label} y dtype`);
    expectClose(r.y, e.y, `${label} y`);
    expectClose(r.mean, e.mean, `${label} mean`);
    expectClose(r.rstd, e.rstd, `${label} rstd`);
  });
});

// ops-nn deep_norm_grad example, by hand: dbeta = column sums of dy = {15, 18, 21, 24}; dgamma =
// sum of dy * (s - mean) * rstd with s = 0.3 * x + gx: row 0 has rstd 0, row 1 gives {5*4.5,
// 6*4.8, 7*7.1, 8*7.4}, row 2 gives 2 * {9*6.7, 10*9, 11*9.3, 12*9.6}: {143.1, 208.8, 254.3,
// 289.6}; dx = dgx = 0 in row 0 (rstd 0); the other rows from the oracle, dx = 0.3 * dgx.
forEachBackend("norm family rows: aclnnDeepNormGrad CANN example known answer", (ctx) => {
  const e = deepNormGradExample();
  const d = ctx.device;
  const t = (x: Tensor) => on(x, d);
  const call = () =>
    deepNormGrad({
      dy: t(e.dy),
      x: t(e.x),
      gx: t(e.gx),
      gamma: t(e.gamma),
      mean: t(e.mean),
      rstd: t(e.rstd),
      alpha: e.alpha,
    });
  const r = call();
  expectClose(r.dbeta, [15, 18, 21, 24], "dbeta");
  expectClose(r.dgamma, [143.1, 208.8, 254.3, 289.6], "dgamma");
  assertClose(f64(r.dgx).slice(0, 4), [0, 0, 0, 0], F32, "dgx row 0");
  const o = deepNormGrad64(
    arr(e.dy),
    arr(e.x),
    arr(e.gx),
    arr(e.gamma),
    arr(e.mean),
    arr(e.rstd),
    0.3,
    3,
    4,
  );
  expectClose(r.dgx, o.dgx, "dgx");
  expectClose(r.dx, o.dx, "dx");
});

function deepGradCase(ctx: BackendContext, c: GradCase, k: number): void {
  const i = rowGradInputs(c, 23000 + 10 * k, true);
  const d = ctx.device;
  const alpha = c.alpha ?? 0.3;
  const call = () =>
    deepNormGrad({
      dy: on(i.dy, d),
      x: on(i.a, d),
      gx: on(i.b, d),
      gamma: on(i.gamma, d),
      mean: on(i.mean, d),
      rstd: on(i.rstd, d),
      alpha,
    });
  if (!chipAccepts(ctx.soc, "aclnnDeepNormGrad", [c.dtype])) {
    return void assertChipRefuses(ctx, call);
  }
  const r = call();
  const e = deepNormGrad64(
    arr(i.dy),
    arr(i.a),
    arr(i.b),
    arr(i.gamma),
    arr(i.mean),
    arr(i.rstd),
    alpha,
    i.rows,
    i.cols,
  );
  const label = `${c.source} ${JSON.stringify(c.shape)} ${c.dtype}`;
  expectClose(r.dx, e.dx, `${label} dx`);
  expectClose(r.dgx, e.dgx, `${label} dgx`);
  expectClose(r.dgamma, e.dgamma, `${label} dgamma`);
  expectClose(r.dbeta, e.dbeta, `${label} dbeta`);
}

forEachBackend("norm family rows: aclnnDeepNormGrad peer cases vs float64", (ctx) => {
  runAll(DEEP_NORM_GRAD_CASES, (c, k) => deepGradCase(ctx, c, k));
});

// The aclnn ST's all-zero rows: dy = 1, x = gx = mean = rstd = gamma = 0, alpha 0.3. With rstd 0
// every gradient through the normalization is 0: dx = dgx = 0, dgamma = 0, and dbeta = the number
// of rows (the column sums of dy).
forEachBackend("norm family rows: aclnnDeepNormGrad ST all-zero inputs", (ctx) => {
  runAll(DEEP_NORM_GRAD_ZERO_CASES, (c) => {
    const d = ctx.device;
    const [rows, cols] = rowGeometry(c.shape);
    const i = deepNormGradZeroInputs(c);
    const call = () =>
      deepNormGrad({
        dy: on(i.dy, d),
        x: on(i.x, d),
        gx: on(i.gx, d),
        gamma: on(i.gamma, d),
        mean: on(i.mean, d),
        rstd: on(i.rstd, d),
        alpha: 0.3,
      });
    if (!chipAccepts(ctx.soc, "aclnnDeepNormGrad", [c.dtype])) {
      return void assertChipRefuses(ctx, call);
    }
    const r = call();
    const label = `${c.source} ${JSON.stringify(c.shape)} ${c.dtype}`;
    expectClose(r.dx, new Array(rows * cols).fill(0), `${label} dx`);
    expectClose(r.dgx, new Array(rows * cols).fill(0), `${label} dgx`);
    expectClose(r.dgamma, new Array(cols).fill(0), `${label} dgamma`);
    expectClose(r.dbeta, new Array(cols).fill(rows), `${label} dbeta`);
  });
});

// ops-nn layer_norm_v4 fast_layer_norm example: x all 2 -> output 0, mean 2, rstd 1/sqrt(1e-5);
// and the op_api UT's float32 [2,6,5,6] over normalizedShape [6,5,6], eps 1e-12, values in
// (-2, 2). aclnnFastLayerNorm runs on Atlas A2/A3 only: Ascend 950 refuses.
forEachBackend("norm family rows: aclnnFastLayerNorm CANN example and UT case", (ctx) => {
  const d = ctx.device;
  const e = fastLayerNormExample();
  const call = () =>
    fastLayerNorm({ ...e, input: on(e.input, d), weight: on(e.weight, d), bias: on(e.bias, d) });
  if (!chipAccepts(ctx.soc, "aclnnFastLayerNorm", ["float32"])) {
    return void assertChipRefuses(ctx, call);
  }
  const r = call();
  expectClose(r.output, new Array(64).fill(0), "example output");
  expectClose(r.mean, [2, 2], "example mean");
  expectClose(r.rstd, new Array(2).fill(1 / Math.sqrt(1e-5)), "example rstd");
  const u = FAST_LAYER_NORM_UT;
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    const { input: x, weight: w, bias: b } = fastLayerNormUtInputs(dtype);
    const f = fastLayerNorm({
      input: on(x, d),
      normalizedShape: u.normalizedShape,
      weight: on(w, d),
      bias: on(b, d),
      eps: u.eps,
    });
    const o = layerNorm64(arr(x), 2, 180, u.eps, arr(w), arr(b));
    const label = `${u.source} ${dtype}`;
    assert.deepEqual(f.mean.shape, [2, 1, 1, 1], `${label} mean shape`);
    // tests/ops/fast_layer_norm.test.ts: the statistics are float32 from 16-bit data.
    expectClose(f.output, o.y, `${label} output`, toleranceFor(dtype));
    expectClose(f.mean, o.mean, `${label} mean`, looser(F32, toleranceFor(dtype)));
    expectClose(f.rstd, o.rstd, `${label} rstd`, looser(F32, toleranceFor(dtype)));
  }
});
