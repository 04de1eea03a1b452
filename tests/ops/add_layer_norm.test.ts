/**
 * addLayerNorm (aclnnAddLayerNorm) and deepNorm (aclnnDeepNorm) on every backend: y, mean, rstd
 * (and x) against the float64 oracle (tests/oracle/fused_layer_norms.ts) per dtype, including
 * the mixed rows CANN's OpDef allows; the float32 sum that is not rounded to the data dtype
 * before the statistics; CANN's codes per check (161001, 161002, the tiling's 561002); empty
 * outputs; the chips' rules (the Atlas inference series' dtypes, bfloat16 and rows of no
 * element per SoC).
 *
 * @module
 */

import assert from "node:assert/strict";
import { addLayerNorm } from "../../src/ops/add_layer_norm.ts";
import { deepNorm } from "../../src/ops/deep_norm.ts";
import { type DType, roundToDType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, chipAccepts, forEachBackend, on } from "../helpers/backends.ts";
import { fusedLayerNorm } from "../oracle/fused_layer_norms.ts";
import { EXACT, looser, toleranceFor } from "../helpers/tolerance.ts";

const ALL_SOCS = { socs: ["Ascend950PR_9599", "Ascend910B4", "Ascend310P3"] };

function rnd(shape: number[], seed: number, dtype: DType = "float32", low = -2, high = 3) {
  return Tensor.random(shape, { seed, dtype, low, high });
}

const values = (t: Tensor) => [...t.toFloat64Array()];

/** (x1, x2, gamma) dtypes of the OpDef's rows (add_layer_norm_def.cpp), y's dtype last. */
const ROWS: [DType, DType, DType, DType][] = [
  ["float32", "float32", "float32", "float32"],
  ["float16", "float16", "float16", "float16"],
  ["bfloat16", "bfloat16", "bfloat16", "bfloat16"],
  ["float16", "float16", "float32", "float16"],
  ["bfloat16", "float32", "float32", "float32"],
  ["float32", "float16", "float32", "float32"],
];

forEachBackend(
  "addLayerNorm: y, mean, rstd, x against the float64 oracle, per OpDef row",
  (ctx) => {
    const d = ctx.device;
    for (const [t1, t2, tg, ty] of ROWS) {
      const dtypes = [t1, t2, tg];
      if (!chipAccepts(ctx.soc, "aclnnAddLayerNorm", dtypes)) continue;
      const mixed = new Set(dtypes).size > 1;
      if (ctx.soc?.name === "Ascend310P" && mixed) continue; // refused below
      const [rows, cols] = [6, 37];
      const x1 = rnd([2, 3, cols], 1, t1);
      const x2 = rnd([2, 3, cols], 2, t2);
      const gamma = rnd([cols], 3, tg, 0.5, 1.5);
      const beta = rnd([cols], 4, tg, -1, 1);
      const bias = rnd([cols], 5, ty, -1, 1);
      const r = addLayerNorm({
        x1: on(x1, d),
        x2: on(x2, d),
        gamma: on(gamma, d),
        beta: on(beta, d),
        bias: on(bias, d),
        additionalOutput: true,
      });
      const label = `${ctx.label} ${dtypes.join("/")}`;
      assert.equal(r.y.dtype, ty, label);
      assert.equal(r.x!.dtype, ty, label);
      assert.deepEqual(r.mean.shape, [2, 3, 1]);
      const e = fusedLayerNorm(
        values(x1),
        values(x2),
        rows,
        cols,
        1e-5,
        values(gamma),
        values(beta),
        {
          bias: values(bias),
        },
      );
      // x: the float32 sum rounded once to y's dtype (a float32 rounding off the exact sum).
      assertClose(r.x, e.x, looser(toleranceFor("float32"), toleranceFor(ty)), `${label} x`);
      assertClose(r.y, e.y, toleranceFor(ty), `${label} y`);
      if (ctx.soc?.name === "Ascend310P") {
        // The kernel writes no mean or rstd there: NaN.
        assert.ok(values(r.mean).every(Number.isNaN), `${label} mean`);
        continue;
      }
      assertClose(r.mean, e.mean, toleranceFor("float32"), `${label} mean`);
      assertClose(r.rstd, e.rstd, toleranceFor("float32"), `${label} rstd`);
    }
  },
  ALL_SOCS,
);

