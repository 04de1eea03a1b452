/**
 * inplaceAddRmsNorm (aclnnInplaceAddRmsNorm) on every backend: afterwards x2Ref holds x = x1 + x2
 * rounded to the dtype and x1Ref holds y, bit for bit what addRmsNorm returns on the same backend
 * (CANN runs AddRmsNorm's kernels), and near the float64 reference; strided and transposed
 * refs; aliasing refused (x1Ref over x2Ref, gamma or rstd over a ref); empty inputs; the codes
 * of CANN's generated operator (161001, 161002 dtype rows, 561002 AddRmsNorm's tiling); and the
 * chips' rules (no bfloat16 on the Atlas inference series, whose kernel stores no rstd).
 *
 * @module
 */

import assert from "node:assert/strict";
import { addRmsNorm } from "../../src/ops/add_rms_norm.ts";
import {
  inplaceAddRmsNorm,
  type InplaceAddRmsNormArgs,
} from "../../src/ops/inplace_add_rms_norm.ts";
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
import { rmsNorm as rmsNorm64 } from "../oracle/row_norms.ts";
import { betweenKernels, EXACT, looser, toleranceFor } from "../helpers/tolerance.ts";

const NULLPTR = 161001;
const INVALID = 161002;
const TILING = 561002;
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
    { name: "transposed refs", shape: [6, 10], gamma: [10], dtype: "float32", layout: true },
  ];

forEachBackend(
  "inplaceAddRmsNorm: x2Ref <- round(x1 + x2), x1Ref <- y, bit for bit addRmsNorm's",
  (ctx) => {
    const d = ctx.device;
    for (const c of CASES) {
      if (!chipAccepts(ctx.soc, "aclnnInplaceAddRmsNorm", [c.dtype])) continue;
      const view = (t: Tensor) => c.layout ? t.transpose(0, 1).contiguous().transpose(0, 1) : t;
      const a = rnd(c.shape, 1, c.dtype);
      const b = rnd(c.shape, 2, c.dtype);
      const av = a.toFloat64Array();
      const bv = b.toFloat64Array();
      const gamma = on(rnd(c.gamma, 3, c.dtype, 0.5, 1.5), d);
      const x1Ref = on(view(a), d);
      const x2Ref = on(view(b), d);
      const want = addRmsNorm({ x1: on(a, d), x2: on(b, d), gamma });
      const r = inplaceAddRmsNorm({ x1Ref, x2Ref, gamma });
      assert.deepEqual([r.rstd.dtype, r.rstd.shape], ["float32", want.rstd.shape], c.name);
      assertClose(x2Ref, want.x.toFloat64Array(), EXACT, `${ctx.label} ${c.name} x2Ref = x`);
      assertClose(x1Ref, want.y.toFloat64Array(), EXACT, `${ctx.label} ${c.name} x1Ref = y`);
      assertClose(r.rstd, want.rstd.toFloat64Array(), EXACT, `${ctx.label} ${c.name} rstd`);
      // And the float64 reference: x exact, rstd and y within the dtype's bounds.
      const x = [...av].map((v, i) => roundToDType(v + bv[i], c.dtype));
      assertClose(x2Ref, x, EXACT, `${ctx.label} ${c.name} x against float64`);
      const cols = gamma.numel;
      const e = rmsNorm64(x, x.length / cols, cols, EPS, [...gamma.toFloat64Array()]);
      const rstdTol = looser(toleranceFor("float32"), toleranceFor(c.dtype));
      assertClose(r.rstd, e.rstd, rstdTol, `${ctx.label} ${c.name} rstd against float64`);
      assertClose(x1Ref, e.y, betweenKernels(toleranceFor(c.dtype)), `${ctx.label} ${c.name} y`);
    }
  },
  { socs: ["Ascend950PR_9599", "Ascend910B4", "Ascend310P3"] },
);

