/**
 * Conformance of the adaptive LayerNorm operators of the norm family (adaLayerNorm,
 * adaLayerNormV2, adaLayerNormBackward) with CANN's own tests: its examples with a known answer
 * derived by hand, and the shapes, dtypes, value ranges and attributes of its ST and UT cases
 * (tests/fixtures/conformance/norm_family_ada.ts, each case citing its source), compared with the
 * float64 oracle (tests/oracle/) under the tolerance table, on every backend. aclnnAdaLayerNorm
 * and aclnnAdaLayerNormBackward run on Atlas A2/A3 only: Ascend 950 must refuse them.
 *
 * @module
 */

import assert from "node:assert/strict";
import { adaLayerNorm, adaLayerNormBackward, adaLayerNormV2, type Tensor } from "../../mod.ts";
import {
  ADA_ATK_CASES,
  ADA_GRAD_CASES,
  ADA_V2_UT_CASES,
  type AdaCase,
  adaGradInputs,
  adaInputs,
  adaShape,
} from "../fixtures/conformance/norm_family_ada.ts";
import {
  adaLayerNormBackwardExample,
  adaLayerNormExample,
} from "../fixtures/conformance/norm_family_examples.ts";
import { ranged } from "../fixtures/conformance/norm_family_rows.ts";
import { assertAclnnError } from "../helpers/assert.ts";
import {
  assertChipRefuses,
  type BackendContext,
  chipAccepts,
  forEachBackend,
} from "../helpers/backends.ts";
import { adaLayerNorm as adaLayerNorm64, adaLayerNormGrad64 } from "../oracle/mod.ts";
import { expectClose, f64, on, onOpt, runAll } from "./common.ts";

const arr = (t: Tensor) => Array.from(f64(t));
const arrOpt = (t: Tensor | undefined) => t && arr(t);

// ops-nn ada_layer_norm example (and ada_layer_norm_v2's), by hand: every value is 1, so each
// row of x is constant: mean 1, variance 0, normalized 0, LayerNorm = 0 * weight + bias = 1, and
// output = 1 * (1 + scale) + shift = 3 everywhere; V2's rstd = 1/sqrt(epsilon), epsilon taken as
// a float (1e-5 rounded to float32).
forEachBackend("norm family ada: aclnnAdaLayerNorm / V2 CANN examples known answer", (ctx) => {
  const e = adaLayerNormExample();
  const d = ctx.device;
  const args = {
    x: on(e.x, d),
    scale: on(e.scale, d),
    shift: on(e.shift, d),
    weight: on(e.weight, d),
    bias: on(e.bias, d),
    epsilon: e.epsilon,
  };
  if (chipAccepts(ctx.soc, "aclnnAdaLayerNorm", ["float32"])) {
    expectClose(adaLayerNorm(args).output, new Array(64).fill(3), "V1 output");
  } else assertChipRefuses(ctx, () => adaLayerNorm(args));
  const r = adaLayerNormV2(args);
  expectClose(r.output, new Array(64).fill(3), "V2 output");
  expectClose(r.mean!, new Array(8).fill(1), "V2 mean");
  expectClose(r.rstd!, new Array(8).fill(1 / Math.sqrt(Math.fround(1e-5))), "V2 rstd");
});

