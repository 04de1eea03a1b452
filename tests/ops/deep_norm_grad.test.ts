/**
 * deepNormGrad (aclnnDeepNormGrad) on every backend: dx, dgx, dbeta, dgamma against the float64
 * oracle (tests/oracle/fused_layer_norm_grads.ts) per dtype and alpha; dx = alpha * dgx from the
 * float32 dgx (each rounded once); CANN's codes per check (161001, 161002, the tiling's 561002);
 * empty outputs; bfloat16 refused on the Atlas inference series.
 *
 * @module
 */

import assert from "node:assert/strict";
import { deepNormGrad } from "../../src/ops/deep_norm_grad.ts";
import { type DType, roundToDType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, chipAccepts, forEachBackend, on } from "../helpers/backends.ts";
import { deepNormGrad64 } from "../oracle/mod.ts";
import { fusedLayerNorm } from "../oracle/fused_layer_norms.ts";
import { EXACT, toleranceFor } from "../helpers/tolerance.ts";

const ALL_SOCS = { socs: ["Ascend950PR_9599", "Ascend910B4", "Ascend310P3"] };

function rnd(shape: number[], seed: number, dtype: DType = "float32", low = -2, high = 3) {
  return Tensor.random(shape, { seed, dtype, low, high });
}

const values = (t: Tensor) => [...t.toFloat64Array()];

forEachBackend("deepNormGrad: dx, dgx, dbeta, dgamma against the float64 oracle", (ctx) => {
  const d = ctx.device;
  for (const dtype of ["float32", "float16", "bfloat16"] as DType[]) {
    if (!chipAccepts(ctx.soc, "aclnnDeepNormGrad", [dtype])) continue;
    for (const alpha of [0.87, 2.5]) {
      const [rows, cols] = [3, 66];
      const shape = [3, 2, 33];
      const x = rnd(shape, 1, dtype);
      const gx = rnd(shape, 2, dtype);
      const dy = rnd(shape, 3, dtype, -1, 1);
      const gamma = rnd([2, 33], 4, dtype, 0.5, 1.5);
      const a = Math.fround(alpha);
      const f = fusedLayerNorm(values(x), values(gx), rows, cols, 1e-6, [], [], { alpha: a });
      const mean = Tensor.fromArray(f.mean, [3, 1, 1]);
      const rstd = Tensor.fromArray(f.rstd, [3, 1, 1]);
      const r = deepNormGrad({
        dy: on(dy, d),
        x: on(x, d),
        gx: on(gx, d),
        gamma: on(gamma, d),
        mean: on(mean, d),
        rstd: on(rstd, d),
        alpha,
      });
      const label = `${ctx.label} ${dtype} alpha ${alpha}`;
      assert.equal(r.dx.dtype, dtype, label);
      assert.equal(r.dgamma.dtype, "float32", label);
      assert.deepEqual(r.dbeta.shape, [2, 33], label);
      const e = deepNormGrad64(
        values(dy),
        values(x),
        values(gx),
        values(gamma),
        values(mean),
        values(rstd),
        a,
        rows,
        cols,
      );
      assertClose(r.dgx, e.dgx, toleranceFor(dtype), `${label} dgx`);
      assertClose(r.dx, e.dx, toleranceFor(dtype), `${label} dx`);
      assertClose(r.dgamma, e.dgamma, toleranceFor("float32"), `${label} dgamma`);
      assertClose(r.dbeta, e.dbeta, toleranceFor("float32"), `${label} dbeta`);
      if (dtype === "float32" && alpha === 2.5) {
        // 2.5 * dgx, exact for a float32 dgx only when the product needs no extra bit: a
        // float32 dgx times 2.5 rounded once is what both backends store.
        const want = values(r.dgx).map((v) => roundToDType(v * 2.5, "float32"));
        assertClose(r.dx, want, toleranceFor("float32"), `${label} dx = alpha * dgx`);
      }
    }
  }
}, ALL_SOCS);

forEachBackend("deepNormGrad: alpha = 1 makes dx equal dgx", (ctx) => {
  const d = ctx.device;
  const x = rnd([4, 16], 5, "float16");
  const gx = rnd([4, 16], 6, "float16");
  const f = fusedLayerNorm(values(x), values(gx), 4, 16, 1e-6, [], [], { alpha: 1 });
  const r = deepNormGrad({
    dy: on(rnd([4, 16], 7, "float16", -1, 1), d),
    x: on(x, d),
    gx: on(gx, d),
    gamma: on(rnd([16], 8, "float16", 0.5, 1.5), d),
    mean: on(Tensor.fromArray(f.mean, [4, 1]), d),
    rstd: on(Tensor.fromArray(f.rstd, [4, 1]), d),
    alpha: 1,
  });
  assertClose(r.dx, values(r.dgx), EXACT, `${ctx.label} dx = dgx`);
});

