/**
 * rmsNorm and rmsNormGrad (aclnnRmsNorm, aclnnRmsNormGrad) on every backend: the float64
 * reference over dtypes, mixed precision (float32 gamma with 16-bit x) and strided views,
 * central differences of the float64 forward for dx and dgamma, empty inputs, the codes of
 * CANN's generated operators (161001, 161002 dtype rows, 561002 tiling), and the chips'
 * product, bfloat16, mixed-gamma and empty-row rules.
 *
 * @module
 */

import assert from "node:assert/strict";
import { rmsNorm, type RmsNormArgs } from "../../src/ops/rms_norm.ts";
import { rmsNormGrad, type RmsNormGradArgs } from "../../src/ops/rms_norm_grad.ts";
import { isRegbase } from "../../src/backends/ascend/soc.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import {
  assertChipRefuses,
  type BackendContext,
  chipAccepts,
  forEachBackend,
  on,
} from "../helpers/backends.ts";
import {
  dot,
  finiteDifferences,
  rmsNorm as rmsNorm64,
  rmsNormBackward as rmsNormBackward64,
} from "../oracle/row_norms.ts";
import { FINITE_DIFFERENCES, toleranceFor } from "../helpers/tolerance.ts";

const NULLPTR = 161001;
const INVALID = 161002;
const TILING = 561002;
const EPS = 1e-6;

function rnd(shape: number[], seed: number, dtype: DType = "float32", low = -2, high = 3) {
  return Tensor.random(shape, { seed, dtype, low, high });
}

interface Case {
  name: string;
  x: Tensor;
  gamma: Tensor;
}

const CASES: Case[] = [
  { name: "float32 [4,6,10]", x: rnd([4, 6, 10], 1), gamma: rnd([10], 2, "float32", 0.5, 1.5) },
  { name: "float32 gamma of two dims", x: rnd([3, 4, 5], 3), gamma: rnd([4, 5], 4) },
  { name: "float32 1-D", x: rnd([9], 5), gamma: rnd([9], 6) },
  { name: "float16, float16 gamma", x: rnd([5, 12], 7, "float16"), gamma: rnd([12], 8, "float16") },
  { name: "float16, float32 gamma", x: rnd([5, 12], 9, "float16"), gamma: rnd([12], 10) },
  { name: "bfloat16, float32 gamma", x: rnd([2, 3, 16], 11, "bfloat16"), gamma: rnd([16], 12) },
  {
    name: "bfloat16, bfloat16 gamma",
    x: rnd([6, 33], 13, "bfloat16"),
    gamma: rnd([33], 14, "bfloat16"),
  },
  { name: "transposed x", x: rnd([10, 6], 15).transpose(0, 1), gamma: rnd([10], 16) },
  {
    name: "x whose gamma dims do not collapse",
    x: rnd([2, 4, 3], 17).permute([0, 2, 1]),
    gamma: rnd([3, 4], 18),
  },
];

const rowsOf = (c: Case) => c.x.numel / c.gamma.numel;

forEachBackend(
  "rmsNorm: equals the float64 reference (dtypes, layouts, mixed precision)",
  (ctx) => {
    for (const c of CASES) {
      if (!chipAccepts(ctx.soc, "aclnnRmsNorm", [c.x.dtype, c.gamma.dtype])) continue;
      if (ctx.socName === "Ascend310P3" && c.gamma.dtype !== c.x.dtype) continue;
      const r = rmsNorm({ x: on(c.x, ctx.device), gamma: on(c.gamma, ctx.device) });
      const e = rmsNorm64([...c.x.toFloat64Array()], rowsOf(c), c.gamma.numel, EPS, [
        ...c.gamma.toFloat64Array(),
      ]);
      assert.equal(r.y.dtype, c.x.dtype);
      assert.equal(r.rstd.dtype, "float32");
      assert.deepEqual(
        r.rstd.shape,
        c.x.shape.map((d, i) => (i < c.x.rank - c.gamma.rank ? d : 1)),
      );
      assertClose(r.y, e.y, undefined, `${ctx.label} ${c.name} y`);
      assertClose(r.rstd, e.rstd, undefined, `${ctx.label} ${c.name} rstd`);
    }
  },
);

