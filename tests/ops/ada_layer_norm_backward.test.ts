/**
 * adaLayerNormBackward (aclnnAdaLayerNormBackward) on the CPU and the software CANN as Atlas A2
 * (Ascend910B4; Ascend 950, where CANN computes nothing, refused naming the SoC): the five
 * gradients against the float64 oracle (tests/oracle/ada_layer_norm_grad.ts) per dtype, both
 * forms of scale/shift, weight/bias given or not; optional outputs (null: not computed, not
 * written); the column dtypes; CANN's codes in its check order.
 *
 * @module
 */

import assert from "node:assert/strict";
import { adaLayerNormBackward } from "../../src/ops/ada_layer_norm_backward.ts";
import { adaLayerNormV2 } from "../../src/ops/ada_layer_norm_v2.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, forEachBackend, on, onOpt } from "../helpers/backends.ts";
import { adaLayerNormGrad64 } from "../oracle/mod.ts";
import { looser, toleranceFor } from "../helpers/tolerance.ts";

const SOCS = { socs: ["Ascend910B4", "Ascend950PR_9599"] };
const values = (t: Tensor | null | undefined) => (t ? [...t.toFloat64Array()] : undefined);
const rnd = (shape: number[], seed: number, dtype: DType, low = -1, high = 1) =>
  Tensor.random(shape, { seed, dtype, low, high });

/** A forward's inputs and statistics (mean/rstd in x's dtype, as V2 gives them). */
function forward(B: number, S: number, H: number, dtype: DType, form: number[], affine: boolean) {
  const input = rnd([B, S, H], 1, dtype, -2, 3);
  const scale = rnd(form, 2, dtype);
  const shift = rnd([B, 1, H], 3, dtype);
  const wdt = dtype === "float16" ? "float32" : dtype;
  const weight = affine ? rnd([H], 4, wdt, 0.5, 1.5) : undefined;
  const bias = affine ? rnd([H], 5, wdt) : undefined;
  const f = adaLayerNormV2({ x: input, scale, shift, weight, bias });
  const gradOut = rnd([B, S, H], 6, dtype);
  return { gradOut, input, scale, shift, weight, bias, mean: f.mean!, rstd: f.rstd! };
}

forEachBackend("adaLayerNormBackward: the five gradients against the float64 oracle", (ctx) => {
  const d = ctx.device;
  const [B, S, H] = [2, 5, 37];
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    for (const form of [[B, H], [B, 1, H]]) {
      const affine = form.length === 3;
      const f = forward(B, S, H, dtype, form, affine);
      const args = {
        gradOut: on(f.gradOut, d),
        input: on(f.input, d),
        normalizedShape: [H],
        rstd: on(f.rstd, d),
        mean: on(f.mean, d),
        scale: on(f.scale, d),
        shift: on(f.shift, d),
        weight: onOpt(f.weight, d),
        bias: onOpt(f.bias, d),
      };
      if (ctx.soc?.npuArch === 3510) {
        assertChipRefuses(ctx, () => adaLayerNormBackward(args));
        return;
      }
      const e = adaLayerNormGrad64(
        values(f.gradOut)!,
        values(f.input)!,
        S,
        H,
        values(f.mean)!,
        values(f.rstd)!,
        values(f.scale)!,
        values(f.weight),
        values(f.bias),
      );
      const label = `${ctx.label} ${dtype} scale ${form.join("x")}`;
      const tol = looser(toleranceFor(dtype), toleranceFor("float32"));
      const r = adaLayerNormBackward(args);
      assert.equal(r.gradInput!.dtype, dtype);
      assert.deepEqual(r.gradScale!.shape, form);
      assert.deepEqual(r.gradShift!.shape, [B, 1, H]);
      assert.equal(r.gradWeight!.dtype, f.weight?.dtype ?? "float32");
      assertClose(r.gradInput, e.gradInput, tol, `${label} gradInput`);
      // Sums over S or rows of O(1) terms: bound relative to the sums' size.
      const sums = looser(tol, { rtol: 0, atol: 8 * S * toleranceFor(dtype).rtol });
      assertClose(r.gradScale, e.gradScale, sums, `${label} gradScale`);
      assertClose(r.gradShift, e.gradShift, sums, `${label} gradShift`);
      const cols = looser(tol, { rtol: 0, atol: 8 * B * S * toleranceFor(dtype).rtol });
      assertClose(r.gradWeight, e.gradWeight, cols, `${label} gradWeight`);
      assertClose(r.gradBias, e.gradBias, cols, `${label} gradBias`);
    }
  }
}, SOCS);

