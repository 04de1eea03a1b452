/**
 * layerNorm (aclnnLayerNorm) on every backend: the float64 reference over dtypes, mixed
 * precision, multi-dim normalized shapes and strided views (transposed, sliced, normalized dims
 * that do not collapse to one stride, leading dims that do not either), empty inputs, outputs in
 * another dtype, CANN's validation codes in its order, and the chip's product and bfloat16
 * rules. The NPU path runs on the software CANN (Ascend 950 and Atlas A2 by default).
 *
 * @module
 */

import assert from "node:assert/strict";
import { layerNorm, type LayerNormArgs } from "../../src/ops/layer_norm.ts";
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
  onOpt,
} from "../helpers/backends.ts";
import { layerNorm as layerNorm64 } from "../oracle/row_norms.ts";
import { cancellation, looser, toleranceFor } from "../helpers/tolerance.ts";

const NULLPTR = 161001;
const INVALID = 161002;
const INNER_NULLPTR = 561103;

function rnd(shape: number[], seed: number, dtype: DType = "float32", low = -2, high = 3) {
  return Tensor.random(shape, { seed, dtype, low, high });
}

interface Case {
  name: string;
  input: Tensor;
  normalizedShape: number[];
  weight?: Tensor;
  bias?: Tensor;
  eps?: number;
  /** dtype of a given output (default: allocated, input's). */
  outDType?: DType;
  /** dtype of given mean/rstd (default: allocated float32). */
  statsDType?: DType;
}

/** [2, 4, 3] storage viewed as [2, 3, 4]: the last two dims (strides 1, 3) never collapse. */
const crossed = rnd([2, 4, 3], 7).permute([0, 2, 1]);
/** [4, 5, 6] sliced on dim 1: rows' leading dims (strides 30, 6 over [4, 3]) do not collapse. */
const sliced = rnd([4, 5, 6], 8).slice(1, 1, 4);

const CASES: Case[] = [
  {
    name: "float32 [4,6,10], weight and bias",
    input: rnd([4, 6, 10], 1),
    normalizedShape: [10],
    weight: rnd([10], 2, "float32", 0.5, 1.5),
    bias: rnd([10], 3),
  },
  {
    name: "float32, two normalized dims",
    input: rnd([3, 4, 5], 4),
    normalizedShape: [4, 5],
    weight: rnd([4, 5], 5, "float32", 0.5, 1.5),
    bias: rnd([4, 5], 6),
    eps: 1e-3,
  },
  { name: "float32 1-D", input: rnd([9], 9), normalizedShape: [9] },
  { name: "float32 every dim normalized", input: rnd([2, 3, 4], 10), normalizedShape: [2, 3, 4] },
  {
    name: "float16, float16 parameters",
    input: rnd([5, 12], 11, "float16"),
    normalizedShape: [12],
    weight: rnd([12], 12, "float16", 0.5, 1.5),
    bias: rnd([12], 13, "float16"),
  },
  {
    name: "float16, float32 parameters (mixed precision)",
    input: rnd([5, 12], 14, "float16"),
    normalizedShape: [12],
    weight: rnd([12], 15, "float32", 0.5, 1.5),
    bias: rnd([12], 16, "float32"),
  },
  {
    name: "bfloat16, float32 weight only",
    input: rnd([3, 2, 16], 17, "bfloat16"),
    normalizedShape: [16],
    weight: rnd([16], 18, "float32", 0.5, 1.5),
  },
  { name: "bfloat16, no parameters", input: rnd([6, 33], 19, "bfloat16"), normalizedShape: [33] },
  {
    name: "transposed view (row elements at stride 6)",
    input: rnd([10, 6], 20).transpose(0, 1),
    normalizedShape: [10],
  },
  { name: "normalized dims that do not collapse", input: crossed, normalizedShape: [3, 4] },
  {
    name: "leading dims that do not collapse",
    input: sliced,
    normalizedShape: [6],
    weight: rnd([6], 21),
  },
  {
    name: "sliced rows with an offset",
    input: rnd([8, 12], 22).slice(1, 2, 12),
    normalizedShape: [10],
    bias: rnd([10], 23),
  },
  {
    name: "float32 input into a float16 output and bfloat16 statistics",
    input: rnd([4, 8], 24),
    normalizedShape: [8],
    weight: rnd([8], 25),
    outDType: "float16",
    statsDType: "bfloat16",
  },
  {
    name: "large mean (cancellation)",
    input: rnd([3, 64], 26, "float32", 1e4, 1e4 + 1),
    normalizedShape: [64],
  },
];

