/**
 * addRmsNorm (aclnnAddRmsNorm) on every backend: x = x1 + x2 rounded to the dtype, rstd and y
 * from that x against the float64 reference, the gradient of the fused block (through
 * rmsNormGrad) against central differences, empty inputs, CANN's codes (161001, 161002, the
 * tiling's 561103), and the chips' rules, including the Atlas inference series, whose kernel
 * stores no rstd (the backend computes it with aclnnRmsNorm).
 *
 * @module
 */

import assert from "node:assert/strict";
import { addRmsNorm, type AddRmsNormArgs } from "../../src/ops/add_rms_norm.ts";
import { rmsNormGrad } from "../../src/ops/rms_norm_grad.ts";
import { type DType, roundToDType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import {
  assertChipRefuses,
  type BackendContext,
  chipAccepts,
  forEachBackend,
  on,
} from "../helpers/backends.ts";
import { dot, finiteDifferences, rmsNorm as rmsNorm64 } from "../oracle/row_norms.ts";
import { betweenKernels, EXACT, looser, toleranceFor } from "../helpers/tolerance.ts";

const NULLPTR = 161001;
const INVALID = 161002;
const INNER_NULLPTR = 561103;
const EPS = 1e-6;

function rnd(shape: number[], seed: number, dtype: DType = "float32", low = -2, high = 3) {
  return Tensor.random(shape, { seed, dtype, low, high });
}

const CASES: { name: string; shape: number[]; gamma: number[]; dtype: DType; layout?: boolean }[] =
  [
    { name: "float32 [4,6,10]", shape: [4, 6, 10], gamma: [10], dtype: "float32" },
    { name: "float32, gamma of two dims", shape: [3, 4, 5], gamma: [4, 5], dtype: "float32" },
    { name: "float16", shape: [5, 12], gamma: [12], dtype: "float16" },
    { name: "bfloat16", shape: [2, 3, 16], gamma: [16], dtype: "bfloat16" },
    { name: "transposed float32", shape: [6, 10], gamma: [10], dtype: "float32", layout: true },
  ];

forEachBackend(
  "addRmsNorm: x rounded to the dtype; rstd and y from the sum (CPU) or per chip (float64 reference)",
  (ctx) => {
    for (const c of CASES) {
      if (!chipAccepts(ctx.soc, "aclnnAddRmsNorm", [c.dtype])) continue;
      const view = (t: Tensor) => c.layout ? t.transpose(0, 1).contiguous().transpose(0, 1) : t;
      const x1 = view(rnd(c.shape, 1, c.dtype));
      const x2 = view(rnd(c.shape, 2, c.dtype));
      const gamma = rnd(c.gamma, 3, c.dtype, 0.5, 1.5);
      const r = addRmsNorm({
        x1: on(x1, ctx.device),
        x2: on(x2, ctx.device),
        gamma: on(gamma, ctx.device),
      });
      const a = x1.toFloat64Array();
      const b = x2.toFloat64Array();
      const sum = [...a].map((v, i) => v + b[i]);
      const x = sum.map((v) => roundToDType(v, c.dtype));
      const cols = gamma.numel;
      const g = [...gamma.toFloat64Array()];
      assertClose(r.x, x, EXACT, `${ctx.label} ${c.name} x = round(x1 + x2)`);
      assert.equal(r.x.dtype, c.dtype);
      assert.equal(r.rstd.dtype, "float32");
      if (!ctx.soc) {
        // The CPU backend: rstd and y from the float sum, as Ascend 950 computes them.
        const e = rmsNorm64(sum, sum.length / cols, cols, EPS, g);
        assertClose(r.rstd, e.rstd, undefined, `${ctx.label} ${c.name} rstd`);
        assertClose(r.y, e.y, undefined, `${ctx.label} ${c.name} y`);
        continue;
      }
      const e = rmsNorm64(x, x.length / cols, cols, EPS, g);
      // Some of CANN's kernels square the float sum x1 + x2 before its rounding to the dtype
      // (Ascend 950; the A2/A3 bfloat16 NORMAL template: tests/software_cann/add_rms_norm.test.ts),
      // which moves rstd by up to the dtype's rounding.
      const rstdTol = looser(toleranceFor("float32"), toleranceFor(c.dtype));
      assertClose(r.rstd, e.rstd, rstdTol, `${ctx.label} ${c.name} rstd`);
      // CANN's 16-bit kernels round x * rstd to the dtype before the gamma product, or form y
      // from the float sum (one rounding more or less than the CPU backend's).
      assertClose(r.y, e.y, betweenKernels(toleranceFor(c.dtype)), `${ctx.label} ${c.name} y`);
    }
  },
  { socs: ["Ascend950PR_9599", "Ascend910B4", "Ascend310P3"] },
);

/**
 * The fused block as a transformer uses it: y = rmsNorm(x1 + x2) * gamma; the gradient wrt x1
 * (and x2) is rmsNormGrad's dx at the stored x and rstd. Checked against central differences
 * of the float64 forward.
 */
forEachBackend(
  "addRmsNorm + rmsNormGrad: the block's gradients equal finite differences",
  (ctx) => {
    const [rows, cols] = [3, 8];
    const x1 = rnd([rows, cols], 10);
    const x2 = rnd([rows, cols], 11);
    const g = rnd([cols], 12, "float32", 0.5, 1.5);
    const dy = rnd([rows, cols], 13, "float32", -1, 1);
    const [x1v, x2v, gv, dyv] = [x1, x2, g, dy].map((t) => [...t.toFloat64Array()]);
    const loss = (a: number[], gs: number[]) =>
      dot(dyv, rmsNorm64(a.map((v, i) => v + x2v[i]), rows, cols, EPS, gs).y);
    const fdX1 = finiteDifferences((v) => loss(v, gv), x1v);
    const fdGamma = finiteDifferences((v) => loss(x1v, v), gv);
    const d = ctx.device;
    const f = addRmsNorm({ x1: on(x1, d), x2: on(x2, d), gamma: on(g, d), epsilon: EPS });
    const b = rmsNormGrad({ dy: on(dy, d), x: f.x, rstd: f.rstd, gamma: on(g, d) });
    // x = x1 + x2 is rounded to float32 before the norm: a float32 input perturbation.
    assertClose(b.dx, fdX1, toleranceFor("float32"), `${ctx.label} dL/dx1`);
    assertClose(b.dgamma, fdGamma, toleranceFor("float32"), `${ctx.label} dL/dgamma`);
  },
);

/**
 * CANN returns SUCCESS for an empty x1 or gamma before its l0 operator (aclnn_add_rms_norm.cpp
 * 229-236): no tiling check, no ViewCopy, nothing written. The outputs the call allocates hold
 * NaN; given ones keep their values.
 */
forEachBackend(
  "addRmsNorm: an empty x1 or gamma succeeds before the tiling, writing nothing",
  (ctx) => {
    const d = ctx.device;
    const t = (shape: number[], v = 1) => Tensor.full(shape, v, "float32", d);
    // No rows: gamma not x1's trailing dims, a negative epsilon, an rstd of any shape.
    const kept = t([5], 7);
    const none = addRmsNorm({
      x1: t([0, 4]),
      x2: t([0, 4]),
      gamma: t([3]),
      epsilon: -1,
      out: { rstd: kept },
    });
    assert.deepEqual(none.rstd.toArray(), [7, 7, 7, 7, 7]);
    assert.deepEqual(none.y.shape, [0, 4]);
    // An empty gamma with a non-empty x1: nothing is computed.
    const y = t([2, 3], 7);
    const noGamma = addRmsNorm({ x1: t([2, 3]), x2: t([2, 3]), gamma: t([0]), out: { y } });
    assert.deepEqual(noGamma.y.toArray(), [7, 7, 7, 7, 7, 7]);
    assert.ok(noGamma.x.toArray().every(Number.isNaN), "allocated x: NaN");
    assert.deepEqual(noGamma.rstd.toArray(), [NaN, NaN]);
    // Rows of no element: a given rstd is left as it was, an allocated one is NaN.
    const rstd = t([2, 1], 7);
    const noCols = addRmsNorm({ x1: t([2, 0]), x2: t([2, 0]), gamma: t([0]), out: { rstd } });
    assert.deepEqual(noCols.rstd.toArray(), [7, 7]);
    const other = addRmsNorm({ x1: t([2, 0]), x2: t([2, 0]), gamma: t([5]) });
    assert.deepEqual([other.rstd.shape, other.rstd.toArray()], [[2, 1], [NaN, NaN]]);
  },
);

/**
 * A given rstd receives CANN's result through l0op::ViewCopy: x1's dims before gamma's then 1s,
 * or with one row any one-element shape; another shape is 561103 (ops-math contiguous.cpp
 * 634-678), even of one value per row.
 */
forEachBackend("addRmsNorm: a given rstd takes the result's shape (ViewCopy, 561103)", (ctx) => {
  const d = ctx.device;
  const x1 = on(rnd([2, 4], 40), d);
  const x2 = on(rnd([2, 4], 41), d);
  const gamma = on(rnd([4], 42, "float32", 0.5, 1.5), d);
  for (const shape of [[2], [1, 2], [3, 1], [2, 1, 1]]) {
    const e = assertAclnnError(
      () => addRmsNorm({ x1, x2, gamma, out: { rstd: Tensor.zeros(shape, "float32", d) } }),
      INNER_NULLPTR,
      "rstd",
    );
    assert.match(e.message, /must be the result's \[2, 1\]/);
  }
  const rows1 = [x1, x2].map((t) => on(t.to("cpu").slice(0, 0, 1).contiguous(), d));
  const x = [...rows1[0].toFloat64Array()].map((v, i) => v + rows1[1].toFloat64Array()[i]);
  const e = rmsNorm64(x, 1, 4, EPS, [...gamma.toFloat64Array()]);
  for (const shape of [[1], [1, 1, 1], []]) {
    const rstd = Tensor.zeros(shape, "float32", d);
    const r = addRmsNorm({ x1: rows1[0], x2: rows1[1], gamma, out: { rstd } });
    assert.deepEqual(r.rstd.shape, shape);
    assertClose(r.rstd, e.rstd, undefined, `${ctx.label} rstd [${shape}]`);
  }
});

function valid(device: BackendContext["device"]): AddRmsNormArgs {
  return {
    x1: on(rnd([2, 3, 4], 20), device),
    x2: on(rnd([2, 3, 4], 21), device),
    gamma: on(rnd([4], 22), device),
  };
}

forEachBackend("addRmsNorm: CANN's codes in its order", (ctx) => {
  const a = valid(ctx.device);
  const d = ctx.device;
  for (const name of ["x1", "x2", "gamma"] as const) {
    assertAclnnError(() => addRmsNorm({ ...a, [name]: null }), NULLPTR, name);
  }
  for (const name of ["y", "rstd", "x"] as const) {
    assertAclnnError(() => addRmsNorm({ ...a, out: { [name]: null } }), NULLPTR, name);
  }
  const as = (t: Tensor, dt: DType) => on(Tensor.fromArray(t.toFloat64Array(), t.shape, dt), d);
  assertAclnnError(() => addRmsNorm({ ...a, x1: as(a.x1!, "int32") }), INVALID, "x1");
  assertAclnnError(() => addRmsNorm({ ...a, x2: as(a.x2!, "float16") }), INVALID, "x2");
  assertAclnnError(() => addRmsNorm({ ...a, gamma: as(a.gamma!, "float16") }), INVALID, "gamma");
  assertAclnnError(
    () => addRmsNorm({ ...a, out: { x: Tensor.zeros([2, 3, 4], "float16", d) } }),
    INVALID,
    "x",
  );
  assertAclnnError(
    () => addRmsNorm({ ...a, out: { rstd: Tensor.zeros([2, 3, 1], "float16", d) } }),
    INVALID,
    "rstd",
  );
  assertAclnnError(() => addRmsNorm({ ...a, x2: on(rnd([2, 3, 5], 1), d) }), INVALID, "x2");
  assertAclnnError(
    () => addRmsNorm({ ...a, gamma: on(Tensor.zeros([1, 1, 1, 1, 1, 1, 1, 1, 4]), d) }),
    INVALID,
    "gamma",
  );
  assertAclnnError(
    () => addRmsNorm({ ...a, out: { y: Tensor.zeros([2, 3, 5], "float32", d) } }),
    INVALID,
    "y",
  );
  // The l0 operator's tiling fails: no result, 561103.
  const gammaError = assertAclnnError(
    () => addRmsNorm({ ...a, gamma: on(rnd([3], 1), d) }),
    INNER_NULLPTR,
    "gamma",
  );
  assert.match(
    gammaError.message,
    /^aclnnAddRmsNorm: gamma shape \[3\] must equal the last 1 dims of x1 \[2, 3, 4\] /,
  );
  assertAclnnError(
    () => addRmsNorm({ ...a, gamma: on(rnd([1, 2, 3, 4], 1), d) }),
    INNER_NULLPTR,
    "gamma",
  );
  assertAclnnError(() => addRmsNorm({ ...a, epsilon: -1 }), INNER_NULLPTR, "epsilon");
  assertAclnnError(
    () => addRmsNorm({ ...a, out: { rstd: Tensor.zeros([6, 1, 1], "float32", d) } }),
    INNER_NULLPTR,
    "rstd",
  );
  assertAclnnError(() => addRmsNorm({ ...a, out: { y: a.x1! } }), INVALID, "y");
});

forEachBackend("addRmsNorm: products and bfloat16 per chip", (ctx) => {
  const d = ctx.device;
  const run = (dt: DType) => () =>
    addRmsNorm({
      x1: on(rnd([2, 8], 30, dt), d),
      x2: on(rnd([2, 8], 31, dt), d),
      gamma: on(rnd([8], 32, dt), d),
    });
  if (!chipAccepts(ctx.soc, "aclnnAddRmsNorm", ["float32"])) {
    assertChipRefuses(ctx, run("float32"), "device");
    return;
  }
  run("float16")();
  if (chipAccepts(ctx.soc, "aclnnAddRmsNorm", ["bfloat16"])) run("bfloat16")();
  else assertChipRefuses(ctx, run("bfloat16"), "x1");
}, { cpu: false, socs: ["Ascend910A", "Ascend310P3", "Ascend310B1", "Ascend910_9391"] });
