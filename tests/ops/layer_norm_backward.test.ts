/**
 * layerNormBackward (aclnnLayerNormBackward) on every backend: gradients against the float64
 * reference and against central differences of the float64 forward (every gradient: input,
 * weight, bias), masks, mixed precision, strided views, empty inputs, CANN's validation codes
 * in its order, and the chips' product and bfloat16 rules.
 *
 * @module
 */

import assert from "node:assert/strict";
import { layerNorm } from "../../src/ops/layer_norm.ts";
import {
  layerNormBackward,
  type LayerNormBackwardArgs,
} from "../../src/ops/layer_norm_backward.ts";
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
import {
  dot,
  finiteDifferences,
  layerNorm as layerNorm64,
  layerNormBackward as layerNormBackward64,
} from "../oracle/row_norms.ts";
import { FINITE_DIFFERENCES, looser, toleranceFor } from "../helpers/tolerance.ts";

const NULLPTR = 161001;
const INVALID = 161002;
const EPS = 1e-5;

function rnd(shape: number[], seed: number, dtype: DType = "float32", low = -2, high = 3) {
  return Tensor.random(shape, { seed, dtype, low, high });
}

interface Case {
  name: string;
  shape: number[];
  normalizedShape: number[];
  dtype: DType;
  weightDType?: DType;
  statsDType?: DType;
  layout?: (t: Tensor) => Tensor;
  mask?: [boolean, boolean, boolean];
}

const CASES: Case[] = [
  {
    name: "float32 [4,6,10]",
    shape: [4, 6, 10],
    normalizedShape: [10],
    dtype: "float32",
    weightDType: "float32",
  },
  {
    name: "float32 two normalized dims",
    shape: [3, 4, 5],
    normalizedShape: [4, 5],
    dtype: "float32",
    weightDType: "float32",
  },
  { name: "float32 no weight", shape: [7, 9], normalizedShape: [9], dtype: "float32" },
  {
    name: "float16 with float16 weight",
    shape: [5, 12],
    normalizedShape: [12],
    dtype: "float16",
    weightDType: "float16",
  },
  {
    name: "float16 with float32 weight and statistics",
    shape: [5, 12],
    normalizedShape: [12],
    dtype: "float16",
    weightDType: "float32",
    statsDType: "float32",
  },
  {
    name: "bfloat16 with float32 weight",
    shape: [2, 3, 16],
    normalizedShape: [16],
    dtype: "bfloat16",
    weightDType: "float32",
  },
  {
    name: "transposed data",
    shape: [6, 10],
    normalizedShape: [10],
    dtype: "float32",
    weightDType: "float32",
    layout: (t) => t.transpose(0, 1).contiguous().transpose(0, 1),
  },
  {
    name: "normalized dims that do not collapse",
    shape: [2, 3, 4],
    normalizedShape: [3, 4],
    dtype: "float32",
    weightDType: "float32",
    layout: (t) => t.permute([0, 2, 1]).contiguous().permute([0, 2, 1]),
  },
  {
    name: "mask [true, false, false]",
    shape: [4, 8],
    normalizedShape: [8],
    dtype: "float32",
    weightDType: "float32",
    mask: [true, false, false],
  },
  {
    name: "mask [false, true, true]",
    shape: [4, 8],
    normalizedShape: [8],
    dtype: "float32",
    mask: [false, true, true],
  },
  {
    name: "mask [false, false, true]",
    shape: [4, 8],
    normalizedShape: [8],
    dtype: "float16",
    mask: [false, false, true],
  },
];