/**
 * The dtype CANN's LayerNormV3 rounds the statistics to before casting them (mean in the
 * weight's dtype, rstd in the bias's; tests/sim/README_norm.md): off DAV_3510 on an NPU, a
 * 16-bit parameter (or input, without parameters) dtype. The CPU backend keeps float64.
 */
function statisticsDType(ctx: BackendContext, c: Case): DType {
  if (!ctx.soc || isRegbase(ctx.soc)) return "float32";
  return c.weight?.dtype ?? c.bias?.dtype ?? c.input.dtype;
}

forEachBackend(
  "layerNorm: equals the float64 reference (dtypes, layouts, mixed precision)",
  (ctx) => {
    for (const c of CASES) {
      const dtypes = [c.input.dtype, c.weight?.dtype, c.bias?.dtype, c.outDType, c.statsDType];
      if (!chipAccepts(ctx.soc, "aclnnLayerNorm", dtypes)) continue;
      const input = on(c.input, ctx.device);
      const len = c.normalizedShape.length;
      const rows = c.input.numel / c.normalizedShape.reduce((a, b) => a * b, 1);
      const statsShape = c.input.shape.map((d, i) => (i < c.input.rank - len ? d : 1));
      const out = {
        output: c.outDType ? Tensor.zeros(c.input.shape, c.outDType, ctx.device) : undefined,
        mean: c.statsDType ? Tensor.zeros(statsShape, c.statsDType, ctx.device) : undefined,
        rstd: c.statsDType ? Tensor.zeros(statsShape, c.statsDType, ctx.device) : undefined,
      };
      const r = layerNorm({
        input,
        normalizedShape: c.normalizedShape,
        weight: onOpt(c.weight, ctx.device),
        bias: onOpt(c.bias, ctx.device),
        eps: c.eps,
        out,
      });
      const e = layerNorm64(
        [...c.input.toFloat64Array()],
        rows,
        c.input.numel / rows,
        c.eps ?? 1e-5,
        c.weight ? [...c.weight.toFloat64Array()] : undefined,
        c.bias ? [...c.bias.toFloat64Array()] : undefined,
      );
      assert.equal(r.output.dtype, c.outDType ?? c.input.dtype, c.name);
      assert.deepEqual(r.output.shape, c.input.shape, c.name);
      assert.equal(r.mean.dtype, c.statsDType ?? "float32", c.name);
      assert.deepEqual(r.mean.shape, statsShape, `${c.name}: [A1..Ai, 1..1]`);
      if (c.outDType) assert.equal(r.output, out.output, `${c.name}: out.output is the result`);
      // y is computed in the input's dtype and cast to the output's (one extra rounding), from
      // (x - mean) * rstd in float32: its error scales with |x| * rstd * |w| (the terms that
      // cancel), which the large-mean case makes 3e4 times |y|.
      const xs = c.input.toFloat64Array();
      const ws = c.weight ? c.weight.toFloat64Array() : [1];
      const maxAbs = (v: ArrayLike<number>) => Math.max(...Array.from(v, Math.abs));
      const terms = maxAbs(xs) * maxAbs(e.rstd) * maxAbs(ws);
      const yTol = cancellation(
        looser(toleranceFor(r.output.dtype), toleranceFor(c.input.dtype)),
        terms,
        maxAbs(e.y),
      );
      assertClose(r.output, e.y, yTol, `${ctx.label} ${c.name} output`);
      const statsTol = looser(toleranceFor(r.mean.dtype), toleranceFor(statisticsDType(ctx, c)));
      assertClose(r.mean, e.mean, statsTol, `${ctx.label} ${c.name} mean`);
      assertClose(r.rstd, e.rstd, statsTol, `${ctx.label} ${c.name} rstd`);
    }
  },
);