forEachBackend("inplaceAddRmsNorm: refs that share memory are refused (161002)", (ctx) => {
  const d = ctx.device;
  const x = on(rnd([2, 8], 10), d);
  const gamma = on(rnd([8], 11), d);
  const before = x.toFloat64Array();
  // The same tensor as both refs.
  let e = assertAclnnError(
    () => inplaceAddRmsNorm({ x1Ref: x, x2Ref: x, gamma }),
    INVALID,
    "x1Ref",
  );
  assert.match(e.message, /x1Ref shares memory with the input x2Ref/);
  // Overlapping views (one row in common).
  const three = on(rnd([3, 8], 13), d);
  e = assertAclnnError(
    () => inplaceAddRmsNorm({ x1Ref: three.slice(0, 0, 2), x2Ref: three.slice(0, 1, 3), gamma }),
    INVALID,
    "x1Ref",
  );
  // gamma inside x1Ref's memory.
  const wide = on(rnd([2, 8], 12), d);
  e = assertAclnnError(
    () => inplaceAddRmsNorm({ x1Ref: wide, x2Ref: x, gamma: wide.slice(0, 0, 1).reshape([8]) }),
    INVALID,
    "x1Ref",
  );
  assert.match(e.message, /shares memory with the input gamma/);
  // rstd over a ref.
  const flat = on(Tensor.zeros([2, 8]), d);
  assertAclnnError(
    () =>
      inplaceAddRmsNorm({
        x1Ref: flat,
        x2Ref: x,
        gamma,
        out: { rstd: flat.slice(1, 0, 1) },
      }),
    INVALID,
    "rstd",
  );
  assert.deepEqual([...x.toFloat64Array()], [...before], "a refused call writes nothing");
});

forEachBackend("inplaceAddRmsNorm: empty inputs", (ctx) => {
  const d = ctx.device;
  const t = (shape: number[], v = 1) => Tensor.full(shape, v, "float32", d);
  // x1Ref, x2Ref and rstd empty: no launch, so neither the tiling nor epsilon is checked.
  const none = inplaceAddRmsNorm({
    x1Ref: t([0, 4]),
    x2Ref: t([0, 4]),
    gamma: t([4]),
    epsilon: -1,
  });
  assert.deepEqual(none.rstd.shape, [0]);
  // Rows of no element: rstd is not empty, so the tiling refuses the empty x1Ref.
  assertAclnnError(
    () => inplaceAddRmsNorm({ x1Ref: t([2, 0]), x2Ref: t([2, 0]), gamma: t([0]) }),
    TILING,
    "x1Ref",
  );
});

function valid(device: BackendContext["device"]): InplaceAddRmsNormArgs {
  return {
    x1Ref: on(rnd([2, 3, 4], 20), device),
    x2Ref: on(rnd([2, 3, 4], 21), device),
    gamma: on(rnd([4], 22), device),
  };
}