/** The case's host inputs, with mean/rstd from the float64 forward of the (rounded) input. */
function inputs(c: Case) {
  const layout = c.layout ?? ((t: Tensor) => t);
  const input = layout(rnd(c.shape, 1, c.dtype));
  const gradOut = layout(rnd(c.shape, 2, c.dtype, -1, 1));
  const cols = c.normalizedShape.reduce((a, b) => a * b, 1);
  const rows = input.numel / cols;
  const weight = c.weightDType ? rnd(c.normalizedShape, 3, c.weightDType, 0.5, 1.5) : undefined;
  const f = layerNorm64([...input.toFloat64Array()], rows, cols, EPS);
  const statsShape = c.shape.map((d, i) => (i < c.shape.length - c.normalizedShape.length ? d : 1));
  const statsDType = c.statsDType ?? "float32";
  return {
    input,
    gradOut,
    weight,
    bias: weight ? rnd(c.normalizedShape, 4, weight.dtype) : undefined,
    mean: Tensor.fromArray(f.mean, statsShape, statsDType),
    rstd: Tensor.fromArray(f.rstd, statsShape, statsDType),
    rows,
    cols,
  };
}

forEachBackend(
  "layerNormBackward: equals the float64 reference (dtypes, layouts, masks)",
  (ctx) => {
    for (const c of CASES) {
      const dtypes = [c.dtype, c.weightDType, c.statsDType];
      if (!chipAccepts(ctx.soc, "aclnnLayerNormBackward", dtypes)) continue;
      const h = inputs(c);
      const r = layerNormBackward({
        gradOut: on(h.gradOut, ctx.device),
        input: on(h.input, ctx.device),
        normalizedShape: c.normalizedShape,
        mean: on(h.mean, ctx.device),
        rstd: on(h.rstd, ctx.device),
        weight: onOpt(h.weight, ctx.device),
        bias: onOpt(h.bias, ctx.device),
        outputMask: c.mask,
      });
      const e = layerNormBackward64(
        [...h.gradOut.toFloat64Array()],
        [...h.input.toFloat64Array()],
        [...h.mean.toFloat64Array()],
        [...h.rstd.toFloat64Array()],
        h.rows,
        h.cols,
        h.weight ? [...h.weight.toFloat64Array()] : undefined,
      );
      const [gi, gw, gb] = c.mask ?? [true, true, true];
      assert.equal(r.gradInput !== null, gi, `${c.name} gradInput presence`);
      assert.equal(r.gradWeight !== null, gw, `${c.name} gradWeight presence`);
      assert.equal(r.gradBias !== null, gb, `${c.name} gradBias presence`);
      if (r.gradInput) {
        assert.equal(r.gradInput.dtype, c.dtype);
        assert.deepEqual(r.gradInput.strides, h.input.strides, `${c.name}: input's layout`);
        assertClose(r.gradInput, e.gradInput, undefined, `${ctx.label} ${c.name} gradInput`);
      }
      for (
        const [name, t, want] of [
          ["gradWeight", r.gradWeight, e.gradWeight],
          ["gradBias", r.gradBias, e.gradBias],
        ] as const
      ) {
        if (!t) continue;
        assert.equal(t.dtype, "float32", `${c.name} ${name}: float32, as torch_npu allocates it`);
        assert.deepEqual(t.shape, c.normalizedShape);
        // On regbase a 16-bit gradient may be formed in the weight's dtype (README_norm.md).
        assertClose(
          t,
          want,
          looser(toleranceFor("float32"), toleranceFor(c.dtype)),
          `${ctx.label} ${c.name} ${name}`,
        );
      }
    }
  },
);

/**
 * Central differences of L = <gradOut, layerNorm(x, weight, bias)> (the float64 forward) for
 * every gradient; the backend's gradients, from the forward's float32 statistics, must match.
 */