forEachBackend(
  "layerNorm: allocated outputs keep the input's layout, float32 statistics",
  (ctx) => {
    const x = on(
      rnd([2, 3, 4, 5], 30).permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2]),
      ctx.device,
    );
    const r = layerNorm({ input: x, normalizedShape: [4, 5] });
    assert.deepEqual(r.output.strides, x.strides, "channels-last in, channels-last out");
    assert.deepEqual(r.mean.shape, [2, 3, 1, 1]);
    assert.equal(r.rstd.dtype, "float32");
    r[Symbol.dispose]();
  },
);

forEachBackend("layerNorm: empty inputs (no rows; rows of no element: mean 0, rstd NaN)", (ctx) => {
  const none = layerNorm({ input: on(Tensor.zeros([0, 4]), ctx.device), normalizedShape: [4] });
  assert.deepEqual(none.output.shape, [0, 4]);
  assert.deepEqual(none.mean.shape, [0], "torch_npu allocates [M] when M = 0");
  const noCols = layerNorm({ input: on(Tensor.zeros([3, 0]), ctx.device), normalizedShape: [0] });
  assert.deepEqual(noCols.mean.shape, [3, 1]);
  assert.deepEqual(noCols.mean.toArray(), [0, 0, 0]);
  assert.deepEqual(noCols.rstd.toArray(), [NaN, NaN, NaN]);
});

forEachBackend("layerNorm: NaN and Inf reach only their own row", (ctx) => {
  const v = rnd([3, 8], 31).toArray();
  v[3] = NaN;
  v[12] = Infinity;
  const r = layerNorm({ input: on(Tensor.fromArray(v, [3, 8]), ctx.device), normalizedShape: [8] });
  const y = r.output.toArray();
  assert.ok(y.slice(0, 16).every(Number.isNaN), "rows holding NaN / Inf are NaN");
  assert.ok(y.slice(16).every(Number.isFinite), "the clean row stays finite");
});

// ---------------------------------------------------------------------------------------
// Validation, in CANN's order (aclnn_layer_norm.cpp CheckNotNull, dtypes, CheckShape).

function valid(device: BackendContext["device"]): LayerNormArgs {
  return {
    input: on(rnd([2, 3, 4], 40), device),
    normalizedShape: [4],
    weight: on(rnd([4], 41), device),
    bias: on(rnd([4], 42), device),
  };
}

forEachBackend("layerNorm: missing arguments are 161001", (ctx) => {
  const a = valid(ctx.device);
  for (const value of [undefined, null]) {
    assertAclnnError(() => layerNorm({ ...a, input: value }), NULLPTR, "input");
    assertAclnnError(() => layerNorm({ ...a, normalizedShape: value }), NULLPTR, "normalizedShape");
  }
  assertAclnnError(() => layerNorm({ ...a, out: { output: null } }), NULLPTR, "output");
  // meanOutOptional / rstdOutOptional: null is legal, the package allocates them.
  assert.equal(layerNorm({ ...a, out: { mean: null, rstd: null } }).mean.dtype, "float32");
});