forEachBackend(
  "rmsNormGrad: equals the float64 reference (dtypes, layouts, mixed precision)",
  (ctx) => {
    for (const c of CASES) {
      if (!chipAccepts(ctx.soc, "aclnnRmsNormGrad", [c.x.dtype, c.gamma.dtype])) continue;
      if (ctx.socName === "Ascend310P3" && c.gamma.dtype !== c.x.dtype) continue;
      const rows = rowsOf(c);
      const dy = rnd(c.x.shape as number[], 20, c.x.dtype, -1, 1);
      const f = rmsNorm64([...c.x.toFloat64Array()], rows, c.gamma.numel, EPS, [
        ...c.gamma.toFloat64Array(),
      ]);
      const rstd = Tensor.fromArray(
        f.rstd,
        c.x.shape.map((d, i) => (i < c.x.rank - c.gamma.rank ? d : 1)),
      );
      const r = rmsNormGrad({
        dy: on(dy, ctx.device),
        x: on(c.x, ctx.device),
        rstd: on(rstd, ctx.device),
        gamma: on(c.gamma, ctx.device),
      });
      const e = rmsNormBackward64(
        [...dy.toFloat64Array()],
        [...c.x.toFloat64Array()],
        [...rstd.toFloat64Array()],
        [...c.gamma.toFloat64Array()],
        rows,
        c.gamma.numel,
      );
      assert.equal(r.dx.dtype, c.x.dtype);
      assert.equal(r.dgamma.dtype, "float32");
      assert.deepEqual(r.dgamma.shape, c.gamma.shape);
      assertClose(r.dx, e.dx, undefined, `${ctx.label} ${c.name} dx`);
      assertClose(r.dgamma, e.dgamma, undefined, `${ctx.label} ${c.name} dgamma`);
    }
  },
);

forEachBackend("rmsNormGrad: dx and dgamma equal finite differences of the forward", (ctx) => {
  const [rows, cols] = [3, 7];
  const x = rnd([rows, cols], 30);
  const g = rnd([cols], 31, "float32", 0.5, 1.5);
  const dy = rnd([rows, cols], 32, "float32", -1, 1);
  const [xv, gv, dyv] = [x, g, dy].map((t) => [...t.toFloat64Array()]);
  const loss = (xs: number[], gs: number[]) => dot(dyv, rmsNorm64(xs, rows, cols, EPS, gs).y);
  const fd = {
    dx: finiteDifferences((v) => loss(v, gv), xv),
    dgamma: finiteDifferences((v) => loss(xv, v), gv),
  };
  const exact = rmsNormBackward64(dyv, xv, rmsNorm64(xv, rows, cols, EPS, gv).rstd, gv, rows, cols);
  assertClose(exact.dx, fd.dx, FINITE_DIFFERENCES, "reference dx");
  assertClose(exact.dgamma, fd.dgamma, FINITE_DIFFERENCES, "reference dgamma");
  const d = ctx.device;
  const { rstd } = rmsNorm({ x: on(x, d), gamma: on(g, d), epsilon: EPS });
  const r = rmsNormGrad({ dy: on(dy, d), x: on(x, d), rstd, gamma: on(g, d) });
  assertClose(r.dx, fd.dx, toleranceFor("float32"), `${ctx.label} dx`);
  assertClose(r.dgamma, fd.dgamma, toleranceFor("float32"), `${ctx.label} dgamma`);
});

forEachBackend("rmsNorm/rmsNormGrad: empty inputs", (ctx) => {
  const d = ctx.device;
  const f = rmsNorm({ x: on(Tensor.zeros([0, 4]), d), gamma: on(Tensor.ones([4]), d) });
  assert.deepEqual([f.y.shape, f.rstd.shape], [[0, 4], [0]]);
  const args: RmsNormGradArgs = {
    dy: on(Tensor.zeros([0, 4]), d),
    x: on(Tensor.zeros([0, 4]), d),
    rstd: on(Tensor.zeros([0]), d),
    gamma: on(Tensor.ones([4]), d),
  };
  // No rows: a zero dgamma on the CPU backend and on DAV_3510; the tiling refuses it elsewhere.
  if (!ctx.soc || isRegbase(ctx.soc)) {
    assert.deepEqual(rmsNormGrad(args).dgamma.toArray(), [0, 0, 0, 0]);
  } else {
    assertAclnnError(() => rmsNormGrad(args), TILING, "dy");
  }
  // Every output empty: nothing to compute anywhere.
  const none = rmsNormGrad({
    dy: on(Tensor.zeros([3, 0]), d),
    x: on(Tensor.zeros([3, 0]), d),
    rstd: on(Tensor.zeros([3, 1]), d),
    gamma: on(Tensor.zeros([0]), d),
  });
  assert.deepEqual([none.dx.numel, none.dgamma.numel], [0, 0]);
});