forEachBackend("adaLayerNormBackward: null outputs are not computed nor written", (ctx) => {
  const d = ctx.device;
  if (ctx.soc?.npuArch === 3510) return;
  const [B, S, H] = [2, 3, 8];
  const f = forward(B, S, H, "float32", [B, H], false);
  const args = {
    gradOut: on(f.gradOut, d),
    input: on(f.input, d),
    normalizedShape: [H],
    rstd: on(f.rstd, d),
    mean: on(f.mean, d),
    scale: on(f.scale, d),
    shift: on(f.shift, d),
  };
  const full = adaLayerNormBackward(args);
  const gradBias = on(Tensor.full([H], 7), d);
  const part = adaLayerNormBackward({
    ...args,
    out: { gradInput: null, gradShift: null, gradWeight: null, gradBias },
  });
  assert.equal(part.gradInput, null);
  assert.equal(part.gradShift, null);
  assert.equal(part.gradWeight, null);
  assert.equal(part.gradBias, gradBias);
  assert.deepEqual(values(part.gradScale), values(full.gradScale));
  assert.deepEqual(values(gradBias), values(full.gradBias));
  // DiT's adaLN (no weight, no bias: their sums skipped) and the converse: the other outputs
  // keep the bits of the call that computes everything.
  const noColumns = adaLayerNormBackward({ ...args, out: { gradWeight: null, gradBias: null } });
  assert.equal(noColumns.gradWeight, null);
  for (const k of ["gradInput", "gradScale", "gradShift"] as const) {
    assert.deepEqual(values(noColumns[k]), values(full[k]), k);
  }
  const noBatches = adaLayerNormBackward({ ...args, out: { gradScale: null, gradShift: null } });
  assert.equal(noBatches.gradScale, null);
  for (const k of ["gradInput", "gradWeight", "gradBias"] as const) {
    assert.deepEqual(values(noBatches[k]), values(full[k]), k);
  }
  const none = adaLayerNormBackward({
    ...args,
    out: { gradInput: null, gradScale: null, gradShift: null, gradWeight: null, gradBias: null },
  });
  assert.equal(none.gradScale, null);
  // Without weight or bias, CANN's infer_dtype takes a given gradWeight's dtype for gradBias.
  const gw = on(Tensor.empty([H], "float32"), d);
  const r = adaLayerNormBackward({ ...args, out: { gradWeight: gw } });
  assert.equal(r.gradBias!.dtype, "float32");
  assert.deepEqual(values(gw), values(full.gradWeight));
}, SOCS);

Deno.test("adaLayerNormBackward [cpu]: work items split batches in a fixed order", () => {
  // Enough rows for several work items, S not dividing the items' rows.
  const [B, S, H] = [7, 113, 40];
  const f = forward(B, S, H, "float32", [B, 1, H], true);
  const r = adaLayerNormBackward({ ...f, normalizedShape: [H] });
  const e = adaLayerNormGrad64(
    values(f.gradOut)!,
    values(f.input)!,
    S,
    H,
    values(f.mean)!,
    values(f.rstd)!,
    values(f.scale)!,
    values(f.weight),
    values(f.bias),
  );
  const tol = { rtol: 1e-4, atol: 1e-3 };
  assertClose(r.gradInput, e.gradInput, tol, "gradInput");
  assertClose(r.gradScale, e.gradScale, tol, "gradScale");
  assertClose(r.gradShift, e.gradShift, tol, "gradShift");
  assertClose(r.gradWeight, e.gradWeight, tol, "gradWeight");
  assertClose(r.gradBias, e.gradBias, tol, "gradBias");
  const again = adaLayerNormBackward({ ...f, normalizedShape: [H] });
  assert.deepEqual(values(again.gradScale), values(r.gradScale));
});