forEachBackend("layerNorm: dtype rules are 161002 naming the argument", (ctx) => {
  const a = valid(ctx.device);
  const as = (t: Tensor, d: DType) =>
    on(Tensor.fromArray(t.toFloat64Array(), t.shape, d), ctx.device);
  assertAclnnError(() => layerNorm({ ...a, input: as(a.input!, "int32") }), INVALID, "input");
  // weight/bias: float32 or input's dtype, and the same as each other.
  const h = { ...a, input: as(a.input!, "float16") };
  assertAclnnError(() => layerNorm({ ...a, weight: as(a.weight!, "float16") }), INVALID, "weight");
  assertAclnnError(() => layerNorm({ ...h, weight: as(a.weight!, "float16") }), INVALID, "bias");
  assertAclnnError(() => layerNorm({ ...a, bias: as(a.bias!, "int32") }), INVALID, "bias");
  const out = (d: DType) => Tensor.zeros([2, 3, 4], d, ctx.device);
  assertAclnnError(() => layerNorm({ ...a, out: { output: out("int32") } }), INVALID, "output");
  const stat = Tensor.zeros([2, 3, 1], "int32", ctx.device);
  assertAclnnError(() => layerNorm({ ...a, out: { rstd: stat } }), INVALID, "rstd");
});

forEachBackend("layerNorm: shape rules are 161002 naming the argument", (ctx) => {
  const a = valid(ctx.device);
  const d = ctx.device;
  const nine = on(Tensor.zeros([1, 1, 1, 1, 1, 1, 1, 1, 4]), d);
  assertAclnnError(() => layerNorm({ ...a, input: nine }), INVALID, "input");
  assertAclnnError(() => layerNorm({ ...a, normalizedShape: [] }), INVALID, "normalizedShape");
  assertAclnnError(
    () => layerNorm({ ...a, normalizedShape: [1, 1, 1, 1, 1, 1, 1, 1, 4] }),
    INVALID,
    "normalizedShape",
  );
  assertAclnnError(
    () => layerNorm({ ...a, normalizedShape: [9, 2, 3, 4], weight: undefined, bias: undefined }),
    INVALID,
    "input",
  );
  assertAclnnError(
    () => layerNorm({ ...a, normalizedShape: [5], weight: undefined, bias: undefined }),
    INVALID,
    "normalizedShape",
  );
  assertAclnnError(
    () => layerNorm({ ...a, weight: on(Tensor.zeros([1, 4]), d) }),
    INVALID,
    "weight",
  );
  assertAclnnError(() => layerNorm({ ...a, bias: on(Tensor.zeros([5]), d) }), INVALID, "bias");
  assertAclnnError(
    () => layerNorm({ ...a, out: { output: Tensor.zeros([2, 3, 5], "float32", d) } }),
    INVALID,
    "output",
  );
});

/**
 * Given mean/rstd: CANN copies its [A1..Ai, 1..1] results with l0op::ViewCopy, which refuses
 * another shape unless both hold one element (561103); DAV_3510 checks the shape first
 * (CheckMeanRstdOutputShape, 161002), also where CANN computes nothing.
 */