// ---------------------------------------------------------------------------------------
// Validation: opbase's generated phase 1 (161001, 161002), then the tiling (561002).

function forward(device: BackendContext["device"]): RmsNormArgs {
  return { x: on(rnd([2, 3, 4], 40), device), gamma: on(rnd([4], 41), device) };
}

forEachBackend("rmsNorm: codes of the generated operator in its order", (ctx) => {
  const a = forward(ctx.device);
  const d = ctx.device;
  for (const name of ["x", "gamma"] as const) {
    assertAclnnError(() => rmsNorm({ ...a, [name]: undefined }), NULLPTR, name);
  }
  assertAclnnError(() => rmsNorm({ ...a, out: { y: null } }), NULLPTR, "y");
  assertAclnnError(() => rmsNorm({ ...a, out: { rstd: null } }), NULLPTR, "rstd");
  const as = (t: Tensor, dt: DType) => on(Tensor.fromArray(t.toFloat64Array(), t.shape, dt), d);
  // Dtypes: a row of rms_norm_def.cpp, 161002.
  assertAclnnError(() => rmsNorm({ ...a, gamma: as(a.gamma!, "float16") }), INVALID, "gamma");
  assertAclnnError(() => rmsNorm({ ...a, x: as(a.x!, "int32") }), INVALID, "x");
  assertAclnnError(
    () => rmsNorm({ ...a, out: { y: Tensor.zeros([2, 3, 4], "float16", d) } }),
    INVALID,
    "y",
  );
  assertAclnnError(
    () => rmsNorm({ ...a, out: { rstd: Tensor.zeros([2, 3, 1], "float16", d) } }),
    INVALID,
    "rstd",
  );
  // Shapes and epsilon: the tiling, 561002.
  const short = assertAclnnError(
    () => rmsNorm({ ...a, gamma: on(rnd([5], 1), d) }),
    TILING,
    "gamma",
  );
  assert.match(
    short.message,
    /^aclnnRmsNorm: gamma shape \[5\] must equal the last 1 dims of x \[2, 3, 4\] /,
  );
  assertAclnnError(() => rmsNorm({ ...a, gamma: on(rnd([1, 2, 3, 4], 1), d) }), TILING, "gamma");
  assertAclnnError(
    () => rmsNorm({ ...a, x: on(Tensor.zeros([1, 1, 1, 1, 1, 1, 1, 1, 4]), d) }),
    TILING,
    "x",
  );
  assertAclnnError(
    () => rmsNorm({ ...a, out: { y: Tensor.zeros([2, 3, 5], "float32", d) } }),
    TILING,
    "y",
  );
  assertAclnnError(
    () => rmsNorm({ ...a, out: { rstd: Tensor.zeros([2, 2, 1], "float32", d) } }),
    TILING,
    "rstd",
  );
  assertAclnnError(() => rmsNorm({ ...a, epsilon: -1e-6 }), TILING, "epsilon");
  assertAclnnError(() => rmsNorm({ ...a, epsilon: NaN }), INVALID, "epsilon");
  // rstd of CANN's accepted shape but not one value per row: 161002.
  assertAclnnError(
    () => rmsNorm({ ...a, out: { rstd: Tensor.zeros([1, 3, 1], "float32", d) } }),
    INVALID,
    "rstd",
  );
  // [2, 3] (x's leading dims, no trailing 1) is one value per row: accepted.
  const flat = Tensor.zeros([2, 3], "float32", d);
  assert.equal(rmsNorm({ ...a, out: { rstd: flat } }).rstd, flat);
  // epsilon 0 is allowed.
  assert.ok(rmsNorm({ ...a, epsilon: 0 }).y);
});