forEachBackend(
  "addLayerNorm: the statistics take the float32 sum, not x rounded to float16",
  (ctx) => {
    // x1 + x2 = 1 + 2^-12 per element with float16 inputs (1 and 2^-12 both exact): rounded to
    // float16 the sum is 1 in every element of row 0; the float32 sum varies with the second
    // summand, so rstd of a row of 1 + k * 2^-12 is finite only without the rounding.
    const d = ctx.device;
    const cols = 8;
    const a = Array.from({ length: cols }, () => 1);
    const b = Array.from({ length: cols }, (_, i) => i * 2 ** -12);
    const x1 = Tensor.fromArray(a, [1, cols], "float16");
    const x2 = Tensor.fromArray(b, [1, cols], "float16");
    const gamma = Tensor.ones([cols], "float16");
    const beta = Tensor.zeros([cols], "float16");
    const r = addLayerNorm({
      x1: on(x1, d),
      x2: on(x2, d),
      gamma: on(gamma, d),
      beta: on(beta, d),
      epsilon: 0,
      additionalOutput: true,
    });
    const e = fusedLayerNorm(a, b, 1, cols, 0, values(gamma), values(beta));
    // Rounded, the sums 1 + i * 2^-12 collapse to 1 or 1 + 2^-10: rstd would be far off.
    assertClose(r.rstd, e.rstd, toleranceFor("float32"), `${ctx.label} rstd of the float sum`);
    assertClose(r.mean, e.mean, toleranceFor("float32"), `${ctx.label} mean of the float sum`);
    assertClose(r.x, e.x.map((v) => roundToDType(v, "float16")), EXACT, `${ctx.label} x rounded`);
  },
);

forEachBackend("addLayerNorm: x null without additionalOutput; bias of x1's shape", (ctx) => {
  const d = ctx.device;
  const x1 = rnd([4, 10], 7);
  const x2 = rnd([4, 10], 8);
  const gamma = rnd([10], 9, "float32", 0.5, 1.5);
  const beta = rnd([10], 10);
  const bias = rnd([4, 10], 11);
  const r = addLayerNorm({
    x1: on(x1, d),
    x2: on(x2, d),
    gamma: on(gamma, d),
    beta: on(beta, d),
    bias: on(bias, d),
  });
  assert.equal(r.x, null);
  const e = fusedLayerNorm(values(x1), values(x2), 4, 10, 1e-5, values(gamma), values(beta), {
    bias: values(bias),
  });
  assertClose(r.y, e.y, toleranceFor("float32"), `${ctx.label} y`);
  assertClose(r.rstd, e.rstd, toleranceFor("float32"), `${ctx.label} rstd`);
});

forEachBackend("addLayerNorm: CANN's codes in its check order", (ctx) => {
  const d = ctx.device;
  const t = (shape: number[], dtype: DType = "float32") => on(Tensor.ones(shape, dtype), d);
  const ok = { x1: t([2, 4]), x2: t([2, 4]), gamma: t([4]), beta: t([4]) };
  assertAclnnError(() => addLayerNorm({ ...ok, x1: undefined }), 161001, "x1");
  assertAclnnError(() => addLayerNorm({ ...ok, beta: null }), 161001, "beta");
  assertAclnnError(() => addLayerNorm({ ...ok, out: { y: null } }), 161001, "y");
  const f16 = { x1: t([2, 4], "float16"), x2: t([2, 4], "bfloat16") };
  assertAclnnError(() => addLayerNorm({ ...ok, ...f16 }), 161002, "x2");
  const mixedGamma = { ...ok, x2: t([2, 4], "float16"), x1: t([2, 4], "float16") };
  assertAclnnError(() => addLayerNorm({ ...mixedGamma, beta: t([4], "float16") }), 161002, "beta");
  assertAclnnError(
    () => addLayerNorm({ ...ok, out: { mean: t([2, 1], "float16") } }),
    161002,
    "mean",
  );
  assertAclnnError(() => addLayerNorm({ ...ok, gamma: t([5]), beta: t([5]) }), 561002, "gamma");
  assertAclnnError(() => addLayerNorm({ ...ok, beta: t([2, 4]) }), 561002, "beta");
  assertAclnnError(() => addLayerNorm({ ...ok, x2: t([4, 2]) }), 561002, "x2");
  assertAclnnError(() => addLayerNorm({ ...ok, out: { mean: t([2]) } }), 561002, "mean");
  assertAclnnError(() => addLayerNorm({ ...ok, bias: t([3]) }), 561002, "bias");
  assertAclnnError(() => addLayerNorm({ ...ok, bias: t([8]) }), 561002, "bias");
  assertAclnnError(() => addLayerNorm({ ...ok, x1: t([1, 1, 1, 1, 1, 1, 1, 1, 2, 4]) }), 561002);
  // No rows: every output empty, CANN launches nothing (a wrong gamma goes unchecked).
  const none = addLayerNorm({ x1: t([0, 4]), x2: t([0, 4]), gamma: t([3]), beta: t([3]) });
  assert.deepEqual(none.y.shape, [0, 4]);
});

