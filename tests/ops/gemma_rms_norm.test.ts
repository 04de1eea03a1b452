/**
 * gemmaRmsNorm (aclnnGemmaRmsNorm) on every backend: the float64 reference y = x * rstd *
 * (1 + gamma) over dtypes, mixed precision and strided views; 1 + gamma formed in float32 (never
 * rounded to gamma's dtype) and y rounded once, bit for bit on the CPU backend; empty inputs; the
 * codes of CANN's generated operator (161001, 161002 dtype rows, 561002 tiling); and the chips'
 * rules (Atlas A2/A3 and Ascend 950 only, float32 gamma with 16-bit x on 950 only).
 *
 * @module
 */

import assert from "node:assert/strict";
import { gemmaRmsNorm, type GemmaRmsNormArgs } from "../../src/ops/gemma_rms_norm.ts";
import { gemmaRmsNormMixedGamma } from "../../src/backends/ascend/soc.ts";
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
import { gemmaRmsNorm as gemmaRmsNorm64 } from "../oracle/row_norms.ts";
import { toleranceFor } from "../helpers/tolerance.ts";

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
  { name: "float32 [4,6,10]", x: rnd([4, 6, 10], 1), gamma: rnd([10], 2, "float32", -0.5, 0.5) },
  { name: "float32 gamma of two dims", x: rnd([3, 4, 5], 3), gamma: rnd([4, 5], 4) },
  { name: "float32 1-D", x: rnd([9], 5), gamma: rnd([9], 6) },
  { name: "float16", x: rnd([5, 12], 7, "float16"), gamma: rnd([12], 8, "float16", -1, 1) },
  { name: "bfloat16", x: rnd([6, 33], 9, "bfloat16"), gamma: rnd([33], 10, "bfloat16", -1, 1) },
  { name: "float16, float32 gamma", x: rnd([5, 12], 11, "float16"), gamma: rnd([12], 12) },
  { name: "bfloat16, float32 gamma", x: rnd([2, 3, 16], 13, "bfloat16"), gamma: rnd([16], 14) },
  { name: "transposed x", x: rnd([10, 6], 15).transpose(0, 1), gamma: rnd([10], 16) },
];

/** Whether the chip takes the case's dtypes (a float32 gamma with 16-bit x: 950 only). */
function accepts(ctx: BackendContext, c: Case): boolean {
  if (!chipAccepts(ctx.soc, "aclnnGemmaRmsNorm", [c.x.dtype, c.gamma.dtype])) return false;
  const mixed = c.gamma.dtype !== c.x.dtype;
  return !ctx.soc || !mixed || gemmaRmsNormMixedGamma(ctx.soc);
}

forEachBackend("gemmaRmsNorm: y = x * rstd * (1 + gamma) against the float64 reference", (ctx) => {
  let ran = 0;
  for (const c of CASES) {
    if (!accepts(ctx, c)) continue;
    const d = ctx.device;
    const r = gemmaRmsNorm({ x: on(c.x, d), gamma: on(c.gamma, d) });
    const cols = c.gamma.numel;
    const rows = c.x.numel / cols;
    const e = gemmaRmsNorm64([...c.x.toFloat64Array()], rows, cols, EPS, [
      ...c.gamma.toFloat64Array(),
    ]);
    assert.deepEqual([r.y.dtype, r.y.shape], [c.x.dtype, c.x.shape], c.name);
    const axis = c.x.rank - c.gamma.rank;
    const rstdShape = c.x.shape.map((n, i) => (i < axis ? n : 1));
    assert.deepEqual(r.rstd.shape, rstdShape, `${c.name} rstd shape`);
    assertClose(r.rstd, e.rstd, toleranceFor("float32"), `${ctx.label} ${c.name} rstd`);
    assertClose(r.y, e.y, toleranceFor(c.x.dtype), `${ctx.label} ${c.name} y`);
    ran++;
  }
  assert.ok(ran >= 6, `${ctx.label}: ${ran} cases ran`);
});

/**
 * 1 + gamma is formed in float32 (rms_norm.h:150-166), not in gamma's dtype: with bfloat16 data
 * and gamma, y equals round(fround(fround(x * rstd) * fround(1 + gamma))) bit for bit on the CPU
 * backend (its row kernel, in CANN's order), and differs from what a 1 + gamma rounded to
 * bfloat16 would give. On the software CANN (double arithmetic) within bfloat16's tolerance.
 */
