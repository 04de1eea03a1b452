/**
 * Conformance of the channel-group operators of the norm family (instanceNorm, groupNormSilu,
 * groupNormSiluV2, groupNormSwish, groupNormSwishGrad) with their peers' own tests: CANN's
 * examples with a derived known answer, and the shapes, dtypes, value ranges and attributes of
 * CANN's UT and ST cases and torch_npu's tests (tests/fixtures/conformance/norm_family_group.ts,
 * each case citing its source), compared with the float64 oracle (tests/oracle/) under the
 * tolerance table, on every backend. A chip that does not run an operator or dtype must refuse
 * it (aclnnInstanceNorm runs on the Atlas inference series only, so both simulated chips refuse
 * every case of it).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type DType,
  groupNormSilu,
  groupNormSiluV2,
  groupNormSwish,
  groupNormSwishGrad,
  instanceNorm,
  Tensor,
} from "../../mod.ts";
import { isRegbase } from "../../src/backends/ascend/soc.ts";
import {
  groupNormActExample,
  groupNormSwishGradExample,
  instanceNormExample,
} from "../fixtures/conformance/norm_family_examples.ts";
import {
  GROUP_SILU_CASES,
  GROUP_SILU_EMPTY_CASES,
  GROUP_SILU_V2_CASES,
  GROUP_SWISH_CASES,
  type GroupActCase,
  groupActInputs,
  SWISH_GRAD_CASES,
  swishGradInputs,
} from "../fixtures/conformance/norm_family_group.ts";
import {
  INSTANCE_NORM_CASES,
  instanceNormInputs,
} from "../fixtures/conformance/norm_family_instance.ts";
import { assertClose } from "../helpers/assert.ts";
import {
  assertChipRefuses,
  type BackendContext,
  chipAccepts,
  forEachBackend,
} from "../helpers/backends.ts";
import { toleranceFor } from "../helpers/tolerance.ts";
import { groupNormSwish64, groupNormSwishGrad64, instanceNorm64, rounded } from "../oracle/mod.ts";
import { expectClose, f64, on, runAll } from "./common.ts";

const arr = (t: Tensor) => Array.from(f64(t));
const fround = Math.fround;
const F32 = toleranceFor("float32");
const prod = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);
const label = (c: { source: string; shape: number[]; dtype: DType }) =>
  `${c.source} ${JSON.stringify(c.shape)} ${c.dtype}`;

// ---------------------------------------------------------------------------------------------
// aclnnInstanceNorm

// ops-nn instance_norm_v3 example, by hand: every x is 0.77 (as float32), so each (n, c) has mean
// 0.77 and variance 0, and y = 0 * gamma + beta = 0.5 everywhere.
forEachBackend("norm family group: aclnnInstanceNorm CANN example known answer", (ctx) => {
  const e = instanceNormExample();
  const d = ctx.device;
  const call = () =>
    instanceNorm({ ...e, x: on(e.x, d), gamma: on(e.gamma, d), beta: on(e.beta, d) });
  if (!chipAccepts(ctx.soc, "aclnnInstanceNorm", ["float32"])) {
    return void assertChipRefuses(ctx, call);
  }
  const r = call();
  expectClose(r.y, new Array(128).fill(0.5), "y");
  expectClose(r.mean, new Array(8).fill(fround(0.77)), "mean");
  expectClose(r.variance, new Array(8).fill(0), "variance");
});

forEachBackend("norm family group: aclnnInstanceNorm peer cases vs float64", (ctx) => {
  runAll(INSTANCE_NORM_CASES, (c, k) => {
    const i = instanceNormInputs(c, 30000 + 10 * k);
    const d = ctx.device;
    const call = () =>
      instanceNorm({
        x: on(i.x, d),
        gamma: on(i.gamma, d),
        beta: on(i.beta, d),
        dataFormat: c.dataFormat,
        eps: c.eps,
      });
    if (!chipAccepts(ctx.soc, "aclnnInstanceNorm", [c.dtype])) {
      return void assertChipRefuses(ctx, call);
    }
    const r = call();
    const nhwc = c.dataFormat === "NHWC";
    const e = instanceNorm64(arr(i.x), c.shape, nhwc, arr(i.gamma), arr(i.beta), c.eps);
    const l = `${label(c)} ${c.dataFormat}`;
    const [N, d1, , d3] = c.shape;
    assert.deepEqual(r.mean.shape, nhwc ? [N, 1, 1, d3] : [N, d1, 1, 1], `${l} mean shape`);
    assert.equal(r.variance.dtype, c.dtype, `${l} variance dtype`);
    expectClose(r.y, e.y, `${l} y`);
    expectClose(r.mean, e.mean, `${l} mean`);
    expectClose(r.variance, e.variance, `${l} variance`);
  });
});

// ---------------------------------------------------------------------------------------------
// aclnnGroupNormSilu, aclnnGroupNormSiluV2, aclnnGroupNormSwish

// ops-nn group_norm_silu example (and group_norm_silu_v2's, group_norm_swish's with swishScale 1),
// by hand: one group per sample, x = 1..12 and 13..24: mean 6.5 and 18.5, variance (12^2 - 1) /
// 12 = 143/12 for both, rstd = 1/sqrt(143/12 + 1e-5); gn = 2 (x - mean) rstd + 2 is the same in
// both samples, and the output is gn / (1 + exp(-gn)).
function exampleAnswer() {
  const rstd = 1 / Math.sqrt(143 / 12 + 1e-5);
  const row = Array.from({ length: 12 }, (_, i) => {
    const gn = 2 * (i + 1 - 6.5) * rstd + 2;
    return gn / (1 + Math.exp(-gn));
  });
  return { output: [...row, ...row], mean: [6.5, 18.5], rstd: [rstd, rstd] };
}

forEachBackend(
  "norm family group: GroupNormSilu / V2 / Swish CANN examples known answer",
  (ctx) => {
    const e = groupNormActExample();
    const d = ctx.device;
    const a = exampleAnswer();
    const args = { self: on(e.x, d), gamma: on(e.gamma, d), beta: on(e.beta, d), eps: e.eps };
    const results = {
      aclnnGroupNormSilu: () => groupNormSilu({ ...args, group: e.group }),
      aclnnGroupNormSiluV2: () => groupNormSiluV2({ ...args, group: e.group, activateSilu: true }),
      aclnnGroupNormSwish: () => {
        const r = groupNormSwish({
          x: args.self,
          gamma: args.gamma,
          beta: args.beta,
          numGroups: e.group,
          dataFormat: "NCHW",
          eps: e.eps,
          swishScale: 1,
        });
        return { output: r.y, mean: r.mean, rstd: r.rstd };
      },
    };
    for (const [op, run] of Object.entries(results)) {
      if (!chipAccepts(ctx.soc, op as "aclnnGroupNormSilu", ["float32"])) continue;
      const r = run();
      expectClose(r.output, a.output, `${op} output`);
      expectClose(r.mean, a.mean, `${op} mean`);
      expectClose(r.rstd, a.rstd, `${op} rstd`);
    }
  },
);

/**
 * The dtype of mean and rstd: x's, but float32 with a gamma or beta of another dtype (the ST's
 * output dtypes, Ascend 950's rule) except off Ascend 950, where CheckDtypeValid
 * (aclnn_group_norm_silu.cpp:73-121) requires x's.
 */