forEachBackend(
  "addLayerNorm: rows of no element per SoC; the Atlas inference series' rules",
  (ctx) => {
    const d = ctx.device;
    const t = (shape: number[], dtype: DType = "float32") => on(Tensor.ones(shape, dtype), d);
    const empty = () => addLayerNorm({ x1: t([3, 0]), x2: t([3, 0]), gamma: t([0]), beta: t([0]) });
    if (!ctx.soc || ctx.soc.npuArch === 3510) {
      const r = empty();
      assert.ok(values(r.mean).every(Number.isNaN) && r.mean.numel === 3, `${ctx.label} mean NaN`);
      assert.ok(values(r.rstd).every(Number.isNaN), `${ctx.label} rstd NaN`);
    } else {
      assertAclnnError(empty, 561002, "gamma");
    }
    if (ctx.soc?.name !== "Ascend310P") return;
    const b = { x1: t([2, 4], "bfloat16"), x2: t([2, 4], "bfloat16") };
    assertChipRefuses(
      ctx,
      () => addLayerNorm({ ...b, gamma: t([4], "bfloat16"), beta: t([4], "bfloat16") }),
      "x1",
    );
    const h = { x1: t([2, 4], "float16"), x2: t([2, 4], "float16") };
    assertChipRefuses(ctx, () => addLayerNorm({ ...h, gamma: t([4]), beta: t([4]) }), "gamma");
  },
  ALL_SOCS,
);

forEachBackend("deepNorm: alpha * x + gx in float32, then LayerNorm (float64 oracle)", (ctx) => {
  const d = ctx.device;
  for (const dtype of ["float32", "float16", "bfloat16"] as DType[]) {
    if (!chipAccepts(ctx.soc, "aclnnDeepNorm", [dtype])) {
      if (dtype === "bfloat16" && ctx.soc) {
        const b = rnd([2, 8], 1, dtype);
        assertChipRefuses(
          ctx,
          () =>
            deepNorm({
              x: on(b, d),
              gx: on(b, d),
              beta: on(rnd([8], 2, dtype), d),
              gamma: on(rnd([8], 3, dtype), d),
            }),
          "x",
        );
      }
      continue;
    }
    const x = rnd([3, 2, 33], 1, dtype);
    const gx = rnd([3, 2, 33], 2, dtype);
    const beta = rnd([2, 33], 3, dtype, -1, 1);
    const gamma = rnd([2, 33], 4, dtype, 0.5, 1.5);
    const alpha = 0.87;
    const r = deepNorm({
      x: on(x, d),
      gx: on(gx, d),
      beta: on(beta, d),
      gamma: on(gamma, d),
      alpha,
    });
    assert.equal(r.y.dtype, dtype);
    assert.deepEqual(r.mean.shape, [3, 1, 1]);
    const e = fusedLayerNorm(
      values(x),
      values(gx),
      3,
      66,
      Math.fround(1e-6),
      values(gamma),
      values(beta),
      {
        alpha: Math.fround(alpha),
      },
    );
    assertClose(r.y, e.y, toleranceFor(dtype), `${ctx.label} ${dtype} y`);
    assertClose(r.mean, e.mean, toleranceFor("float32"), `${ctx.label} ${dtype} mean`);
    assertClose(r.rstd, e.rstd, toleranceFor("float32"), `${ctx.label} ${dtype} rstd`);
  }
}, ALL_SOCS);

forEachBackend("deepNorm: CANN's codes in its check order", (ctx) => {
  const d = ctx.device;
  const t = (shape: number[], dtype: DType = "float32") => on(Tensor.ones(shape, dtype), d);
  const ok = { x: t([2, 4]), gx: t([2, 4]), beta: t([4]), gamma: t([4]) };
  assertAclnnError(() => deepNorm({ ...ok, gx: undefined }), 161001, "gx");
  assertAclnnError(() => deepNorm({ ...ok, out: { rstd: null } }), 161001, "rstd");
  assertAclnnError(() => deepNorm({ ...ok, gamma: t([4], "float16") }), 161002, "gamma");
  assertAclnnError(() => deepNorm({ ...ok, out: { mean: t([2, 1], "float16") } }), 161002, "mean");
  assertAclnnError(() => deepNorm({ ...ok, x: t([4]), gx: t([4]) }), 561002, "x");
  assertAclnnError(() => deepNorm({ ...ok, gamma: t([2, 4]), beta: t([2, 4]) }), 561002, "gamma");
  assertAclnnError(
    () => deepNorm({ ...ok, x: t([2, 0]), gx: t([2, 0]), beta: t([0]), gamma: t([0]) }),
    561002,
    "x",
  );
  assertAclnnError(() => deepNorm({ ...ok, beta: t([5]) }), 561002, "beta");
  assertAclnnError(() => deepNorm({ ...ok, out: { y: t([4, 2]) } }), 561002, "y");
  const none = deepNorm({ x: t([0, 4]), gx: t([0, 4]), beta: t([4]), gamma: t([4]) });
  assert.deepEqual(none.y.shape, [0, 4]);
});