forEachBackend(
  "layerNormBackward: every gradient equals finite differences of the forward",
  (ctx) => {
    const [rows, cols] = [3, 6];
    const x = rnd([rows, cols], 10);
    const dy = rnd([rows, cols], 11, "float32", -1, 1);
    const w = rnd([cols], 12, "float32", 0.5, 1.5);
    const b = rnd([cols], 13);
    const xv = [...x.toFloat64Array()];
    const dyv = [...dy.toFloat64Array()];
    const wv = [...w.toFloat64Array()];
    const bv = [...b.toFloat64Array()];
    const loss = (xs: number[], ws: number[], bs: number[]) =>
      dot(dyv, layerNorm64(xs, rows, cols, EPS, ws, bs).y);
    const fd = {
      gradInput: finiteDifferences((v) => loss(v, wv, bv), xv),
      gradWeight: finiteDifferences((v) => loss(xv, v, bv), wv),
      gradBias: finiteDifferences((v) => loss(xv, wv, v), bv),
    };
    // The reference formula itself agrees with the differences (exact statistics).
    const f = layerNorm64(xv, rows, cols, EPS, wv, bv);
    const exact = layerNormBackward64(dyv, xv, f.mean, f.rstd, rows, cols, wv);
    for (const k of ["gradInput", "gradWeight", "gradBias"] as const) {
      assertClose(exact[k], fd[k], FINITE_DIFFERENCES, `reference ${k}`);
    }
    const d = ctx.device;
    const forward = layerNorm({
      input: on(x, d),
      normalizedShape: [cols],
      weight: on(w, d),
      bias: on(b, d),
      eps: EPS,
    });
    const r = layerNormBackward({
      gradOut: on(dy, d),
      input: on(x, d),
      normalizedShape: [cols],
      mean: forward.mean,
      rstd: forward.rstd,
      weight: on(w, d),
      bias: on(b, d),
    });
    for (const k of ["gradInput", "gradWeight", "gradBias"] as const) {
      assertClose(r[k], fd[k], toleranceFor("float32"), `${ctx.label} ${k} vs finite differences`);
    }
  },
);

forEachBackend("layerNormBackward: empty inputs (no rows: zero gradWeight and gradBias)", (ctx) => {
  const d = ctx.device;
  const r = layerNormBackward({
    gradOut: on(Tensor.zeros([0, 4]), d),
    input: on(Tensor.zeros([0, 4]), d),
    normalizedShape: [4],
    mean: on(Tensor.zeros([0]), d),
    rstd: on(Tensor.zeros([0]), d),
  });
  assert.deepEqual(r.gradInput?.shape, [0, 4]);
  assert.deepEqual(r.gradWeight?.toArray(), [0, 0, 0, 0]);
  assert.deepEqual(r.gradBias?.toArray(), [0, 0, 0, 0]);
  const none = layerNormBackward({
    gradOut: on(Tensor.zeros([2, 4]), d),
    input: on(Tensor.zeros([2, 4]), d),
    normalizedShape: [4],
    mean: on(Tensor.zeros([2, 1]), d),
    rstd: on(Tensor.zeros([2, 1]), d),
    outputMask: [false, false, false],
  });
  assert.deepEqual([none.gradInput, none.gradWeight, none.gradBias], [null, null, null]);
});

// ---------------------------------------------------------------------------------------
// Validation, in CANN's order (aclnn_layer_norm_backward.cpp CheckNotNull, CheckParams,
// CheckDtype, CheckShape).

function valid(device: BackendContext["device"]): LayerNormBackwardArgs {
  return {
    gradOut: on(rnd([2, 3, 4], 20), device),
    input: on(rnd([2, 3, 4], 21), device),
    normalizedShape: [4],
    mean: on(Tensor.zeros([2, 3, 1]), device),
    rstd: on(Tensor.ones([2, 3, 1]), device),
    weight: on(rnd([4], 22), device),
    bias: on(rnd([4], 23), device),
  };
}

forEachBackend(
  "layerNormBackward: missing arguments are 161001, a wrong mask length 161002",
  (ctx) => {
    const a = valid(ctx.device);
    for (const name of ["gradOut", "input", "normalizedShape", "mean", "rstd"] as const) {
      for (const value of [undefined, null]) {
        assertAclnnError(() => layerNormBackward({ ...a, [name]: value }), NULLPTR, name);
      }
    }
    assertAclnnError(() => layerNormBackward({ ...a, outputMask: null }), NULLPTR, "outputMask");
    assertAclnnError(
      () => layerNormBackward({ ...a, outputMask: [true, true] }),
      INVALID,
      "outputMask",
    );
    for (const name of ["gradInput", "gradWeight", "gradBias"] as const) {
      assertAclnnError(() => layerNormBackward({ ...a, out: { [name]: null } }), NULLPTR, name);
    }
    // Masked off: null is fine, and the output is not produced.
    const r = layerNormBackward({
      ...a,
      outputMask: [true, false, true],
      out: { gradWeight: null },
    });
    assert.equal(r.gradWeight, null);
  },
);