forEachBackend("adaLayerNormBackward: CANN's codes in its check order", (ctx) => {
  const d = ctx.device;
  const t = (shape: number[], dtype: DType = "float16") => on(Tensor.zeros(shape, dtype), d);
  const ok = {
    gradOut: t([2, 3, 4]),
    input: t([2, 3, 4]),
    normalizedShape: [4],
    rstd: t([2, 3, 1]),
    mean: t([2, 3, 1]),
    scale: t([2, 4]),
    shift: t([2, 1, 4]),
  };
  const call = (a: object) => () => adaLayerNormBackward({ ...ok, ...a });
  assertAclnnError(call({ gradOut: undefined }), 161001, "gradOut");
  assertAclnnError(call({ normalizedShape: null }), 161001, "normalizedShape");
  assertAclnnError(call({ mean: null, rstd: null }), 161001, "mean"); // mean before rstd
  assertAclnnError(call({ shift: undefined }), 161001, "shift");
  assertAclnnError(call({ gradOut: t([2, 3, 4], "int32") }), 161002, "gradOut");
  assertAclnnError(call({ rstd: t([2, 3, 1], "float32") }), 161002, "rstd"); // rstd before mean
  assertAclnnError(call({ weight: t([4], "bfloat16") }), 161002, "weight");
  assertAclnnError(call({ weight: t([4]), bias: t([4], "float32") }), 161002, "weight");
  assertAclnnError(call({ out: { gradScale: t([2, 4], "float32") } }), 161002, "gradScale");
  assertAclnnError(
    call({ weight: t([4], "float32"), out: { gradBias: t([4]) } }),
    161002,
    "gradBias",
  );
  assertAclnnError(call({ out: { gradWeight: t([4], "bfloat16") } }), 161002, "gradWeight");
  assertAclnnError(call({ mean: t([2, 3]), rstd: t([2, 3, 1]) }), 161002, "mean");
  assertAclnnError(call({ normalizedShape: [3, 4] }), 161002, "normalizedShape");
  assertAclnnError(call({ normalizedShape: [5] }), 161002, "normalizedShape");
  assertAclnnError(call({ weight: t([1, 4]) }), 161002, "weight");
  assertAclnnError(call({ weight: t([5]) }), 161002, "weight");
  assertAclnnError(
    call({ gradOut: t([2, 0, 4]), input: t([2, 0, 4]), rstd: t([2, 0, 1]), mean: t([2, 0, 1]) }),
    161002,
    "input",
  );
  assertAclnnError(call({ scale: t([1, 4]) }), 161002, "scale");
  assertAclnnError(call({ mean: t([2, 1, 1]), rstd: t([2, 1, 1]) }), 161002, "mean");
  assertAclnnError(call({ out: { gradShift: t([2, 4]) } }), 161002, "gradShift");
  assertAclnnError(call({ out: { gradBias: t([2, 4]) } }), 161002, "gradBias");
  // A float32 weight with 16-bit data, a one-dim-other gradWeight shape of H elements: accepted.
  const good = { ...ok, weight: t([4], "float32"), out: { gradWeight: t([1, 4], "float32") } };
  if (ctx.soc?.npuArch === 3510) {
    assertChipRefuses(ctx, () => adaLayerNormBackward(good));
    return;
  }
  const r = adaLayerNormBackward(good);
  assert.deepEqual(r.gradWeight!.shape, [1, 4]);
  assert.equal(r.gradBias!.dtype, "float32");
}, SOCS);