forEachBackend("inplaceAddRmsNorm: codes of the generated operator in its order", (ctx) => {
  const a = valid(ctx.device);
  const d = ctx.device;
  const before = a.x1Ref!.toFloat64Array();
  for (const name of ["x1Ref", "x2Ref", "gamma"] as const) {
    assertAclnnError(() => inplaceAddRmsNorm({ ...a, [name]: null }), NULLPTR, name);
  }
  assertAclnnError(() => inplaceAddRmsNorm({ ...a, out: { rstd: null } }), NULLPTR, "rstd");
  const as = (t: Tensor, dt: DType) => on(Tensor.fromArray(t.toFloat64Array(), t.shape, dt), d);
  // Dtypes: a row of inplace_add_rms_norm_def.cpp, 161002 (before any shape check).
  assertAclnnError(
    () => inplaceAddRmsNorm({ ...a, x1Ref: as(a.x1Ref!, "int32") }),
    INVALID,
    "x1Ref",
  );
  assertAclnnError(
    () => inplaceAddRmsNorm({ ...a, x2Ref: as(a.x2Ref!, "float16") }),
    INVALID,
    "x2Ref",
  );
  assertAclnnError(
    () => inplaceAddRmsNorm({ ...a, gamma: on(rnd([5], 1, "float16"), d) }),
    INVALID,
    "gamma",
  );
  assertAclnnError(
    () => inplaceAddRmsNorm({ ...a, out: { rstd: Tensor.zeros([2, 3, 1], "float16", d) } }),
    INVALID,
    "rstd",
  );
  // AddRmsNorm's tiling, 561002.
  assertAclnnError(
    () => inplaceAddRmsNorm({ ...a, x1Ref: on(Tensor.zeros([1, 1, 1, 1, 1, 1, 1, 1, 4]), d) }),
    TILING,
    "x1Ref",
  );
  assertAclnnError(
    () => inplaceAddRmsNorm({ ...a, gamma: on(rnd([1, 2, 3, 4], 1), d) }),
    TILING,
    "gamma",
  );
  assertAclnnError(
    () => inplaceAddRmsNorm({ ...a, x2Ref: on(rnd([6, 4], 1), d) }),
    TILING,
    "x2Ref",
  );
  assertAclnnError(
    () => inplaceAddRmsNorm({ ...a, x2Ref: on(rnd([2, 3, 5], 1), d) }),
    TILING,
    "x2Ref",
  );
  const short = assertAclnnError(
    () => inplaceAddRmsNorm({ ...a, gamma: on(rnd([3], 1), d) }),
    TILING,
    "gamma",
  );
  assert.match(
    short.message,
    /^aclnnInplaceAddRmsNorm: gamma shape \[3\] must equal the last 1 dims of x1Ref \[2, 3, 4\]/,
  );
  // rstd: x1Ref's rank, leading dims and trailing 1s, exactly (no one-value-per-row latitude).
  for (const shape of [[2, 3], [6, 1, 1], [2, 3, 2]]) {
    assertAclnnError(
      () => inplaceAddRmsNorm({ ...a, out: { rstd: Tensor.zeros(shape, "float32", d) } }),
      TILING,
      "rstd",
    );
  }
  assertAclnnError(() => inplaceAddRmsNorm({ ...a, epsilon: -1e-6 }), TILING, "epsilon");
  assertAclnnError(() => inplaceAddRmsNorm({ ...a, epsilon: NaN }), INVALID, "epsilon");
  assert.deepEqual([...a.x1Ref!.toFloat64Array()], [...before], "refused calls write nothing");
  // A given rstd of the right shape is written; epsilon 0 is allowed.
  const rstd = Tensor.zeros([2, 3, 1], "float32", d);
  assert.equal(inplaceAddRmsNorm({ ...a, epsilon: 0, out: { rstd } }).rstd, rstd);
  assert.notDeepEqual([...a.x1Ref!.toFloat64Array()], [...before], "x1Ref now holds y");
});

forEachBackend("inplaceAddRmsNorm: products and bfloat16 per chip", (ctx) => {
  const d = ctx.device;
  const run = (dt: DType) => () =>
    inplaceAddRmsNorm({
      x1Ref: on(rnd([2, 8], 30, dt), d),
      x2Ref: on(rnd([2, 8], 31, dt), d),
      gamma: on(rnd([8], 32, dt), d),
    });
  if (!chipAccepts(ctx.soc, "aclnnInplaceAddRmsNorm", ["float32"])) {
    const e = assertChipRefuses(ctx, run("float32"), "device");
    assert.match(e.message, /which aclnnInplaceAddRmsNorm does not support/);
    return;
  }
  run("float16")();
  if (chipAccepts(ctx.soc, "aclnnInplaceAddRmsNorm", ["bfloat16"])) run("bfloat16")();
  else assertChipRefuses(ctx, run("bfloat16"), "x1Ref");
}, { cpu: false, socs: ["Ascend910A", "Ascend310P3", "Ascend310B1", "Ascend910_9391"] });