forEachBackend("layerNormBackward: dtype and shape rules are 161002 naming the argument", (ctx) => {
  const a = valid(ctx.device);
  const d = ctx.device;
  const as = (t: Tensor, dt: DType) => on(Tensor.fromArray(t.toFloat64Array(), t.shape, dt), d);
  assertAclnnError(() => layerNormBackward({ ...a, mean: as(a.mean!, "int32") }), INVALID, "mean");
  assertAclnnError(
    () => layerNormBackward({ ...a, input: as(a.input!, "float16") }),
    INVALID,
    "input",
  );
  assertAclnnError(
    () => layerNormBackward({ ...a, weight: as(a.weight!, "float16") }),
    INVALID,
    "weight",
  );
  assertAclnnError(() => layerNormBackward({ ...a, bias: as(a.bias!, "int32") }), INVALID, "bias");
  assertAclnnError(
    () => layerNormBackward({ ...a, out: { gradWeight: Tensor.zeros([4], "int32", d) } }),
    INVALID,
    "gradWeight",
  );
  const nine = on(Tensor.zeros([1, 1, 1, 1, 1, 1, 1, 1, 4]), d);
  assertAclnnError(() => layerNormBackward({ ...a, gradOut: nine }), INVALID, "gradOut");
  assertAclnnError(
    () => layerNormBackward({ ...a, normalizedShape: [] }),
    INVALID,
    "normalizedShape",
  );
  assertAclnnError(
    () => layerNormBackward({ ...a, normalizedShape: [5], weight: undefined, bias: undefined }),
    INVALID,
    "normalizedShape",
  );
  assertAclnnError(
    () => layerNormBackward({ ...a, weight: on(Tensor.zeros([2, 2]), d) }),
    INVALID,
    "weight",
  );
  assertAclnnError(
    () => layerNormBackward({ ...a, bias: on(Tensor.zeros([5]), d) }),
    INVALID,
    "bias",
  );
  assertAclnnError(
    () => layerNormBackward({ ...a, gradOut: on(rnd([2, 4, 4], 1), d) }),
    INVALID,
    "gradOut",
  );
  assertAclnnError(
    () => layerNormBackward({ ...a, rstd: on(Tensor.ones([6]), d) }),
    INVALID,
    "rstd",
  );
  // mean and rstd of the same shape but not one value per row.
  assertAclnnError(
    () =>
      layerNormBackward({
        ...a,
        mean: on(Tensor.zeros([2, 1]), d),
        rstd: on(Tensor.ones([2, 1]), d),
      }),
    INVALID,
    "mean",
  );
  // [6] statistics (one per row, not [A1..Ai, 1]) are accepted, as CANN checks numel only.
  const flat = layerNormBackward({
    ...a,
    mean: on(Tensor.zeros([6]), d),
    rstd: on(Tensor.ones([6]), d),
  });
  assert.equal(flat.gradInput?.numel, 24);
  assertAclnnError(
    () => layerNormBackward({ ...a, out: { gradInput: Tensor.zeros([2, 3, 5], "float32", d) } }),
    INVALID,
    "gradInput",
  );
  assertAclnnError(
    () => layerNormBackward({ ...a, out: { gradBias: Tensor.zeros([5], "float32", d) } }),
    INVALID,
    "gradBias",
  );
  assertAclnnError(
    () => layerNormBackward({ ...a, out: { gradInput: a.gradOut! } }),
    INVALID,
    "gradInput",
  );
});

