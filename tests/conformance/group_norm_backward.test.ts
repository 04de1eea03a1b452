/**
 * Conformance of groupNormBackward (aclnnGroupNormBackward, aten native_group_norm_backward)
 * with peers' cases: the CANN example's hand-derived answer, CANN ST rows (mixed precision,
 * ranks 4-8, output masks), torch_npu's shapes, PyTorch OpInfo samples, group in {1, C},
 * empty inputs, non-contiguous layouts; float64 oracle from tests/oracle/ (checked against
 * finite differences of a float64 forward). Every case runs on every backend; a chip without
 * GroupNorm-backward mixed precision (Atlas A2) must refuse the fp16/bf16-data, fp32-stats rows.
 *
 * @module
 */

import assert from "node:assert/strict";
import { groupNormBackward, Tensor } from "../../mod.ts";
import {
  GN_BACKWARD_CASES,
  GN_EXAMPLE_RSTD,
  gnBackwardExample,
  gnBackwardInputs,
  gnBackwardSeed,
  type GnCase,
} from "../fixtures/conformance/group_norm_backward.ts";
import {
  assertChipRefuses,
  type BackendContext,
  chipAccepts,
  forEachBackend,
} from "../helpers/backends.ts";
import { groupNormBackward64, groupStats64 } from "../oracle/mod.ts";
import { expectClose, f64, fromValues, on, onOpt, runAll, uniform } from "./common.ts";

// The CANN example (tests/fixtures/conformance/group_norm_backward.ts): gradOut = input = 1..24
// as [2,3,4], group 1. Hand-derived answer: gradBeta_c = sum over n, hw of dy =
// {10+58, 26+74, 42+90}; gradGamma_c = rstd * sum dy * (x - mean) = rstd * {-35-227, 5+5, 173+365};
// gradInput = rstd * (x - mean) * (1 - rstd^2 * 143/12) ~ 3e-7 (the example's rstd is
// 1/sqrt(var + 1e-5) rounded to 7 digits, so dx is zero up to that rounding).
forEachBackend("gn backward: CANN example [2,3,4] group 1 known answer", ({ device: target }) => {
  const r = GN_EXAMPLE_RSTD;
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    const i = gnBackwardExample(dtype);
    const x = i.input;
    const out = groupNormBackward({
      gradOut: on(i.gradOut, target),
      input: on(i.input, target),
      mean: on(i.mean, target),
      rstd: on(i.rstd, target),
      gamma: onOpt(i.gamma, target),
      N: i.N,
      C: i.C,
      HxW: i.HxW,
      group: i.group,
      outputMask: i.outputMask,
    });
    expectClose(out.gradBeta, [68, 100, 132], `${dtype} gradBeta`);
    if (dtype === "float32") {
      expectClose(out.gradGamma, [-262 * r, 10 * r, 538 * r], `${dtype} gradGamma`);
      expectClose(out.gradInput, new Float64Array(24), `${dtype} gradInput`);
    } else {
      // rstd rounded to fp16/bf16 no longer cancels exactly: compare with the reference at
      // the rounded statistics instead.
      const e = groupNormBackward64(
        f64(x),
        f64(x),
        new Float64Array([6.5, 18.5]),
        f64(fromValues([r, r], [2], dtype)),
        undefined,
        2,
        3,
        4,
        1,
      );
      expectClose(out.gradGamma, e.gradGamma, `${dtype} gradGamma`);
      expectClose(out.gradInput, e.gradInput, `${dtype} gradInput`);
    }
  }
});

// The cases (sources cited with each) live in tests/fixtures/conformance/.