function runAda(ctx: BackendContext, c: AdaCase, k: number, v2: boolean): void {
  const op = v2 ? "aclnnAdaLayerNormV2" : "aclnnAdaLayerNorm";
  const i = adaInputs(c, (v2 ? 41000 : 40000) + 10 * k);
  const d = ctx.device;
  const args = {
    x: on(i.x, d),
    scale: on(i.scale, d),
    shift: on(i.shift, d),
    weight: onOpt(i.weight, d),
    bias: onOpt(i.bias, d),
    epsilon: c.eps,
  };
  if (!chipAccepts(ctx.soc, op, [c.dtype])) {
    return void assertChipRefuses(ctx, () => v2 ? adaLayerNormV2(args) : adaLayerNorm(args));
  }
  const H = c.shape[c.shape.length - 1];
  const S = c.shape[c.shape.length - 2];
  const e = adaLayerNorm64(
    arr(i.x),
    S,
    H,
    Math.fround(c.eps),
    arr(i.scale),
    arr(i.shift),
    arrOpt(i.weight),
    arrOpt(i.bias),
  );
  const label = `${c.source} ${
    JSON.stringify(c.shape)
  } ${c.dtype} scale ${c.scale} shift ${c.shift}`;
  if (!v2) {
    const r = adaLayerNorm(args);
    assert.equal(r.output.dtype, c.dtype, `${label} output dtype`);
    return expectClose(r.output, e.y, `${label} output`);
  }
  const r = adaLayerNormV2(args);
  assert.deepEqual(r.mean!.shape, [...c.shape.slice(0, -1), 1], `${label} mean shape`);
  assert.equal(r.rstd!.dtype, c.dtype, `${label} rstd dtype`);
  expectClose(r.output, e.y, `${label} output`);
  expectClose(r.mean!, e.mean, `${label} mean`);
  expectClose(r.rstd!, e.rstd, `${label} rstd`);
}

forEachBackend("norm family ada: aclnnAdaLayerNorm ST cases vs float64", (ctx) => {
  runAll(ADA_ATK_CASES, (c, k) => runAda(ctx, c, k, false));
});

forEachBackend("norm family ada: aclnnAdaLayerNormV2 ST and UT cases vs float64", (ctx) => {
  runAll([...ADA_ATK_CASES, ...ADA_V2_UT_CASES], (c, k) => runAda(ctx, c, k, true));
});

// ops-nn ada_layer_norm_grad example, by hand (B 2, S 2, H 2; weight 1, bias 0; rows of input
// (2,3), (4,5), (2,3), (4,5) with mean 2, 3, 4, 5 and rstd 4, 5, 6, 7; 1 + scale = 2 for batch
// 0, 3 for batch 1): z = (0,4), (5,10), (-12,-6), (-7,0); g = dy * (1 + scale) = (4,6), (8,10),
// (6,9), (12,15); gradInput = (g - mean(g) - z * mean(g z)) * rstd = (-4,-188), (-1755,-3495),
// (-4545,-2259), (-2068.5,10.5); gradScale = per batch sum of dy z = (20,62), (-52,-18);
// gradShift = per batch sum of dy = (6,8), (6,8); gradWeight = sum of dy (1 + scale) z = (-116,
// 70); gradBias = sum of dy (1 + scale) = (30, 40).
forEachBackend("norm family ada: aclnnAdaLayerNormBackward CANN example known answer", (ctx) => {
  const e = adaLayerNormBackwardExample();
  const d = ctx.device;
  const t = (x: Tensor) => on(x, d);
  const call = () =>
    adaLayerNormBackward({
      ...e,
      gradOut: t(e.gradOut),
      input: t(e.input),
      mean: t(e.mean),
      rstd: t(e.rstd),
      scale: t(e.scale),
      shift: t(e.shift),
      weight: t(e.weight),
      bias: t(e.bias),
    });
  if (!chipAccepts(ctx.soc, "aclnnAdaLayerNormBackward", ["float32"])) {
    return void assertChipRefuses(ctx, call);
  }
  const r = call();
  expectClose(r.gradInput, [-4, -188, -1755, -3495, -4545, -2259, -2068.5, 10.5], "gradInput");
  expectClose(r.gradScale, [20, 62, -52, -18], "gradScale");
  expectClose(r.gradShift, [6, 8, 6, 8], "gradShift");
  expectClose(r.gradWeight, [-116, 70], "gradWeight");
  expectClose(r.gradBias, [30, 40], "gradBias");
});

