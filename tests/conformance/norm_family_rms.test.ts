/**
 * Conformance of the RMSNorm operators of the norm family (gemmaRmsNorm, inplaceAddRmsNorm,
 * addRmsNormCast) with their peers' own tests: CANN's examples with a derived known answer, and
 * the shapes, dtypes, value ranges and epsilons of CANN's ST cases and torch_npu's tests
 * (tests/fixtures/conformance/norm_family_rms.ts, each case citing its source), compared with the
 * float64 oracle (tests/oracle/) under the tolerance table, on every backend.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  AclnnError,
  addRmsNormCast,
  gemmaRmsNorm,
  inplaceAddRmsNorm,
  type Tensor,
} from "../../mod.ts";
import {
  addRmsNormCastExample,
  gemmaRmsNormExample,
  inplaceAddRmsNormExample,
} from "../fixtures/conformance/norm_family_examples.ts";
import {
  CAST_CASES,
  GEMMA_CASES,
  INPLACE_CASES,
  type RmsCase,
  rmsInputs,
} from "../fixtures/conformance/norm_family_rms.ts";
import { assertChipRefuses, chipAccepts, forEachBackend } from "../helpers/backends.ts";
import { looser, toleranceFor } from "../helpers/tolerance.ts";
import { addRmsNormCast as addRmsNormCast64, gemmaRmsNorm64 } from "../oracle/mod.ts";
import { expectClose, f64, on, runAll } from "./common.ts";

const arr = (t: Tensor) => Array.from(f64(t));
const F32 = toleranceFor("float32");
const ramp = [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7];

function geometry(c: RmsCase): [number, number] {
  const cols = c.shape.slice(c.shape.length - (c.normDims ?? 1)).reduce((a, b) => a * b, 1);
  return [c.shape.reduce((a, b) => a * b, 1) / cols, cols];
}

// ops-nn gemma_rms_norm example, by hand: each row is 0..7 twice, mean(x^2) = 2 * 140 / 16 =
// 17.5, rstd = 1/sqrt(17.5 + 1e-6); gamma is the same ramp, so y_i = x_i * (1 + x_i) * rstd.
forEachBackend("norm family rms: aclnnGemmaRmsNorm CANN example known answer", (ctx) => {
  const e = gemmaRmsNormExample();
  const r = gemmaRmsNorm({ x: on(e.x, ctx.device), gamma: on(e.gamma, ctx.device), epsilon: 1e-6 });
  const rstd = 1 / Math.sqrt(17.5 + 1e-6);
  const row = ramp.map((v) => v * (1 + v) * rstd);
  expectClose(r.rstd, [rstd, rstd], "rstd");
  expectClose(r.y, [...row, ...row], "y");
});

forEachBackend("norm family rms: aclnnGemmaRmsNorm peer cases vs float64", (ctx) => {
  runAll(GEMMA_CASES, (c, k) => {
    const { x1: x, gamma } = rmsInputs(c, 25000 + 10 * k);
    const call = () =>
      gemmaRmsNorm({ x: on(x, ctx.device), gamma: on(gamma, ctx.device), epsilon: c.eps });
    if (!chipAccepts(ctx.soc, "aclnnGemmaRmsNorm", [c.dtype])) {
      return void assertChipRefuses(ctx, call);
    }
    const r = call();
    const [rows, cols] = geometry(c);
    const e = gemmaRmsNorm64(arr(x), rows, cols, c.eps, arr(gamma));
    const label = `${c.source} ${JSON.stringify(c.shape)} ${c.dtype}`;
    // op-plugin test_gemma_rms_norm_meta: y in x's dtype and shape, rstd float32 [rows..., 1].
    assert.equal(r.y.dtype, c.dtype, `${label} y dtype`);
    assert.equal(r.rstd.dtype, "float32", `${label} rstd dtype`);
    assert.deepEqual(r.rstd.shape, [...c.shape.slice(0, -1), 1], `${label} rstd shape`);
    expectClose(r.y, e.y, `${label} y`);
    expectClose(r.rstd, e.rstd, `${label} rstd`, F32);
  });
});

// The ST's epsilon range [-1, 1] reaches below 0, which CANN's tiling refuses
// (ops-nn norm/rms_norm/op_host/rms_norm_tiling.cpp:572 setEpsTiling): 561002.
forEachBackend("norm family rms: aclnnGemmaRmsNorm refuses the ST's negative epsilon", (ctx) => {
  const c = GEMMA_CASES.find((k) => k.dtype === "float32" && k.shape.length === 2)!;
  const { x1: x, gamma } = rmsInputs(c, 25500);
  assert.throws(
    () => gemmaRmsNorm({ x: on(x, ctx.device), gamma: on(gamma, ctx.device), epsilon: -1 }),
    (e: unknown) => e instanceof AclnnError && e.code === 561002,
  );
});

// ops-nn inplace_add_rms_norm example, by hand: x = x1Ref + x2Ref = 2 * (0..7 twice) per row,
// mean(x^2) = 4 * 17.5 = 70, rstd = 1/sqrt(70 + 1e-6); afterwards x2Ref holds x and x1Ref holds
// y_i = x_i * rstd * gamma_i = 2 * v^2 * rstd for the ramp value v.
forEachBackend("norm family rms: aclnnInplaceAddRmsNorm CANN example known answer", (ctx) => {
  const e = inplaceAddRmsNormExample();
  const x1Ref = on(e.x1Ref, ctx.device);
  const x2Ref = on(e.x2Ref, ctx.device);
  const r = inplaceAddRmsNorm({ x1Ref, x2Ref, gamma: on(e.gamma, ctx.device), epsilon: 1e-6 });
  const rstd = 1 / Math.sqrt(70 + 1e-6);
  const x = ramp.map((v) => 2 * v);
  const y = ramp.map((v) => 2 * v * v * rstd);
  expectClose(r.rstd, [rstd, rstd], "rstd");
  expectClose(x2Ref, [...x, ...x], "x2Ref (x)");
  expectClose(x1Ref, [...y, ...y], "x1Ref (y)");
});

forEachBackend("norm family rms: aclnnInplaceAddRmsNorm peer cases vs float64", (ctx) => {
  runAll(INPLACE_CASES, (c, k) => {
    const i = rmsInputs(c, 26000 + 10 * k);
    // Read before the call: on the CPU `on` hands over the same tensors, which the call writes.
    const x1 = arr(i.x1), x2 = arr(i.x2);
    const x1Ref = on(i.x1, ctx.device);
    const x2Ref = on(i.x2, ctx.device);
    const call = () =>
      inplaceAddRmsNorm({ x1Ref, x2Ref, gamma: on(i.gamma, ctx.device), epsilon: c.eps });
    if (!chipAccepts(ctx.soc, "aclnnInplaceAddRmsNorm", [c.dtype])) {
      return void assertChipRefuses(ctx, call);
    }
    const r = call();
    const [, cols] = geometry(c);
    const e = addRmsNormCast64(x1, x2, cols, c.eps, arr(i.gamma));
    const label = `${c.source} ${JSON.stringify(c.shape)} ${c.dtype}`;
    expectClose(x1Ref, e.y, `${label} x1Ref (y)`);
    expectClose(x2Ref, e.x, `${label} x2Ref (x)`);
    // tests/ops/inplace_add_rms_norm.test.ts: rstd may come from x rounded to the dtype (the A2
    // kernels), so the looser of float32's and the data dtype's entries.
    expectClose(r.rstd, e.rstd, `${label} rstd`, looser(F32, toleranceFor(c.dtype)));
  });
});

// ops-nn add_rms_norm_cast example (float16 0..7 twice, bit patterns 0x0000..0x4700), by hand as
// the in-place example: x = 2v, rstd = 1/sqrt(70 + 1e-6), y1 = 2 v^2 rstd in float32, y2 = y1
// rounded to float16.
forEachBackend("norm family rms: aclnnAddRmsNormCast CANN example known answer", (ctx) => {
  const e = addRmsNormCastExample();
  const d = ctx.device;
  const r = addRmsNormCast({
    x1: on(e.x1, d),
    x2: on(e.x2, d),
    gamma: on(e.gamma, d),
    epsilon: 1e-6,
  });
  const rstd = 1 / Math.sqrt(70 + 1e-6);
  const x = ramp.map((v) => 2 * v);
  const y = ramp.map((v) => 2 * v * v * rstd);
  const tol = looser(F32, toleranceFor("float16"));
  assert.deepEqual([r.y1.dtype, r.y2.dtype, r.x.dtype], ["float32", "float16", "float16"]);
  expectClose(r.rstd, [rstd, rstd], "rstd", tol);
  expectClose(r.x, [...x, ...x], "x");
  expectClose(r.y1, [...y, ...y], "y1", tol);
  expectClose(r.y2, [...y, ...y], "y2");
});

forEachBackend("norm family rms: aclnnAddRmsNormCast peer cases vs float64", (ctx) => {
  runAll(CAST_CASES, (c, k) => {
    const i = rmsInputs(c, 27000 + 10 * k);
    const d = ctx.device;
    const call = () =>
      addRmsNormCast({ x1: on(i.x1, d), x2: on(i.x2, d), gamma: on(i.gamma, d), epsilon: c.eps });
    if (!chipAccepts(ctx.soc, "aclnnAddRmsNormCast", [c.dtype])) {
      return void assertChipRefuses(ctx, call);
    }
    const r = call();
    const [, cols] = geometry(c);
    const e = addRmsNormCast64(arr(i.x1), arr(i.x2), cols, c.eps, arr(i.gamma));
    const label = `${c.source} ${JSON.stringify(c.shape)} ${c.dtype}`;
    // tests/ops/add_rms_norm_cast.test.ts: the A2 float16 kernel adds and squares in half and
    // stores y1 = float(y2), so every output gets the looser of its own and the data's entries.
    const tol = (t: Tensor) => looser(toleranceFor(t.dtype), toleranceFor(c.dtype));
    expectClose(r.y1, e.y, `${label} y1`, tol(r.y1));
    expectClose(r.y2, e.y, `${label} y2`, tol(r.y2));
    expectClose(r.rstd, e.rstd, `${label} rstd`, tol(r.rstd));
    expectClose(r.x, e.x, `${label} x`, tol(r.x));
  });
});
