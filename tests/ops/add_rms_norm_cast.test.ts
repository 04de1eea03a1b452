/**
 * addRmsNormCast (aclnnAddRmsNormCast) on every backend: y1, y2, rstd and x against the float64
 * oracle for float16 and bfloat16; the roundings per SoC that docs/norm_family_kernels.md section
 * 7 lists (CPU and Ascend 950: y1 the float32 y; A2 float16: the add, x * rstd and the gamma
 * product in half, y1 = float(y2)); CANN's codes per check; the chips' refusals.
 *
 * @module
 */

import assert from "node:assert/strict";
import { addRmsNormCast } from "../../src/ops/add_rms_norm_cast.ts";
import { type DType, roundToDType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, forEachBackend, on } from "../helpers/backends.ts";
import { addRmsNormCast as oracle } from "../oracle/mod.ts";
import { EXACT, looser, toleranceFor } from "../helpers/tolerance.ts";

const SOCS = { socs: ["Ascend950PR_9599", "Ascend910B4", "Ascend310P3"] };
const values = (t: Tensor) => [...t.toFloat64Array()];
const rnd = (shape: number[], seed: number, dtype: DType, low = -2, high = 3) =>
  Tensor.random(shape, { seed, dtype, low, high });

forEachBackend("addRmsNormCast: y1, y2, rstd, x against the float64 oracle", (ctx) => {
  const d = ctx.device;
  if (ctx.soc?.name === "Ascend310P") {
    const h = rnd([2, 8], 1, "float16");
    assertChipRefuses(
      ctx,
      () => addRmsNormCast({ x1: on(h, d), x2: on(h, d), gamma: on(rnd([8], 2, "float16"), d) }),
    );
    return;
  }
  for (const dtype of ["float16", "bfloat16"] as const) {
    const [rows, cols] = [6, 37];
    const x1 = rnd([2, 3, cols], 1, dtype);
    const x2 = rnd([2, 3, cols], 2, dtype);
    const gamma = rnd([cols], 3, dtype, 0.5, 1.5);
    const r = addRmsNormCast({ x1: on(x1, d), x2: on(x2, d), gamma: on(gamma, d) });
    const label = `${ctx.label} ${dtype}`;
    assert.equal(r.y1.dtype, "float32");
    assert.equal(r.y2.dtype, dtype);
    assert.deepEqual(r.rstd.shape, [2, 3, 1]);
    const e = oracle(values(x1), values(x2), cols, 1e-6, values(gamma));
    assert.equal(e.rstd.length, rows);
    assertClose(r.x, e.x.map((v) => roundToDType(v, dtype)), EXACT, `${label} x`);
    // A2's float16 kernel squares the rounded sum and rounds twice more on the way to y2.
    const tol = looser(toleranceFor(dtype), toleranceFor(dtype));
    assertClose(r.rstd, e.rstd, tol, `${label} rstd`);
    assertClose(r.y1, e.y, tol, `${label} y1`);
    assertClose(r.y2, e.y, tol, `${label} y2`);
    // y2 is y1 rounded once on every SoC (A2's y1 = float(y2) is exactly that too).
    assertClose(
      r.y2,
      values(r.y1).map((v) => roundToDType(v, dtype)),
      EXACT,
      `${label} y2 = round(y1)`,
    );
  }
}, SOCS);

forEachBackend(
  "addRmsNormCast: float16 y1 is the float32 y (CPU, Ascend 950) or float(y2) (A2)",
  (ctx) => {
    const d = ctx.device;
    if (ctx.soc?.name === "Ascend310P") return;
    const cols = 64;
    const x1 = rnd([4, cols], 11, "float16");
    const x2 = rnd([4, cols], 12, "float16");
    const gamma = rnd([cols], 13, "float16", 0.5, 1.5);
    const r = addRmsNormCast({ x1: on(x1, d), x2: on(x2, d), gamma: on(gamma, d) });
    const y1 = values(r.y1);
    const all16 = y1.every((v) => roundToDType(v, "float16") === v);
    if (ctx.soc?.name === "Ascend910B") {
      // A2: y1 = float(y2), and y2 = half(half(x_h * rstd) * gamma) of the half sum x_h.
      assert.ok(all16, `${ctx.label}: y1 must hold float16 values`);
      const xh = values(r.x);
      const rstd = values(r.rstd);
      const want = xh.map((v, j) => {
        const n = roundToDType(v * rstd[Math.floor(j / cols)], "float16");
        return roundToDType(n * values(gamma)[j % cols], "float16");
      });
      assertClose(r.y1, want, { rtol: 0, atol: 2 ** -10 }, `${ctx.label} half products`);
    } else {
      assert.ok(!all16, `${ctx.label}: y1 must be the float32 y, not float(y2)`);
    }
  },
  SOCS,
);

forEachBackend("addRmsNormCast: CANN's codes in its check order", (ctx) => {
  const d = ctx.device;
  if (ctx.soc?.name === "Ascend310P") return;
  const t = (shape: number[], dtype: DType = "float16") => on(Tensor.zeros(shape, dtype), d);
  const ok = { x1: t([2, 4]), x2: t([2, 4]), gamma: t([4]) };
  assertAclnnError(() => addRmsNormCast({ ...ok, x1: undefined }), 161001, "x1");
  assertAclnnError(() => addRmsNormCast({ ...ok, gamma: null }), 161001, "gamma");
  assertAclnnError(() => addRmsNormCast({ ...ok, out: { y2: null } }), 161001, "y2");
  assertAclnnError(() => addRmsNormCast({ ...ok, x1: t([2, 4], "float32") }), 161002, "x1");
  assertAclnnError(() => addRmsNormCast({ ...ok, x2: t([2, 4], "bfloat16") }), 161002, "x2");
  assertAclnnError(() => addRmsNormCast({ ...ok, out: { y1: t([2, 4]) } }), 161002, "y1");
  assertAclnnError(() => addRmsNormCast({ ...ok, out: { rstd: t([2, 1]) } }), 161002, "rstd");
  assertAclnnError(() => addRmsNormCast({ ...ok, gamma: t([5]) }), 561002, "gamma");
  assertAclnnError(() => addRmsNormCast({ ...ok, x2: t([4, 2]) }), 561002, "x2");
  assertAclnnError(
    () => addRmsNormCast({ ...ok, out: { rstd: t([3, 1], "float32") } }),
    561002,
    "rstd",
  );
  assertAclnnError(() => addRmsNormCast({ ...ok, epsilon: -1 }), 561002, "epsilon");
  assertAclnnError(
    () => addRmsNormCast({ x1: t([2, 0]), x2: t([2, 0]), gamma: t([0]) }),
    561002,
    "x1",
  );
  // Every output empty: SUCCESS, nothing computed.
  const e = addRmsNormCast({ x1: t([0, 4]), x2: t([0, 4]), gamma: t([4]) });
  assert.deepEqual(e.y1.shape, [0, 4]);
}, SOCS);
