/**
 * addLayerNormGrad (aclnnAddLayerNormGrad) on every backend: dx, dgamma, dbeta against the
 * float64 oracle (tests/oracle/fused_layer_norm_grads.ts) per dtype, with and without dsum; the
 * float32 x1 + x2 that is not rounded to the data dtype; CANN's codes per check (161001, 161002,
 * the tiling's 561002); empty outputs; bfloat16 refused on the Atlas inference series.
 *
 * @module
 */

import assert from "node:assert/strict";
import { addLayerNormGrad } from "../../src/ops/add_layer_norm_grad.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, chipAccepts, forEachBackend, on } from "../helpers/backends.ts";
import { addLayerNormGrad64 } from "../oracle/mod.ts";
import { fusedLayerNorm } from "../oracle/fused_layer_norms.ts";
import { toleranceFor } from "../helpers/tolerance.ts";

const ALL_SOCS = { socs: ["Ascend950PR_9599", "Ascend910B4", "Ascend310P3"] };

function rnd(shape: number[], seed: number, dtype: DType = "float32", low = -2, high = 3) {
  return Tensor.random(shape, { seed, dtype, low, high });
}

const values = (t: Tensor) => [...t.toFloat64Array()];

/** The forward's float32 mean and rstd of x1 + x2 (the statistics the backward takes). */
function statistics(x1: Tensor, x2: Tensor, rows: number, cols: number, shape: number[]) {
  const f = fusedLayerNorm(values(x1), values(x2), rows, cols, 1e-5, [], []);
  return {
    mean: Tensor.fromArray(f.mean, shape, "float32"),
    rstd: Tensor.fromArray(f.rstd, shape, "float32"),
  };
}

forEachBackend("addLayerNormGrad: dx, dgamma, dbeta against the float64 oracle", (ctx) => {
  const d = ctx.device;
  for (const dtype of ["float32", "float16", "bfloat16"] as DType[]) {
    if (!chipAccepts(ctx.soc, "aclnnAddLayerNormGrad", [dtype])) continue;
    for (const withDsum of [false, true]) {
      const [rows, cols] = [6, 37];
      const x1 = rnd([2, 3, cols], 1, dtype);
      const x2 = rnd([2, 3, cols], 2, dtype);
      const dy = rnd([2, 3, cols], 3, dtype, -1, 1);
      const gamma = rnd([cols], 4, dtype, 0.5, 1.5);
      const dsum = withDsum ? rnd([2, 3, cols], 5, dtype, -1, 1) : undefined;
      const { mean, rstd } = statistics(x1, x2, rows, cols, [2, 3, 1]);
      const r = addLayerNormGrad({
        dy: on(dy, d),
        x1: on(x1, d),
        x2: on(x2, d),
        rstd: on(rstd, d),
        mean: on(mean, d),
        gamma: on(gamma, d),
        dsum: dsum && on(dsum, d),
      });
      const label = `${ctx.label} ${dtype}${withDsum ? " dsum" : ""}`;
      assert.equal(r.dx.dtype, dtype, label);
      assert.equal(r.dgamma.dtype, "float32", label);
      assert.deepEqual(r.dbeta.shape, [cols], label);
      const e = addLayerNormGrad64(
        values(dy),
        values(x1),
        values(x2),
        values(rstd),
        values(mean),
        values(gamma),
        rows,
        cols,
        dsum && values(dsum),
      );
      assertClose(r.dx, e.dx, toleranceFor(dtype), `${label} dx`);
      assertClose(r.dgamma, e.dgamma, toleranceFor("float32"), `${label} dgamma`);
      assertClose(r.dbeta, e.dbeta, toleranceFor("float32"), `${label} dbeta`);
    }
  }
}, ALL_SOCS);

forEachBackend("addLayerNormGrad: x1 + x2 is formed in float32, not rounded to float16", (ctx) => {
  // x1 + x2 = 1 + i * 2^-12 (both summands exact in float16); rounded to float16 the sums
  // collapse to 1 or 1 + 2^-10, which moves x - mean by up to 2^-11 against a row spread of
  // 7 * 2^-12: dx would be far off.
  const d = ctx.device;
  const cols = 8;
  const a = Array.from({ length: cols }, () => 1);
  const b = Array.from({ length: cols }, (_, i) => i * 2 ** -12);
  const x1 = Tensor.fromArray(a, [1, cols], "float16");
  const x2 = Tensor.fromArray(b, [1, cols], "float16");
  const dy = Tensor.fromArray(b.map((_, i) => (i % 3) - 1), [1, cols], "float16");
  const gamma = Tensor.ones([cols], "float16");
  const { mean, rstd } = statistics(x1, x2, 1, cols, [1, 1]);
  const r = addLayerNormGrad({
    dy: on(dy, d),
    x1: on(x1, d),
    x2: on(x2, d),
    rstd: on(rstd, d),
    mean: on(mean, d),
    gamma: on(gamma, d),
  });
  const e = addLayerNormGrad64(
    values(dy),
    a,
    b,
    values(rstd),
    values(mean),
    values(gamma),
    1,
    cols,
  );
  assertClose(r.dx, e.dx, toleranceFor("float16"), `${ctx.label} dx of the float sum`);
  assertClose(r.dgamma, e.dgamma, toleranceFor("float32"), `${ctx.label} dgamma of the float sum`);
});