forEachBackend("deepNormGrad: CANN's codes in its check order", (ctx) => {
  const d = ctx.device;
  const t = (shape: number[], dtype: DType = "float32") => on(Tensor.ones(shape, dtype), d);
  const ok = {
    dy: t([2, 4]),
    x: t([2, 4]),
    gx: t([2, 4]),
    gamma: t([4]),
    mean: t([2, 1]),
    rstd: t([2, 1]),
  };
  assertAclnnError(() => deepNormGrad({ ...ok, gx: undefined }), 161001, "gx");
  assertAclnnError(() => deepNormGrad({ ...ok, rstd: null }), 161001, "rstd");
  assertAclnnError(() => deepNormGrad({ ...ok, out: { dgx: null } }), 161001, "dgx");
  assertAclnnError(() => deepNormGrad({ ...ok, gamma: t([4], "float16") }), 161002, "gamma");
  assertAclnnError(() => deepNormGrad({ ...ok, rstd: t([2, 1], "float16") }), 161002, "rstd");
  assertAclnnError(
    () => deepNormGrad({ ...ok, out: { dbeta: t([4], "bfloat16") } }),
    161002,
    "dbeta",
  );
  assertAclnnError(() => deepNormGrad({ ...ok, alpha: Infinity }), 161002, "alpha");
  // The tiling, in its order.
  assertAclnnError(
    () => deepNormGrad({ ...ok, dy: t([4]), x: t([4]), gx: t([4]), mean: t([1]) }),
    561002,
    "dy",
  );
  assertAclnnError(() => deepNormGrad({ ...ok, x: t([2, 4, 1]) }), 561002, "x");
  assertAclnnError(() => deepNormGrad({ ...ok, mean: t([2]) }), 561002, "mean");
  assertAclnnError(() => deepNormGrad({ ...ok, out: { dgamma: t([1, 4]) } }), 561002, "dgamma");
  assertAclnnError(() => deepNormGrad({ ...ok, gamma: t([2, 4]) }), 561002, "gamma");
  assertAclnnError(
    () => deepNormGrad({ ...ok, dy: t([0, 4]), x: t([0, 4]), gx: t([0, 4]), mean: t([0, 1]) }),
    561002,
    "dy",
  );
  assertAclnnError(() => deepNormGrad({ ...ok, gx: t([2, 5]) }), 561002, "gx");
  assertAclnnError(() => deepNormGrad({ ...ok, out: { dx: t([1, 4]) } }), 561002, "dx");
  assertAclnnError(() => deepNormGrad({ ...ok, rstd: t([1, 1]) }), 561002, "rstd");
  assertAclnnError(() => deepNormGrad({ ...ok, gamma: t([2]) }), 561002, "gamma");
  assertAclnnError(() => deepNormGrad({ ...ok, out: { dbeta: t([2]) } }), 561002, "dbeta");
  // Trailing dims of mean are not checked, but one value per row is.
  assertAclnnError(() => deepNormGrad({ ...ok, mean: t([2, 2]) }), 561002, "mean");
  const r = deepNormGrad({ ...ok, mean: t([2, 1]), rstd: t([2, 1]) });
  assert.deepEqual(r.dgx.shape, [2, 4]);
  // Every output empty: CANN launches nothing.
  const none = deepNormGrad({ ...ok, dy: t([0, 4]), gamma: t([0]) });
  assert.deepEqual(none.dx.shape, [0, 4]);
});

forEachBackend("deepNormGrad: bfloat16 per SoC", (ctx) => {
  if (ctx.soc?.name !== "Ascend310P") return;
  const d = ctx.device;
  const b = (shape: number[]) => on(Tensor.ones(shape, "bfloat16"), d);
  const f = (shape: number[]) => on(Tensor.ones(shape), d);
  const call = () =>
    deepNormGrad({
      dy: b([2, 4]),
      x: b([2, 4]),
      gx: b([2, 4]),
      gamma: b([4]),
      mean: f([2, 1]),
      rstd: f([2, 1]),
    });
  assertChipRefuses(ctx, call, "dy");
}, ALL_SOCS);