forEachBackend("gemmaRmsNorm: 1 + gamma in float32, y rounded once", (ctx) => {
  const [rows, cols] = [8, 64];
  // Small gammas: 1 + gamma needs more bits than bfloat16 has.
  const x = rnd([rows, cols], 20, "bfloat16");
  const gamma = rnd([cols], 21, "bfloat16", -0.05, 0.05);
  const r = gemmaRmsNorm({ x: on(x, ctx.device), gamma: on(gamma, ctx.device), epsilon: EPS });
  const xv = x.toFloat64Array();
  const gv = gamma.toFloat64Array();
  const rs = r.rstd.toFloat64Array();
  const y = r.y.toFloat64Array();
  const expect = (scale: (g: number) => number) =>
    [...xv].map((v, j) =>
      roundToDType(
        Math.fround(Math.fround(v * rs[Math.floor(j / cols)]) * scale(gv[j % cols])),
        "bfloat16",
      )
    );
  const inFloat = expect((g) => Math.fround(1 + g));
  const inBf16 = expect((g) => roundToDType(1 + g, "bfloat16"));
  const differ = inFloat.filter((v, j) => v !== inBf16[j]).length;
  assert.ok(differ > 10, `a bfloat16 1 + gamma would change ${differ} of ${rows * cols} values`);
  if (!ctx.soc) {
    assert.deepEqual([...y], inFloat, "the CPU backend: CANN's float32 steps, bit for bit");
  } else {
    assertClose(r.y, inFloat, toleranceFor("bfloat16"), `${ctx.label} y`);
  }
  const e = gemmaRmsNorm64([...xv], rows, cols, EPS, [...gv]);
  assertClose(r.y, e.y, toleranceFor("bfloat16"), `${ctx.label} y against float64`);
});

forEachBackend("gemmaRmsNorm: epsilon is received as a C float, default 1e-6", (ctx) => {
  const d = ctx.device;
  const x = on(Tensor.fromArray([0.001, -0.002, 0.0015, 0.0005], [1, 4]), d);
  const gamma = on(Tensor.zeros([4]), d);
  const ms = (0.001 ** 2 + 0.002 ** 2 + 0.0015 ** 2 + 0.0005 ** 2) / 4;
  const byDefault = gemmaRmsNorm({ x, gamma }).rstd.toArray()[0];
  assert.ok(Math.abs(byDefault - 1 / Math.sqrt(ms + 1e-6)) < 1e-3, `${byDefault}`);
  const eps = 0.3;
  const r = gemmaRmsNorm({ x, gamma, epsilon: eps }).rstd.toArray()[0];
  assertClose([r], [1 / Math.sqrt(ms + Math.fround(eps))], toleranceFor("float32"), "eps 0.3");
});

forEachBackend("gemmaRmsNorm: empty inputs", (ctx) => {
  const d = ctx.device;
  const f = gemmaRmsNorm({ x: on(Tensor.zeros([0, 4]), d), gamma: on(Tensor.ones([4]), d) });
  assert.deepEqual([f.y.shape, f.rstd.shape], [[0, 4], [0]]);
  // Every output empty: nothing computed, so the tiling's checks do not run (epsilon -1).
  const none = gemmaRmsNorm({
    x: on(Tensor.zeros([0, 4]), d),
    gamma: on(Tensor.ones([4]), d),
    epsilon: -1,
  });
  assert.equal(none.y.numel, 0);
});

// ---------------------------------------------------------------------------------------
// Validation: opbase's generated phase 1 (161001, 161002), then Tiling4GemmaRmsNorm (561002).

function valid(device: BackendContext["device"]): GemmaRmsNormArgs {
  return { x: on(rnd([2, 3, 4], 40), device), gamma: on(rnd([4], 41), device) };
}