forEachBackend("addLayerNormGrad: CANN's codes in its check order", (ctx) => {
  const d = ctx.device;
  const t = (shape: number[], dtype: DType = "float32") => on(Tensor.ones(shape, dtype), d);
  const ok = {
    dy: t([2, 4]),
    x1: t([2, 4]),
    x2: t([2, 4]),
    rstd: t([2, 1]),
    mean: t([2, 1]),
    gamma: t([4]),
  };
  assertAclnnError(() => addLayerNormGrad({ ...ok, x2: undefined }), 161001, "x2");
  assertAclnnError(() => addLayerNormGrad({ ...ok, gamma: null }), 161001, "gamma");
  assertAclnnError(() => addLayerNormGrad({ ...ok, out: { dbeta: null } }), 161001, "dbeta");
  assertAclnnError(() => addLayerNormGrad({ ...ok, x1: t([2, 4], "float16") }), 161002, "x1");
  assertAclnnError(() => addLayerNormGrad({ ...ok, mean: t([2, 1], "float16") }), 161002, "mean");
  assertAclnnError(() => addLayerNormGrad({ ...ok, dsum: t([2, 4], "bfloat16") }), 161002, "dsum");
  assertAclnnError(
    () => addLayerNormGrad({ ...ok, out: { dgamma: t([4], "float16") } }),
    161002,
    "dgamma",
  );
  // The tiling, in its order.
  assertAclnnError(() => addLayerNormGrad({ ...ok, gamma: t([0]) }), 561002, "gamma");
  assertAclnnError(() => addLayerNormGrad({ ...ok, rstd: t([2]) }), 561002, "rstd");
  assertAclnnError(() => addLayerNormGrad({ ...ok, out: { dbeta: t([1, 4]) } }), 561002, "dbeta");
  assertAclnnError(() => addLayerNormGrad({ ...ok, gamma: t([1, 2, 4]) }), 561002, "gamma");
  assertAclnnError(
    () => addLayerNormGrad({ ...ok, x1: t([2, 0]), x2: t([2, 0]), dy: t([2, 0]) }),
    561002,
    "x1",
  );
  assertAclnnError(() => addLayerNormGrad({ ...ok, x2: t([4, 2]) }), 561002, "x2");
  assertAclnnError(() => addLayerNormGrad({ ...ok, out: { dx: t([1, 8]) } }), 561002, "dx");
  assertAclnnError(() => addLayerNormGrad({ ...ok, gamma: t([2]) }), 561002, "gamma");
  assertAclnnError(
    () => addLayerNormGrad({ ...ok, mean: t([1, 2]), rstd: t([1, 2]) }),
    561002,
    "mean",
  );
  assertAclnnError(() => addLayerNormGrad({ ...ok, out: { dgamma: t([2]) } }), 561002, "dgamma");
  assertAclnnError(() => addLayerNormGrad({ ...ok, dsum: t([4, 2]) }), 561002, "dsum");
  // Every output empty: CANN launches nothing (no check of the rest).
  const none = addLayerNormGrad({
    ...ok,
    dy: t([0, 4]),
    x1: t([3]),
    gamma: t([0]),
  });
  assert.deepEqual(none.dx.shape, [0, 4]);
  assert.deepEqual(none.dgamma.shape, [0]);
});

forEachBackend("addLayerNormGrad: bfloat16 per SoC", (ctx) => {
  const d = ctx.device;
  if (ctx.soc?.name !== "Ascend310P") return;
  const b = (shape: number[]) => on(Tensor.ones(shape, "bfloat16"), d);
  const f = (shape: number[]) => on(Tensor.ones(shape), d);
  const call = () =>
    addLayerNormGrad({
      dy: b([2, 4]),
      x1: b([2, 4]),
      x2: b([2, 4]),
      rstd: f([2, 1]),
      mean: f([2, 1]),
      gamma: b([4]),
    });
  assertChipRefuses(ctx, call, "dy");
}, ALL_SOCS);