forEachBackend("rmsNormGrad: codes of the generated operator in its order", (ctx) => {
  const d = ctx.device;
  const a: RmsNormGradArgs = {
    dy: on(rnd([2, 3, 4], 50), d),
    x: on(rnd([2, 3, 4], 51), d),
    rstd: on(Tensor.ones([2, 3, 1]), d),
    gamma: on(rnd([4], 52), d),
  };
  for (const name of ["dy", "x", "rstd", "gamma"] as const) {
    assertAclnnError(() => rmsNormGrad({ ...a, [name]: null }), NULLPTR, name);
  }
  assertAclnnError(() => rmsNormGrad({ ...a, out: { dgamma: null } }), NULLPTR, "dgamma");
  const as = (t: Tensor, dt: DType) => on(Tensor.fromArray(t.toFloat64Array(), t.shape, dt), d);
  assertAclnnError(() => rmsNormGrad({ ...a, rstd: as(a.rstd!, "float16") }), INVALID, "rstd");
  assertAclnnError(() => rmsNormGrad({ ...a, dy: as(a.dy!, "float16") }), INVALID, "dy");
  assertAclnnError(
    () => rmsNormGrad({ ...a, out: { dgamma: Tensor.zeros([4], "float16", d) } }),
    INVALID,
    "dgamma",
  );
  assertAclnnError(() => rmsNormGrad({ ...a, dy: on(rnd([2, 3, 5], 1), d) }), TILING, "dy");
  assertAclnnError(
    () => rmsNormGrad({ ...a, rstd: on(Tensor.ones([3, 2, 1]), d) }),
    TILING,
    "rstd",
  );
  assertAclnnError(() => rmsNormGrad({ ...a, rstd: on(Tensor.ones([2]), d) }), TILING, "x");
  const wide = assertAclnnError(
    () => rmsNormGrad({ ...a, gamma: on(rnd([3, 5], 1), d) }),
    TILING,
    "gamma",
  );
  assert.match(
    wide.message,
    /^aclnnRmsNormGrad: gamma shape \[3, 5\] must equal the last 2 dims of dy \[2, 3, 4\] /,
  );
  assertAclnnError(
    () => rmsNormGrad({ ...a, out: { dgamma: Tensor.zeros([2, 4], "float32", d) } }),
    TILING,
    "dgamma",
  );
  // CANN's example: x [2, 1, 16] with rstd [2]: the missing dim of rstd is 1 in x.
  const v = Array.from({ length: 32 }, (_, i) => (i % 16) + 1);
  const x = on(Tensor.fromArray(v, [2, 1, 16]), d);
  const r = rmsNormGrad({
    dy: x,
    x,
    rstd: on(Tensor.fromArray([1, 2], [2]), d),
    gamma: on(Tensor.fromArray(v.slice(0, 16), [16]), d),
  });
  assert.deepEqual(r.dx.shape, [2, 1, 16]);
});

forEachBackend("rmsNorm/rmsNormGrad: products, bfloat16 and float32 gamma per chip", (ctx) => {
  const d = ctx.device;
  const fwd = (dt: DType, gt: DType = dt) => () =>
    rmsNorm({ x: on(rnd([2, 8], 60, dt), d), gamma: on(rnd([8], 61, gt), d) });
  const bwd = (dt: DType, gt: DType = dt) => () =>
    rmsNormGrad({
      dy: on(rnd([2, 8], 62, dt), d),
      x: on(rnd([2, 8], 63, dt), d),
      rstd: on(Tensor.ones([2, 1]), d),
      gamma: on(rnd([8], 64, gt), d),
    });
  for (const [op, run] of [["aclnnRmsNorm", fwd], ["aclnnRmsNormGrad", bwd]] as const) {
    if (!chipAccepts(ctx.soc, op, ["float32"])) {
      assertChipRefuses(ctx, run("float32"), "device");
      continue;
    }
    run("float16")();
    if (chipAccepts(ctx.soc, op, ["bfloat16"])) run("bfloat16")();
    else assertChipRefuses(ctx, run("bfloat16"), op === "aclnnRmsNorm" ? "x" : "dy");
    // float32 gamma with float16 data: Atlas A2/A3/950 only (rms_norm_def.cpp rows).
    if (ctx.socName === "Ascend310P3") assertChipRefuses(ctx, run("float16", "float32"), "gamma");
    else run("float16", "float32")();
  }
}, { cpu: false, socs: ["Ascend910A", "Ascend310P3", "Ascend310B1", "Ascend910_9391"] });
