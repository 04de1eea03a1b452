/**
 * fastLayerNorm (aclnnFastLayerNorm) on the CPU and on the software CANN playing an Atlas A2:
 * output, mean and rstd against the float64 oracle in every dtype (float32 or input-dtype
 * parameters, statistics in the input's dtype as the document says or float32 as torch_npu
 * allocates them); the CPU's bits equal layerNorm's; the empty paths (N = 0 before M = 0); the
 * codes in aclnn_fast_layer_norm.cpp's check order; the refusal on Ascend 950 naming the SoC.
 *
 * @module
 */

import assert from "node:assert/strict";
import { fastLayerNorm, type FastLayerNormArgs } from "../../src/ops/fast_layer_norm.ts";
import { layerNorm } from "../../src/ops/layer_norm.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, forEachBackend, on, onOpt } from "../helpers/backends.ts";
import { looser, toleranceFor } from "../helpers/tolerance.ts";
import { layerNorm as layerNorm64 } from "../oracle/row_norms.ts";

const NULLPTR = 161001;
const INVALID = 161002;
const INNER_NULLPTR = 561103;
const A2 = { socs: ["Ascend910B4"] };

function rnd(shape: number[], seed: number, dtype: DType = "float32", low = -2, high = 3) {
  return Tensor.random(shape, { seed, dtype, low, high });
}

interface Case {
  shape: number[];
  normalizedShape: number[];
  dtype: DType;
  /** dtype of weight and bias (absent: none given). */
  param?: DType;
  /** dtype of given mean/rstd (absent: allocated float32). */
  stats?: DType;
}

const CASES: Case[] = [
  { shape: [4, 6, 10], normalizedShape: [10], dtype: "float32", param: "float32" },
  { shape: [3, 4, 5], normalizedShape: [4, 5], dtype: "float32" },
  { shape: [5, 16], normalizedShape: [16], dtype: "float16", param: "float16", stats: "float16" },
  { shape: [5, 16], normalizedShape: [16], dtype: "float16", param: "float32" },
  { shape: [2, 3, 24], normalizedShape: [24], dtype: "bfloat16", param: "bfloat16" },
  {
    shape: [2, 3, 24],
    normalizedShape: [24],
    dtype: "bfloat16",
    param: "float32",
    stats: "bfloat16",
  },
  { shape: [7], normalizedShape: [7], dtype: "float32", param: "float32" },
];

forEachBackend("fastLayerNorm: output and statistics against the float64 oracle", (ctx) => {
  const d = ctx.device;
  for (const c of CASES) {
    const what = `${ctx.label} ${c.dtype}/${c.param ?? "-"} [${c.shape}]`;
    const input = rnd(c.shape, 1, c.dtype);
    const cols = c.normalizedShape.reduce((p, n) => p * n, 1);
    const rows = input.numel / cols;
    const weight = c.param ? rnd(c.normalizedShape, 2, c.param, 0.5, 1.5) : undefined;
    const bias = c.param ? rnd(c.normalizedShape, 3, c.param) : undefined;
    const statShape = c.shape.map((
      n,
      i,
    ) => (i < c.shape.length - c.normalizedShape.length ? n : 1));
    const out = c.stats
      ? {
        mean: on(Tensor.zeros(statShape, c.stats), d),
        rstd: on(Tensor.zeros(statShape, c.stats), d),
      }
      : undefined;
    const r = fastLayerNorm({
      input: on(input, d),
      normalizedShape: c.normalizedShape,
      weight: onOpt(weight, d),
      bias: onOpt(bias, d),
      out,
    });
    const e = layerNorm64(
      input.toArray(),
      rows,
      cols,
      Math.fround(1e-5),
      weight?.toArray(),
      bias?.toArray(),
    );
    assert.equal(r.output.dtype, c.dtype, what);
    assert.equal(r.mean.dtype, c.stats ?? "float32", what);
    assert.deepEqual(r.mean.shape, statShape, what);
    const tol = looser(toleranceFor(c.dtype), toleranceFor(c.param ?? c.dtype));
    assertClose(r.output, e.y, tol, `${what} output`);
    const statsTol = looser(toleranceFor(c.stats ?? "float32"), toleranceFor(c.dtype));
    assertClose(r.mean, e.mean, statsTol, `${what} mean`);
    assertClose(r.rstd, e.rstd, statsTol, `${what} rstd`);
    r[Symbol.dispose]();
  }
}, A2);

Deno.test("fastLayerNorm: the CPU computes layerNorm's bits", () => {
  for (const c of CASES) {
    const input = rnd(c.shape, 1, c.dtype);
    const weight = c.param ? rnd(c.normalizedShape, 2, c.param, 0.5, 1.5) : undefined;
    const bias = c.param ? rnd(c.normalizedShape, 3, c.param) : undefined;
    const args: FastLayerNormArgs = { input, normalizedShape: c.normalizedShape, weight, bias };
    const fast = fastLayerNorm(args);
    const slow = layerNorm(args);
    for (const k of ["output", "mean", "rstd"] as const) {
      assert.deepEqual(fast[k].toArray(), slow[k].toArray(), `${c.dtype} ${k}`);
    }
  }
});