function runCase(c: GnCase, ctx: BackendContext, seed: number): void {
  const target = ctx.device;
  const statsDType = c.statsDType ?? c.dtype;
  const [N, C] = c.shape;
  const HxW = c.shape.slice(2).reduce((a, b) => a * b, 1);
  const i = gnBackwardInputs(c, seed);
  const { gradOut, input, mean, rstd, gamma } = i;
  const mask = i.outputMask;
  const call = () =>
    groupNormBackward({
      gradOut: on(gradOut, target),
      input: on(input, target),
      mean: on(mean, target),
      rstd: on(rstd, target),
      gamma: onOpt(gamma, target),
      ...(c.flatShape ? { N: i.N, C: i.C, HxW: i.HxW } : {}),
      group: c.group,
      outputMask: mask,
    });
  const e = groupNormBackward64(
    f64(gradOut),
    f64(input),
    f64(mean),
    f64(rstd),
    gamma ? f64(gamma) : undefined,
    N,
    C,
    HxW,
    c.group,
  );
  const label = `${c.source} ${JSON.stringify(c.shape)} ${c.dtype}/${statsDType} g${c.group}`;
  const mixed = statsDType !== c.dtype;
  if (
    !chipAccepts(ctx.soc, "aclnnGroupNormBackward", [c.dtype, statsDType], {
      mixedPrecision: mixed,
    })
  ) {
    assertChipRefuses(ctx, call, "mean");
    return;
  }
  const r = call();
  if (mask[0]) {
    assert.deepEqual(r.gradInput?.shape, input.shape, `${label} gradInput shape`);
    assert.equal(r.gradInput?.dtype, c.dtype, `${label} gradInput dtype`);
    expectClose(r.gradInput, e.gradInput, `${label} gradInput`);
  } else assert.equal(r.gradInput, null, `${label} gradInput masked`);
  if (mask[1]) {
    assert.equal(r.gradGamma?.dtype, statsDType, `${label} gradGamma dtype (mean's)`);
    expectClose(r.gradGamma, e.gradGamma, `${label} gradGamma`);
  } else assert.equal(r.gradGamma, null, `${label} gradGamma masked`);
  if (mask[2]) expectClose(r.gradBeta, e.gradBeta, `${label} gradBeta`);
  else assert.equal(r.gradBeta, null, `${label} gradBeta masked`);
}

forEachBackend("gn backward: peer cases vs float64 reference", (ctx) => {
  runAll(GN_BACKWARD_CASES, (c, k) => runCase(c, ctx, gnBackwardSeed(k)));
});

// torch_npu's assertion for backward(ones): with dy = 1 and no affine, dL/dx = 0 (a GroupNorm
// output's per-group mean is constant). Checked on the fp32 [20,6,10,10] row directly.
forEachBackend("gn backward: torch_npu ones-grad gives zero gradInput", ({ device: target }) => {
  const shape = [20, 6, 10, 10];
  const x = uniform(shape, "float32", 77, -100, 100);
  const st = groupStats64(f64(x), 20, 6, 100, 2);
  const r = groupNormBackward({
    gradOut: on(Tensor.ones(shape), target),
    input: on(x, target),
    mean: on(fromValues(st.mean, [20, 2], "float32"), target),
    rstd: on(
      fromValues(st.variance.map((v) => 1 / Math.sqrt(v + 1e-5)), [20, 2], "float32"),
      target,
    ),
    group: 2,
  });
  expectClose(r.gradInput, new Float64Array(12000), "dx of ones");
  expectClose(r.gradBeta, new Array(6).fill(2000), "dbeta of ones");
});

// Empty inputs. PyTorch OpInfo sample ((0, 2), 1): N = 0; and HxW = 0 (a zero spatial dim).
// gradInput is empty; gradGamma/gradBeta are C zeros.
forEachBackend("gn backward: empty N=0 and HxW=0", ({ device: target }) => {
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    for (const [shape, group] of [[[0, 2], 1], [[2, 4, 0], 2]] as const) {
      const N = shape[0];
      const C = shape[1];
      const r = groupNormBackward({
        gradOut: on(Tensor.zeros(shape, dtype), target),
        input: on(Tensor.zeros(shape, dtype), target),
        mean: on(Tensor.zeros([N, group], dtype), target),
        rstd: on(Tensor.ones([N, group], dtype), target),
        gamma: on(Tensor.ones([C], dtype), target),
        group,
      });
      const label = `${dtype} ${JSON.stringify(shape)}`;
      assert.deepEqual(r.gradInput?.shape, shape, `${label} gradInput shape`);
      expectClose(r.gradGamma, new Float64Array(C), `${label} gradGamma`);
      expectClose(r.gradBeta, new Float64Array(C), `${label} gradBeta`);
    }
  }
});