function siluStats(ctx: BackendContext, c: GroupActCase, i: ReturnType<typeof groupActInputs>) {
  const mixed = [i.gamma, i.beta].some((t) => t && t.dtype !== c.dtype);
  return mixed && !(ctx.soc && !isRegbase(ctx.soc)) ? "float32" : c.dtype;
}

function runSilu(ctx: BackendContext, c: GroupActCase, k: number, v2: boolean): void {
  const op = v2 ? "aclnnGroupNormSiluV2" : "aclnnGroupNormSilu";
  const i = groupActInputs(c, (v2 ? 32000 : 31000) + 10 * k);
  const d = ctx.device;
  const [N, C] = c.shape;
  const stats: DType = siluStats(ctx, c, i);
  const args = {
    self: on(i.x, d),
    gamma: i.gamma && on(i.gamma, d),
    beta: i.beta && on(i.beta, d),
    group: c.group,
    eps: c.eps,
    out: { mean: Tensor.empty([N, c.group], stats, d), rstd: Tensor.empty([N, c.group], stats, d) },
  };
  const call = () =>
    v2 ? groupNormSiluV2({ ...args, activateSilu: c.activate ?? true }) : groupNormSilu(args);
  const dtypes = [c.dtype, i.gamma?.dtype, i.beta?.dtype];
  if (!chipAccepts(ctx.soc, op, dtypes)) return void assertChipRefuses(ctx, call);
  const r = call();
  const e = groupNormSwish64(
    arr(i.x),
    N,
    C,
    prod(c.shape.slice(2)),
    c.group,
    i.gamma && arr(i.gamma),
    i.beta && arr(i.beta),
    fround(c.eps),
    (c.activate ?? true) ? 1 : undefined,
  );
  const l = `${label(c)}/${dtypes.slice(1).map((t) => t ?? "none").join("/")}`;
  assert.equal(r.output.dtype, c.dtype, `${l} output dtype`);
  expectClose(r.output, e.output, `${l} output`);
  expectClose(r.mean, e.mean, `${l} mean`);
  expectClose(r.rstd, e.rstd, `${l} rstd`);
}