forEachBackend("gemmaRmsNorm: codes of the generated operator in its order", (ctx) => {
  const a = valid(ctx.device);
  const d = ctx.device;
  for (const name of ["x", "gamma"] as const) {
    assertAclnnError(() => gemmaRmsNorm({ ...a, [name]: undefined }), NULLPTR, name);
  }
  assertAclnnError(() => gemmaRmsNorm({ ...a, out: { y: null } }), NULLPTR, "y");
  assertAclnnError(() => gemmaRmsNorm({ ...a, out: { rstd: null } }), NULLPTR, "rstd");
  // A missing tensor comes before a wrong dtype.
  assertAclnnError(() => gemmaRmsNorm({ x: a.x, gamma: null, epsilon: -1 }), NULLPTR, "gamma");
  const as = (t: Tensor, dt: DType) => on(Tensor.fromArray(t.toFloat64Array(), t.shape, dt), d);
  // Dtypes: a row of gemma_rms_norm_def.cpp, 161002.
  assertAclnnError(() => gemmaRmsNorm({ ...a, gamma: as(a.gamma!, "float16") }), INVALID, "gamma");
  assertAclnnError(() => gemmaRmsNorm({ ...a, x: as(a.x!, "int32") }), INVALID, "x");
  assertAclnnError(
    () => gemmaRmsNorm({ ...a, out: { y: Tensor.zeros([2, 3, 4], "bfloat16", d) } }),
    INVALID,
    "y",
  );
  assertAclnnError(
    () => gemmaRmsNorm({ ...a, out: { rstd: Tensor.zeros([2, 3, 1], "float16", d) } }),
    INVALID,
    "rstd",
  );
  // A dtype error comes before a shape error of the tiling.
  assertAclnnError(
    () => gemmaRmsNorm({ ...a, gamma: on(rnd([5], 1, "float16"), d) }),
    INVALID,
    "gamma",
  );
  // Shapes and epsilon: the tiling (CheckInputShape4RmsNorm, setEpsTiling), 561002.
  const short = assertAclnnError(
    () => gemmaRmsNorm({ ...a, gamma: on(rnd([5], 1), d) }),
    TILING,
    "gamma",
  );
  assert.match(
    short.message,
    /^aclnnGemmaRmsNorm: gamma shape \[5\] must equal the last 1 dims of x \[2, 3, 4\] /,
  );
  assertAclnnError(
    () => gemmaRmsNorm({ ...a, gamma: on(rnd([1, 2, 3, 4], 1), d) }),
    TILING,
    "gamma",
  );
  assertAclnnError(
    () => gemmaRmsNorm({ ...a, x: on(Tensor.zeros([1, 1, 1, 1, 1, 1, 1, 1, 4]), d) }),
    TILING,
    "x",
  );
  assertAclnnError(
    () => gemmaRmsNorm({ ...a, out: { y: Tensor.zeros([2, 3, 5], "float32", d) } }),
    TILING,
    "y",
  );
  assertAclnnError(
    () => gemmaRmsNorm({ ...a, out: { rstd: Tensor.zeros([2, 2, 1], "float32", d) } }),
    TILING,
    "rstd",
  );
  assertAclnnError(() => gemmaRmsNorm({ ...a, epsilon: -1e-6 }), TILING, "epsilon");
  assertAclnnError(() => gemmaRmsNorm({ ...a, epsilon: NaN }), INVALID, "epsilon");
  // rstd of CANN's accepted shape but not one value per row: 161002.
  assertAclnnError(
    () => gemmaRmsNorm({ ...a, out: { rstd: Tensor.zeros([1, 3, 1], "float32", d) } }),
    INVALID,
    "rstd",
  );
  // An output over an input: 161002.
  assertAclnnError(() => gemmaRmsNorm({ ...a, out: { y: a.x! } }), INVALID, "y");
  // A given rstd of x's leading dims is written; epsilon 0 is allowed.
  const flat = Tensor.zeros([2, 3], "float32", d);
  assert.equal(gemmaRmsNorm({ ...a, epsilon: 0, out: { rstd: flat } }).rstd, flat);
  assert.ok(flat.toArray().every((v) => v > 0));
});

forEachBackend("gemmaRmsNorm: products, bfloat16 and float32 gamma per chip", (ctx) => {
  const d = ctx.device;
  const run = (dt: DType, gt: DType = dt) => () =>
    gemmaRmsNorm({ x: on(rnd([2, 8], 60, dt), d), gamma: on(rnd([8], 61, gt), d) });
  if (!chipAccepts(ctx.soc, "aclnnGemmaRmsNorm", ["float32"])) {
    const e = assertChipRefuses(ctx, run("float32"), "device");
    assert.match(e.message, /which aclnnGemmaRmsNorm does not support/);
    return;
  }
  run("float16")();
  run("bfloat16")();
  // float32 gamma with 16-bit data: Ascend 950 only (gemma_rms_norm_def.cpp config_regbase).
  const e = assertChipRefuses(ctx, run("bfloat16", "float32"), "gamma");
  assert.match(e.message, /needs Ascend 950/);
}, { cpu: false, socs: ["Ascend310P3", "Ascend910A", "Ascend310B1", "Ascend910_9391"] });