forEachBackend(
  "layerNorm: given mean/rstd shapes (ViewCopy's 561103, DAV_3510's 161002)",
  (ctx) => {
    const a = valid(ctx.device);
    const d = ctx.device;
    const checked = ctx.soc !== undefined && isRegbase(ctx.soc);
    const code = checked ? INVALID : INNER_NULLPTR;
    const cases: ["mean" | "rstd", number[]][] = [
      ["mean", [6]],
      ["mean", [2, 3]],
      ["rstd", [6, 1]],
      ["rstd", [2, 1, 1]],
    ];
    for (const [name, shape] of cases) {
      const t = Tensor.zeros(shape, "float32", d);
      const e = assertAclnnError(() => layerNorm({ ...a, out: { [name]: t } }), code, name);
      assert.match(
        e.message,
        checked ? /must be \[2, 3, 1\] on / : /must be the result's \[2, 3, 1\]/,
      );
    }
    // One row: a one-element mean/rstd of any shape receives it (DAV_3510: [1, 1] only).
    const x = rnd([1, 4], 43);
    const e = layerNorm64([...x.toFloat64Array()], 1, 4, 1e-5);
    for (const shape of [[1], [1, 1, 1], [], [1, 1]]) {
      const out = {
        mean: Tensor.zeros(shape, "float32", d),
        rstd: Tensor.zeros(shape, "float32", d),
      };
      const run = () => layerNorm({ input: on(x, d), normalizedShape: [4], out });
      if (checked && shape.length !== 2) {
        assertAclnnError(run, INVALID, "mean");
        continue;
      }
      const r = run();
      assert.deepEqual(r.mean.shape, shape);
      assertClose(r.mean, e.mean, undefined, `${ctx.label} mean [${shape}]`);
      assertClose(r.rstd, e.rstd, undefined, `${ctx.label} rstd [${shape}]`);
    }
    // No rows: CANN writes nothing, so any shape is taken (and left as it was).
    const sevens = Tensor.full([5], 7, "float32", d);
    const noRows = () =>
      layerNorm({
        input: on(Tensor.zeros([0, 4]), d),
        normalizedShape: [4],
        out: { mean: sevens },
      });
    if (checked) assertAclnnError(noRows, INVALID, "mean");
    else assert.deepEqual(noRows().mean.toArray(), [7, 7, 7, 7, 7]);
    // Rows of no element: CANN fills every element, whatever the shape.
    const mean = Tensor.full([3], 7, "float32", d);
    const rstd = Tensor.full([1, 3], 7, "float32", d);
    const noCols = () =>
      layerNorm({ input: on(Tensor.zeros([2, 0]), d), normalizedShape: [0], out: { mean, rstd } });
    if (checked) assertAclnnError(noCols, INVALID, "mean");
    else {
      const r = noCols();
      assert.deepEqual([r.mean.toArray(), r.rstd.toArray()], [[0, 0, 0], [NaN, NaN, NaN]]);
    }
  },
);

forEachBackend("layerNorm: scalar and overlap rules are 161002", (ctx) => {
  const a = valid(ctx.device);
  assertAclnnError(
    () => layerNorm({ ...a, normalizedShape: [4.5] as number[] }),
    INVALID,
    "normalizedShape.0",
  );
  assertAclnnError(
    () => layerNorm({ ...a, normalizedShape: "4" as unknown as number[] }),
    INVALID,
    "normalizedShape",
  );
  assertAclnnError(() => layerNorm({ ...a, eps: NaN }), INVALID, "eps");
  // CANN checks no eps: 0 and negative values run (a constant row then gives Inf / NaN).
  const zero = layerNorm({ ...a, input: on(Tensor.ones([2, 4]), ctx.device), eps: 0 });
  assert.deepEqual(zero.rstd.toArray(), [Infinity, Infinity]);
  assertAclnnError(() => layerNorm({ ...a, out: { output: a.input! } }), INVALID, "output");
});

Deno.test("layerNorm: a changed normalizedShape array is validated again", () => {
  const shape = [4];
  const input = rnd([2, 4], 50);
  layerNorm({ input, normalizedShape: shape });
  shape[0] = 5;
  assertAclnnError(() => layerNorm({ input, normalizedShape: shape }), INVALID, "normalizedShape");
});

forEachBackend(
  "layerNorm: products and bfloat16 per chip (Atlas training, inference, 200I/500 A2)",
  (ctx) => {
    const x = on(rnd([2, 8], 60, "bfloat16"), ctx.device);
    const h = on(rnd([2, 8], 61, "float16"), ctx.device);
    if (!chipAccepts(ctx.soc, "aclnnLayerNorm", ["float16"])) {
      assertChipRefuses(ctx, () => layerNorm({ input: h, normalizedShape: [8] }), "device");
      return;
    }
    assertClose(
      layerNorm({ input: h, normalizedShape: [8] }).output,
      layerNorm64([...h.toFloat64Array()], 2, 8, 1e-5).y,
    );
    if (chipAccepts(ctx.soc, "aclnnLayerNorm", ["bfloat16"])) {
      layerNorm({ input: x, normalizedShape: [8] });
    } else {
      assertChipRefuses(ctx, () => layerNorm({ input: x, normalizedShape: [8] }), "input");
    }
  },
  { cpu: false, socs: ["Ascend910A", "Ascend310P3", "Ascend310B1", "Ascend910_9391"] },
);