forEachBackend("norm family group: aclnnGroupNormSilu peer cases vs float64", (ctx) => {
  runAll(GROUP_SILU_CASES, (c, k) => runSilu(ctx, c, k, false));
});

forEachBackend("norm family group: aclnnGroupNormSiluV2 peer cases vs float64", (ctx) => {
  runAll(GROUP_SILU_V2_CASES, (c, k) => runSilu(ctx, c, k, true));
});

// The ST's empty x, one per empty dim. CANN (aclnn_group_norm_silu.cpp:291-303): off Ascend 950
// N > 0 and C > 0 are required (CheckAttr :123-147, the chip refuses) and an empty x fills mean
// with 0 and rstd with NaN (FillScalar), as the CPU backend does; on Ascend 950 N = 0 returns at
// once, any other empty x runs the empty-tensor kernel, which fills mean and rstd with NaN
// (group_norm_silu_tiling_arch35.cpp:380-382, TILINGKEY_EMPTY_TENSOR;
// op_kernel/arch35/group_norm_silu_regbase_empty_tensor.h:44-67 ProcessMeanAndRstd on both,
// group_norm_silu_regbase_base.h:1657-1666 Duplicate(NAN)).
forEachBackend("norm family group: aclnnGroupNormSilu ST empty inputs", (ctx) => {
  runAll(GROUP_SILU_EMPTY_CASES, (c) => {
    const d = ctx.device;
    const [N, C] = c.shape;
    const call = () =>
      groupNormSilu({ self: on(Tensor.zeros(c.shape, c.dtype), d), group: c.group, eps: c.eps });
    const regbase = ctx.soc && isRegbase(ctx.soc);
    if (ctx.soc && !regbase && (N === 0 || C === 0)) {
      return void assertChipRefuses(ctx, call, N === 0 ? "N" : "C");
    }
    const r = call();
    const l = label(c);
    assert.deepEqual(r.output.shape, c.shape, `${l} output shape`);
    const n = N * c.group;
    expectClose(r.mean, new Array(n).fill(regbase ? NaN : 0), `${l} mean`);
    expectClose(r.rstd, new Array(n).fill(NaN), `${l} rstd`);
  });
});

forEachBackend("norm family group: aclnnGroupNormSwish peer cases vs float64", (ctx) => {
  runAll(GROUP_SWISH_CASES, (c, k) => {
    const i = groupActInputs(c, 33000 + 10 * k);
    const d = ctx.device;
    const [N, C] = c.shape;
    const call = () =>
      groupNormSwish({
        x: on(i.x, d),
        gamma: on(i.gamma!, d),
        beta: on(i.beta!, d),
        numGroups: c.group,
        eps: c.eps,
        activateSwish: c.activate ?? true,
        swishScale: c.scale ?? 1,
      });
    if (!chipAccepts(ctx.soc, "aclnnGroupNormSwish", [c.dtype])) {
      return void assertChipRefuses(ctx, call);
    }
    const r = call();
    const e = groupNormSwish64(
      arr(i.x),
      N,
      C,
      prod(c.shape.slice(2)),
      c.group,
      arr(i.gamma!),
      arr(i.beta!),
      fround(c.eps),
      (c.activate ?? true) ? fround(c.scale ?? 1) : undefined,
    );
    const l = `${label(c)} swish=${c.activate ?? true} s=${c.scale}`;
    assert.equal(r.mean.dtype, c.dtype, `${l} mean dtype (gamma's)`);
    expectClose(r.y, e.output, `${l} y`);
    expectClose(r.mean, e.mean, `${l} mean`);
    expectClose(r.rstd, e.rstd, `${l} rstd`);
  });
});