forEachBackend("fastLayerNorm: empty inputs (N = 0 before M = 0)", (ctx) => {
  const d = ctx.device;
  // Rows of no element: mean 0 and rstd NaN, whatever their shapes (here float16 [2]).
  const mean = on(Tensor.full([2], 7, "float16"), d);
  const rstd = on(Tensor.full([3, 1], 7), d);
  const r = fastLayerNorm({
    input: on(Tensor.zeros([3, 0]), d),
    normalizedShape: [0],
    out: { mean, rstd },
  });
  assert.deepEqual(r.output.shape, [3, 0]);
  assert.deepEqual(mean.toArray(), [0, 0]);
  assert.ok(rstd.toArray().every(Number.isNaN));
  // No rows and no element per row: N == 0 is tested first, so the statistics are filled.
  const m0 = on(Tensor.full([1], 5), d);
  fastLayerNorm({ input: on(Tensor.zeros([0, 0]), d), normalizedShape: [0], out: { mean: m0 } });
  assert.deepEqual(m0.toArray(), [0]);
  // No rows: nothing written, the statistics' shapes unchecked.
  const untouched = on(Tensor.full([4], 5), d);
  const e = fastLayerNorm({
    input: on(Tensor.zeros([0, 4], "bfloat16"), d),
    normalizedShape: [4],
    out: { rstd: untouched },
  });
  assert.deepEqual(untouched.toArray(), [5, 5, 5, 5]);
  assert.deepEqual([e.output.shape, e.mean.shape], [[0, 4], [0]]);
}, A2);

forEachBackend("fastLayerNorm: errors in CANN's check order", (ctx) => {
  const d = ctx.device;
  const x = on(rnd([2, 3, 4], 1), d);
  const base: FastLayerNormArgs = { input: x, normalizedShape: [4] };
  const f = (a: Partial<FastLayerNormArgs>) => () => fastLayerNorm({ ...base, ...a });
  const t = (shape: number[], dtype: DType = "float32") => on(Tensor.zeros(shape, dtype), d);
  const int = t([4], "int32" as DType);
  // CheckFastNotNull: input, normalizedShape, out (before any dtype).
  assertAclnnError(f({ input: undefined, weight: int }), NULLPTR, "input");
  assertAclnnError(f({ normalizedShape: null, weight: int }), NULLPTR, "normalizedShape");
  assertAclnnError(f({ out: { output: null }, weight: int }), NULLPTR, "output");
  // CheckInputDtype: input, weight (list, then input's or float32), weight == bias, bias.
  assertAclnnError(f({ input: t([2, 3, 4], "int32" as DType), weight: int }), INVALID, "input");
  assertAclnnError(f({ weight: int }), INVALID, "weight");
  assertAclnnError(
    f({ input: t([2, 3, 4], "float16"), weight: t([4], "bfloat16") }),
    INVALID,
    "weight",
  );
  const half = t([2, 3, 4], "float16");
  assertAclnnError(f({ input: half, weight: t([4]), bias: t([4], "float16") }), INVALID, "bias");
  assertAclnnError(f({ input: half, bias: t([4], "bfloat16") }), INVALID, "bias");
  // CheckFastOutputDtype: out, rstd, mean in the list only.
  assertAclnnError(
    f({ out: { mean: int, rstd: t([2, 3, 1], "int32" as DType) } }),
    INVALID,
    "rstd",
  );
  assertAclnnError(f({ out: { mean: int } }), INVALID, "mean");
  // CheckShape: normalizedShape empty; ranks (out, input, ...); len > 8; weight's rank; input's
  // rank; bias's rank; each normalized dim; out's shape.
  assertAclnnError(
    f({ normalizedShape: [], weight: t([1, 1, 1, 1, 1, 1, 1, 1, 1]) }),
    INVALID,
    "normalizedShape",
  );
  const nine = new Array(9).fill(1);
  assertAclnnError(f({ out: { output: t(nine) }, input: t(nine) }), INVALID, "output");
  assertAclnnError(f({ input: t(nine), normalizedShape: nine }), INVALID, "input");
  assertAclnnError(
    f({ input: t([1, 1, 1, 1, 1, 1, 1, 1]), normalizedShape: nine }),
    INVALID,
    "normalizedShape",
  );
  assertAclnnError(f({ weight: t([1, 4]), bias: t([1, 4]) }), INVALID, "weight");
  assertAclnnError(f({ input: t([4]), normalizedShape: [1, 4], bias: t([4]) }), INVALID, "input");
  assertAclnnError(f({ bias: t([1, 4]) }), INVALID, "bias");
  assertAclnnError(f({ normalizedShape: [5], weight: t([4]) }), INVALID, "normalizedShape");
  assertAclnnError(f({ weight: t([5]) }), INVALID, "weight");
  assertAclnnError(f({ out: { output: t([2, 12]) } }), INVALID, "output");
  // l0op::ViewCopy (doFastLayerNorm): out uncast, then rstd, then mean.
  assertAclnnError(
    f({ out: { output: t([2, 3, 4], "float16"), rstd: t([6]) } }),
    INNER_NULLPTR,
    "output",
  );
  assertAclnnError(f({ out: { rstd: t([6]), mean: t([6]) } }), INNER_NULLPTR, "rstd");
  assertAclnnError(f({ out: { mean: t([2, 3]) } }), INNER_NULLPTR, "mean");
  // Statistics in any listed dtype (cast by CANN), of [A1..Ai, 1..1].
  const r = fastLayerNorm({
    ...base,
    out: { mean: t([2, 3, 1], "bfloat16"), rstd: t([2, 3, 1], "float16") },
  });
  assert.deepEqual([r.mean.dtype, r.rstd.dtype], ["bfloat16", "float16"]);
}, A2);

forEachBackend("fastLayerNorm: refused on Ascend 950, naming the SoC", (ctx) => {
  const x = on(rnd([2, 4], 1), ctx.device);
  const e = assertChipRefuses(
    ctx,
    () => fastLayerNorm({ input: x, normalizedShape: [4] }),
    "device",
  );
  assert.match(e.message, /aclnnFastLayerNorm does not support/);
  assert.match(e.message, /Ascend950PR_9599/);
}, { cpu: false, socs: ["Ascend950PR_9599"] });