/**
 * A gradWeight/gradBias of prod(normalizedShape) elements but another shape: CANN's ViewCopy of
 * the result fails, its status is ignored (aclnn_layer_norm_backward.cpp:359-362, 413-415), and
 * CANN returns success with that output unwritten, so this package refuses the call (161002).
 * One normalized element copies to any one-element shape; without rows CANN fills any shape.
 */
forEachBackend(
  "layerNormBackward: gradWeight/gradBias of another shape than normalizedShape",
  (ctx) => {
    const d = ctx.device;
    const a: LayerNormBackwardArgs = {
      ...valid(d),
      normalizedShape: [3, 4],
      mean: on(Tensor.zeros([2, 1, 1]), d),
      rstd: on(Tensor.ones([2, 1, 1]), d),
      weight: undefined,
      bias: undefined,
    };
    for (const [name, shape] of [["gradWeight", [12]], ["gradBias", [4, 3]]] as const) {
      const e = assertAclnnError(
        () => layerNormBackward({ ...a, out: { [name]: Tensor.zeros(shape, "float32", d) } }),
        INVALID,
        name,
      );
      assert.match(e.message, /must have normalizedShape's shape \[3, 4\]/);
    }
    layerNormBackward({ ...a, out: { gradWeight: Tensor.zeros([3, 4], "float32", d) } });
    // No rows: CANN zero-fills the given gradWeight, whatever its shape.
    const none = layerNormBackward({
      ...a,
      gradOut: on(Tensor.zeros([0, 3, 4]), d),
      input: on(Tensor.zeros([0, 3, 4]), d),
      mean: on(Tensor.zeros([0]), d),
      rstd: on(Tensor.zeros([0]), d),
      out: { gradWeight: Tensor.full([12], 7, "float32", d) },
    });
    assert.deepEqual(none.gradWeight?.toArray(), new Array(12).fill(0));
    // One normalized element: a [1, 1] gradWeight receives the [1] result.
    const [dy, x] = [rnd([2, 1], 24), rnd([2, 1], 25)];
    const [mean, rstd] = [rnd([2, 1], 26), rnd([2, 1], 27, "float32", 0.5, 2)];
    const one = layerNormBackward({
      gradOut: on(dy, d),
      input: on(x, d),
      normalizedShape: [1],
      mean: on(mean, d),
      rstd: on(rstd, d),
      outputMask: [false, true, false],
      out: { gradWeight: Tensor.zeros([1, 1], "float32", d) },
    });
    const [dyv, xv, mv, rv] = [dy, x, mean, rstd].map((t) => [...t.toFloat64Array()]);
    const e = layerNormBackward64(dyv, xv, mv, rv, 2, 1);
    assertClose(one.gradWeight!, e.gradWeight, undefined, `${ctx.label} gradWeight [1, 1]`);
  },
);

forEachBackend("layerNormBackward: products and bfloat16 per chip", (ctx) => {
  const d = ctx.device;
  const args = (dtype: DType): LayerNormBackwardArgs => ({
    gradOut: on(rnd([2, 8], 30, dtype), d),
    input: on(rnd([2, 8], 31, dtype), d),
    normalizedShape: [8],
    mean: on(Tensor.zeros([2, 1]), d),
    rstd: on(Tensor.ones([2, 1]), d),
  });
  if (!chipAccepts(ctx.soc, "aclnnLayerNormBackward", ["float32"])) {
    assertChipRefuses(ctx, () => layerNormBackward(args("float32")), "device");
    return;
  }
  assert.ok(layerNormBackward(args("float16")).gradInput);
  if (chipAccepts(ctx.soc, "aclnnLayerNormBackward", ["bfloat16"])) {
    assert.ok(layerNormBackward(args("bfloat16")).gradInput);
  } else {
    assertChipRefuses(ctx, () => layerNormBackward(args("bfloat16")), "gradOut");
  }
}, { cpu: false, socs: ["Ascend910A", "Ascend310P3", "Ascend310B1", "Ascend910_9391"] });