// ---------------------------------------------------------------------------------------------
// aclnnGroupNormSwishGrad

// ops-nn group_norm_swish_grad example: dy = x = 1..24 as [2,3,4], mean = rstd = 2, gamma = beta
// = 2, one group, swishScale 1. By hand: xhat = 2 (x - 2), t = 2 xhat + 2 = 4x - 6, dYNew = dy *
// sig(t) * (1 + t (1 - sig(t))), which is dy within float32 once t >= 14 (x >= 5: the excess
// e^-t (t - 1) is below 1.1e-5). Channels 1 and 2 hold x = 5..8, 17..20 and 9..12, 21..24, so
// dbeta = the sum of their x: 100 and 132, and dgamma = sum of x * 2 (x - 2) = 2 (sum x^2 - 2 sum
// x): 2 (1548 - 200) = 2696 and 2 (2476 - 264) = 4424. Channel 0 and dx from the oracle.
forEachBackend("norm family group: aclnnGroupNormSwishGrad CANN example known answer", (ctx) => {
  const e = groupNormSwishGradExample();
  const d = ctx.device;
  const t = (x: Tensor) => on(x, d);
  const call = () =>
    groupNormSwishGrad({
      dy: t(e.dy),
      mean: t(e.mean),
      rstd: t(e.rstd),
      x: t(e.x),
      gamma: t(e.gamma),
      beta: t(e.beta),
      numGroups: e.numGroups,
      swishScale: e.swishScale,
    });
  if (!chipAccepts(ctx.soc, "aclnnGroupNormSwishGrad", ["float32"])) {
    return void assertChipRefuses(ctx, call);
  }
  const r = call();
  assertClose(f64(r.dbeta).slice(1), [100, 132], F32, "dbeta channels 1, 2");
  assertClose(f64(r.dgamma).slice(1), [2696, 4424], F32, "dgamma channels 1, 2");
  const o = groupNormSwishGrad64(
    arr(e.dy),
    arr(e.mean),
    arr(e.rstd),
    arr(e.x),
    arr(e.gamma),
    arr(e.beta),
    2,
    3,
    4,
    1,
    1,
  );
  expectClose(r.dx, o.dx, "dx");
  expectClose(r.dgamma, o.dgamma, "dgamma");
  expectClose(r.dbeta, o.dbeta, "dbeta");
});

forEachBackend("norm family group: aclnnGroupNormSwishGrad peer cases vs float64", (ctx) => {
  runAll(SWISH_GRAD_CASES, (c, k) => {
    const i = swishGradInputs(c, 34000 + 10 * k);
    const d = ctx.device;
    const call = () =>
      groupNormSwishGrad({
        dy: on(i.dy, d),
        mean: on(i.mean, d),
        rstd: on(i.rstd, d),
        x: on(i.x, d),
        gamma: on(i.gamma, d),
        beta: on(i.beta, d),
        numGroups: c.group,
        swishScale: c.scale,
      });
    if (!chipAccepts(ctx.soc, "aclnnGroupNormSwishGrad", [c.dtype])) {
      return void assertChipRefuses(ctx, call);
    }
    const r = call();
    const e = groupNormSwishGrad64(
      arr(i.dy),
      arr(i.mean),
      arr(i.rstd),
      arr(i.x),
      arr(i.gamma),
      arr(i.beta),
      i.N,
      i.C,
      i.HxW,
      c.group,
      fround(c.scale),
    );
    const l = `${label(c)} G=${c.group}`;
    assert.equal(r.dx.dtype, c.dtype, `${l} dx dtype`);
    // The ST's drawn rstd (up to 5) with x and mean in (-5, 5) makes dx reach past float16's
    // largest value: the expected dx is the oracle's rounded to dx's dtype (an overflow is
    // expected as an infinity).
    expectClose(r.dx, rounded(Array.from(e.dx), c.dtype), `${l} dx`);
    expectClose(r.dgamma, rounded(Array.from(e.dgamma), c.dtype), `${l} dgamma`);
    expectClose(r.dbeta, rounded(Array.from(e.dbeta), c.dtype), `${l} dbeta`);
  });
});