forEachBackend("norm family ada: aclnnAdaLayerNormBackward UT cases vs float64", (ctx) => {
  runAll(ADA_GRAD_CASES, (c, k) => {
    const i = adaGradInputs(c, 42000 + 10 * k);
    const d = ctx.device;
    const H = c.shape[c.shape.length - 1];
    const S = c.shape[c.shape.length - 2];
    const call = () =>
      adaLayerNormBackward({
        gradOut: on(i.gradOut!, d),
        input: on(i.input!, d),
        normalizedShape: [H],
        rstd: on(i.rstd!, d),
        mean: on(i.mean!, d),
        scale: on(i.scale!, d),
        shift: on(i.shift!, d),
        weight: onOpt(i.weight, d),
        bias: onOpt(i.bias, d),
      });
    const dtypes = [c.dtype, i.weight?.dtype, i.bias?.dtype];
    if (!chipAccepts(ctx.soc, "aclnnAdaLayerNormBackward", dtypes)) {
      return void assertChipRefuses(ctx, call);
    }
    const r = call();
    const e = adaLayerNormGrad64(
      arr(i.gradOut!),
      arr(i.input!),
      S,
      H,
      arr(i.mean!),
      arr(i.rstd!),
      arr(i.scale!),
      arrOpt(i.weight),
      arrOpt(i.bias),
    );
    const label = `${c.source} ${JSON.stringify(c.shape)} ${dtypes.map((t) => t ?? "none")}`;
    // CANN's gradWeight/gradBias dtype: weight's, else bias's, else float32 (infer_dtype,
    // aclnn_ada_layer_norm_backward.cpp).
    assert.equal(r.gradWeight!.dtype, i.weight?.dtype ?? i.bias?.dtype ?? "float32", label);
    assert.deepEqual(r.gradScale!.shape, adaShape(c.shape, c.form), `${label} gradScale shape`);
    expectClose(r.gradInput, e.gradInput, `${label} gradInput`);
    expectClose(r.gradScale, e.gradScale, `${label} gradScale`);
    expectClose(r.gradShift, e.gradShift, `${label} gradShift`);
    expectClose(r.gradWeight, e.gradWeight, `${label} gradWeight`);
    expectClose(r.gradBias, e.gradBias, `${label} gradBias`);
  });
});

// Two UT calls that expect SUCCESS where CANN's op_api code refuses them (a UT of
// TestGetWorkspaceSize only); the code and aclnnAdaLayerNormBackward.md are followed:
// - ascend910B2_aclnnAdaLayerNormBackward_bf16_nd: float32 mean and rstd with bfloat16 gradOut;
//   CheckDtype (:96-101) requires gradOut's dtype, rstd checked first -> 161002 on rstd.
// - ascend910B2_aclnnAdaLayerNormBackward_m_zero_n_positive (input [0,2,7,6]): CheckShape ->
//   ValidateScaleShiftShapes (:176-191) refuses B <= 0 before the empty path -> 161002.
forEachBackend("norm family ada: aclnnAdaLayerNormBackward UT calls CANN's code refuses", (ctx) => {
  const d = ctx.device;
  const args = (shape: number[], dtype: "float32" | "bfloat16", stats: "float32" | "bfloat16") => {
    const stat = [...shape.slice(0, -1), 1];
    const bh = adaShape(shape, "bh");
    const H = shape[shape.length - 1];
    return {
      gradOut: on(ranged(shape, dtype, 1, [-2, 2]), d),
      input: on(ranged(shape, dtype, 2, [-2, 2]), d),
      normalizedShape: [H],
      mean: on(ranged(stat, stats, 3, [-2, 2]), d),
      rstd: on(ranged(stat, stats, 4, [1, 2]), d),
      scale: on(ranged(bh, dtype, 5, [-2, 2]), d),
      shift: on(ranged(bh, dtype, 6, [-2, 2]), d),
      weight: on(ranged([H], dtype, 7, [-2, 2]), d),
      bias: on(ranged([H], dtype, 8, [-2, 2]), d),
    };
  };
  const onChip = chipAccepts(ctx.soc, "aclnnAdaLayerNormBackward", ["bfloat16"]);
  assertAclnnError(
    () => adaLayerNormBackward(args([2, 6, 5, 6], "bfloat16", "float32")),
    161002,
    onChip ? "rstd" : undefined,
  );
  assertAclnnError(
    () => adaLayerNormBackward(args([0, 2, 7, 6], "float32", "float32")),
    161002,
    onChip ? "input" : undefined,
  );
});
