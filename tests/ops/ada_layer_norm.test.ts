/**
 * adaLayerNorm (aclnnAdaLayerNorm) and adaLayerNormV2 (aclnnAdaLayerNormV2) on every backend:
 * output, mean and rstd against the float64 oracle (tests/oracle/ada_layer_norm.ts) per dtype,
 * both forms of scale/shift ([B..., H] broadcast over S, [B..., 1, H]); the A2 multi-row
 * template's division; CANN's codes per check; the chips' refusals.
 *
 * @module
 */

import assert from "node:assert/strict";
import { adaLayerNorm } from "../../src/ops/ada_layer_norm.ts";
import { adaLayerNormV2 } from "../../src/ops/ada_layer_norm_v2.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, forEachBackend, on, onOpt } from "../helpers/backends.ts";
import { adaLayerNorm as oracle } from "../oracle/mod.ts";
import { looser, toleranceFor } from "../helpers/tolerance.ts";

const SOCS = { socs: ["Ascend950PR_9599", "Ascend910B4", "Ascend310P3"] };
const values = (t: Tensor | null | undefined) => (t ? [...t.toFloat64Array()] : undefined);
const rnd = (shape: number[], seed: number, dtype: DType, low = -1, high = 1) =>
  Tensor.random(shape, { seed, dtype, low, high });

forEachBackend(
  "adaLayerNormV2 / adaLayerNorm: output, mean, rstd against the float64 oracle",
  (ctx) => {
    const d = ctx.device;
    const [B, S, H] = [2, 3, 37];
    if (ctx.soc?.name === "Ascend310P") {
      const x = on(rnd([B, S, H], 1, "float16"), d);
      const s = on(rnd([B, H], 2, "float16"), d);
      assertChipRefuses(ctx, () => adaLayerNormV2({ x, scale: s, shift: s }));
      assertChipRefuses(ctx, () => adaLayerNorm({ x, scale: s, shift: s }));
      return;
    }
    for (const dtype of ["float32", "float16", "bfloat16"] as const) {
      for (const form of [[B, H], [B, 1, H]]) {
        const x = rnd([B, S, H], 1, dtype, -2, 3);
        const scale = rnd(form, 2, dtype);
        const shift = rnd([B, 1, H], 3, dtype);
        const weight = dtype === "float32" ? undefined : rnd([H], 4, "float32", 0.5, 1.5);
        const bias = dtype === "float32" ? undefined : rnd([H], 5, "float32");
        const args = {
          x: on(x, d),
          scale: on(scale, d),
          shift: on(shift, d),
          weight: onOpt(weight, d),
          bias: onOpt(bias, d),
        };
        const label = `${ctx.label} ${dtype} scale ${form.join("x")}`;
        const e = oracle(
          values(x)!,
          S,
          H,
          1e-5,
          values(scale)!,
          values(shift)!,
          values(weight),
          values(bias),
        );
        const tol = looser(toleranceFor(dtype), toleranceFor("float32"));
        const r = adaLayerNormV2(args);
        assert.equal(r.mean!.dtype, dtype);
        assert.deepEqual(r.rstd!.shape, [B, S, 1]);
        assertClose(r.output, e.y, tol, `${label} output`);
        assertClose(r.mean, e.mean, tol, `${label} mean`);
        assertClose(r.rstd, e.rstd, tol, `${label} rstd`);
        if (ctx.soc?.npuArch === 3510 || weight) continue; // V1: A2/A3, weight in x's dtype
        assertClose(adaLayerNorm(args).output, e.y, tol, `${label} V1 output`);
      }
    }
  },
  SOCS,
);

forEachBackend("adaLayerNormV2: scale broadcasts over S, not by right alignment", (ctx) => {
  const d = ctx.device;
  if (ctx.soc?.name === "Ascend310P") return;
  // B = 2, S = 2, H = 2: [B, H] scale row b applies to both rows of batch b.
  const x = on(Tensor.fromArray([1, 3, 2, 6, 0, 4, 1, 3], [2, 2, 2]), d);
  const scale = on(Tensor.fromArray([0, 1, 2, 3], [2, 2]), d);
  const shift = on(Tensor.zeros([2, 2]), d);
  const r = adaLayerNormV2({ x, scale, shift, epsilon: 0 });
  assertClose(r.output, [-1, 2, -1, 2, -3, 4, -3, 4], { rtol: 1e-6, atol: 1e-6 }, ctx.label);
  assert.equal(r.mean === null, false);
  const noStats = adaLayerNormV2({ x, scale, shift, out: { mean: null, rstd: null } });
  assert.equal(noStats.mean, null);
}, SOCS);

Deno.test("adaLayerNormV2 [cpu]: output = (x - mean) * rstd, each step in float32", () => {
  // The CPU multiplies by rstd as the single-row and slice templates do (the A2 multi-row
  // template's division is modelled by the simulator in double, where both agree).
  const [B, S, H] = [4, 64, 24];
  const x = rnd([B, S, H], 21, "float32", -3, 3);
  const zeros = Tensor.zeros([B, H]);
  const r = adaLayerNormV2({ x, scale: zeros, shift: zeros });
  const [xs, mean, rstd, out] = [x, r.mean, r.rstd, r.output].map((t) => values(t)!);
  const want = out.map((_, j) => {
    const row = Math.floor(j / H);
    return Math.fround(Math.fround(xs[j] - mean[row]) * rstd[row]);
  });
  assert.deepEqual(out, want);
});

forEachBackend("adaLayerNorm(V2): CANN's codes in its check order", (ctx) => {
  const d = ctx.device;
  if (ctx.soc?.name === "Ascend310P") return;
  const t = (shape: number[], dtype: DType = "float16") => on(Tensor.zeros(shape, dtype), d);
  const ok = { x: t([2, 3, 4]), scale: t([2, 4]), shift: t([2, 1, 4]) };
  const v2 = (a: object) => () => adaLayerNormV2({ ...ok, ...a });
  assertAclnnError(v2({ x: undefined }), 161001, "x");
  assertAclnnError(v2({ shift: null }), 161001, "shift");
  assertAclnnError(v2({ out: { output: null } }), 161001, "output");
  assertAclnnError(v2({ x: t([2, 3, 4], "float32") }), 161002, "shift"); // shift before scale
  assertAclnnError(v2({ weight: t([4]), bias: t([4], "float32") }), 161002, "weight");
  assertAclnnError(v2({ out: { mean: t([2, 3, 1], "float32") } }), 161002, "mean");
  assertAclnnError(v2({ x: t([4]) }), 161002, "x");
  assertAclnnError(v2({ x: t([2, 0, 4]) }), 161002, "x");
  assertAclnnError(v2({ scale: t([1, 4]) }), 161002, "scale");
  assertAclnnError(v2({ weight: t([5]) }), 161002, "weight");
  assertAclnnError(v2({ out: { rstd: t([2, 3, 4]) } }), 161002, "rstd");
  // V2 takes a float32 weight with 16-bit x; V1 does not.
  adaLayerNormV2({ ...ok, weight: t([4], "float32") });
  if (ctx.soc?.npuArch === 3510) {
    assertChipRefuses(ctx, () => adaLayerNorm(ok));
    return;
  }
  assertAclnnError(() => adaLayerNorm({ ...ok, weight: t([4], "float32") }), 161002, "weight");
  assertAclnnError(() => adaLayerNorm({ ...ok, x: t([2, 3, 4], "float32") }), 161002, "scale");
}, SOCS);
