/**
 * Conformance cases of the LayerNorm / RMSNorm operators, from the sources that define them:
 * the examples of CANN's documentation (hicann/ops-nn e5c3fa9, `norm/<op>/examples/`) with the
 * values the documented formulas give, and the cases of torch_npu's own tests (Ascend/op-plugin
 * 517f2e7, `test/test_base_ops/`, `test/test_custom_ops/`: their shapes, value ranges, dtypes
 * and tolerances, with fewer rows where a case holds millions of elements). Each runs on the
 * CPU backend and on the software CANN, against the float64 reference.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  addRmsNorm,
  layerNorm,
  layerNormBackward,
  rmsNorm,
  rmsNormGrad,
  Tensor,
} from "../../mod.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { assertClose } from "../helpers/assert.ts";
import { forEachBackend, on } from "../helpers/backends.ts";
import {
  layerNorm as layerNorm64,
  layerNormBackward as layerNormBackward64,
  rmsNorm as rmsNorm64,
  rmsNormBackward as rmsNormBackward64,
} from "../oracle/row_norms.ts";
import { toleranceFor } from "../helpers/tolerance.ts";

const f64 = (t: Tensor) => [...t.toFloat64Array()];
const uniform = (
  shape: number[],
  seed: number,
  low: number,
  high: number,
  dtype: DType = "float32",
) => Tensor.random(shape, { seed, low, high, dtype });

// ---- CANN's examples ------------------------------------------------------------------------

forEachBackend("conformance: aclnnLayerNorm example (x = 2 everywhere, [1, 2, 32])", (ctx) => {
  // norm/layer_norm_v4/examples/test_aclnn_layer_norm_v4.cpp: x [1, 2, 32] of 2.0, weight 1,
  // bias 0, normalizedShape [32], eps 1e-5, mean/rstd [1, 2, 1].
  const d = ctx.device;
  const r = layerNorm({
    input: on(Tensor.full([1, 2, 32], 2), d),
    normalizedShape: [32],
    weight: on(Tensor.ones([32]), d),
    bias: on(Tensor.zeros([32]), d),
    eps: 1e-5,
    out: {
      mean: Tensor.zeros([1, 2, 1], "float32", d),
      rstd: Tensor.zeros([1, 2, 1], "float32", d),
    },
  });
  assert.deepEqual(r.output.toArray(), new Array(64).fill(0));
  assert.deepEqual(r.mean.toArray(), [2, 2]);
  assertClose(r.rstd, [1 / Math.sqrt(1e-5), 1 / Math.sqrt(1e-5)], undefined, "rstd = 1/sqrt(eps)");
});

forEachBackend(
  "conformance: aclnnLayerNormBackward example ([2, 2], given mean and rstd)",
  (ctx) => {
    // norm/layer_norm_grad_v3/examples/test_aclnn_layer_norm_grad_v3.cpp: dy = x = {2, 3, 4, 5}
    // as [2, 2], normalizedShape [2], mean {2, 3} and rstd {4, 5} as [2, 1], weight {1, 1},
    // bias {0, 0}, outputMask all true. By the documented formulas (by hand): row 0 xhat {0, 4},
    // row 1 xhat {5, 10}.
    const d = ctx.device;
    const x = on(Tensor.fromArray([2, 3, 4, 5], [2, 2]), d);
    const r = layerNormBackward({
      gradOut: x,
      input: x,
      normalizedShape: [2],
      mean: on(Tensor.fromArray([2, 3], [2, 1]), d),
      rstd: on(Tensor.fromArray([4, 5], [2, 1]), d),
      weight: on(Tensor.ones([2]), d),
      bias: on(Tensor.zeros([2]), d),
      outputMask: [true, true, true],
    });
    assertClose(r.gradInput, [-2, -94, -877.5, -1747.5], undefined, "gradInput");
    assertClose(r.gradWeight, [20, 62], undefined, "gradWeight");
    assertClose(r.gradBias, [6, 8], undefined, "gradBias");
  },
);

forEachBackend(
  "conformance: aclnnRmsNorm, aclnnRmsNormGrad and aclnnAddRmsNorm examples",
  (ctx) => {
    const d = ctx.device;
    const row = [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7];
    // norm/rms_norm/examples/test_aclnn_rms_norm.cpp: x [2, 16] = row twice, gamma = row,
    // epsilon 1e-6, rstd [2, 1]. mean(x^2) = 17.5 in both rows.
    const rs = 1 / Math.sqrt(17.5 + 1e-6);
    const r = rmsNorm({
      x: on(Tensor.fromArray([...row, ...row], [2, 16]), d),
      gamma: on(Tensor.fromArray(row, [16]), d),
      epsilon: 1e-6,
    });
    assertClose(r.rstd, [rs, rs], undefined, "rmsNorm rstd");
    assertClose(r.y, [...row, ...row].map((v) => v * v * rs), undefined, "rmsNorm y");
    // norm/add_rms_norm/examples/test_aclnn_add_rms_norm.cpp: x1 = x2 = row twice, gamma = row:
    // x = 2 * row, mean(x^2) = 70.
    const ars = 1 / Math.sqrt(70 + 1e-6);
    const a = addRmsNorm({
      x1: on(Tensor.fromArray([...row, ...row], [2, 16]), d),
      x2: on(Tensor.fromArray([...row, ...row], [2, 16]), d),
      gamma: on(Tensor.fromArray(row, [16]), d),
      epsilon: 1e-6,
    });
    assert.deepEqual(a.x.toArray(), [...row, ...row].map((v) => 2 * v));
    assertClose(a.rstd, [ars, ars], undefined, "addRmsNorm rstd");
    assertClose(a.y, [...row, ...row].map((v) => 2 * v * ars * v), undefined, "addRmsNorm y");
    // norm/rms_norm_grad/examples/test_aclnn_rms_norm_grad.cpp: dy = x = 1..32 as [2, 1, 16],
    // rstd {1, 2} as [2], gamma 1..16.
    const v = Array.from({ length: 32 }, (_, i) => i + 1);
    const g = v.slice(0, 16);
    const x = on(Tensor.fromArray(v, [2, 1, 16]), d);
    const b = rmsNormGrad({
      dy: x,
      x,
      rstd: on(Tensor.fromArray([1, 2], [2]), d),
      gamma: on(Tensor.fromArray(g, [16]), d),
    });
    const e = rmsNormBackward64(v, v, [1, 2], g, 2, 16);
    assertClose(b.dx, e.dx, undefined, "rmsNormGrad dx");
    assertClose(b.dgamma, e.dgamma, undefined, "rmsNormGrad dgamma");
    assert.equal(b.dgamma.toArray()[0], 1 * 1 * 1 + 17 * 17 * 2);
  },
);

// ---- torch_npu's tests ----------------------------------------------------------------------

forEachBackend("conformance: torch_npu test_layer_norm shapes (normalized = size()[1:])", (ctx) => {
  // test/test_base_ops/test_layer_norm.py test_layer_norm_shape_format and
  // test_layer_norm_float16_format: nn.LayerNorm(input.size()[1:]) (weight 1, bias 0), inputs
  // uniform in [1, 100) (float32) and [1, 10) (float16); (256, 2048, 7, 7) as (2, 2048, 7, 7).
  const shapes = [[64, 10], [2, 2048, 7, 7], [32, 1, 3, 3], [10, 128], [46, 16], [2, 2, 2], [
    3,
    4,
    5,
    6,
  ]];
  for (const [dtype, high] of [["float32", 100], ["float16", 10]] as const) {
    for (const [i, shape] of shapes.entries()) {
      const x = uniform(shape, 100 + i, 1, high, dtype);
      const normalizedShape = shape.slice(1);
      const cols = normalizedShape.reduce((a, b) => a * b, 1);
      const r = layerNorm({
        input: on(x, ctx.device),
        normalizedShape,
        weight: on(Tensor.ones(normalizedShape, dtype), ctx.device),
        bias: on(Tensor.zeros(normalizedShape, dtype), ctx.device),
      });
      const e = layerNorm64(f64(x), shape[0], cols, 1e-5);
      assertClose(r.output, e.y, toleranceFor(dtype), `${ctx.label} ${dtype} ${shape}`);
    }
  }
});

forEachBackend(
  "conformance: torch_npu test_layer_norm_case_in_trocr (float16 [10, 1, 1024])",
  (ctx) => {
    // test_layer_norm.py test_layer_norm_case_in_trocr: input uniform(-22, 66), weight
    // uniform(0.5, 1.1), bias uniform(-0.1, 0.1), all half; eps 1e-5; the CPU float32 result cast
    // to half is the reference.
    const d = ctx.device;
    const x = uniform([10, 1, 1024], 200, -22, 66, "float16");
    const w = uniform([1024], 201, 0.5, 1.1, "float16");
    const b = uniform([1024], 202, -0.1, 0.1, "float16");
    const r = layerNorm({
      input: on(x, d),
      normalizedShape: [1024],
      weight: on(w, d),
      bias: on(b, d),
    });
    const e = layerNorm64(f64(x), 10, 1024, 1e-5, f64(w), f64(b));
    assertClose(r.output, e.y, toleranceFor("float16"), `${ctx.label} trocr`);
  },
);

forEachBackend(
  "conformance: torch_npu test_layer_norm_backward (grad = ones, default affine)",
  (ctx) => {
    // test/test_base_ops/test_layer_norm_backward.py test_layernorm_shape_format: normalized over
    // the last dim (item[2][3]), nn.LayerNorm's weight 1 and bias 0, gradient ones, inputs
    // uniform in [1, 100); float16 inputs against the float32 CPU gradients.
    const d = ctx.device;
    const cases: [DType, number[]][] = [
      ["float32", [1, 32, 11, 112]],
      ["float16", [1, 67, 7, 7]],
      ["float16", [1, 5, 56, 56]],
      ["float16", [1, 24, 28, 28]],
    ];
    for (const [i, [dtype, shape]] of cases.entries()) {
      const x = uniform(shape, 300 + i, 1, 100, dtype);
      const cols = shape[3];
      const rows = x.numel / cols;
      const weight = Tensor.ones([cols], dtype);
      const f = layerNorm({ input: on(x, d), normalizedShape: [cols], weight: on(weight, d) });
      const r = layerNormBackward({
        gradOut: on(Tensor.ones(shape, dtype), d),
        input: on(x, d),
        normalizedShape: [cols],
        mean: f.mean,
        rstd: f.rstd,
        weight: on(weight, d),
      });
      const exact = layerNorm64(f64(x), rows, cols, 1e-5);
      const e = layerNormBackward64(
        new Array(x.numel).fill(1),
        f64(x),
        exact.mean,
        exact.rstd,
        rows,
        cols,
      );
      // torch_npu asserts 1e-3 on the parameter gradients ("Insufficient precision").
      const what = `${ctx.label} ${dtype} ${shape}`;
      assertClose(r.gradInput, e.gradInput, toleranceFor(dtype), `${what} gradInput`);
      assertClose(r.gradWeight, e.gradWeight, toleranceFor(dtype), `${what} gradWeight`);
      assertClose(r.gradBias, e.gradBias, undefined, `${what} gradBias`);
    }
  },
);

forEachBackend("conformance: torch_npu npu_rms_norm, its backward and npu_add_rms_norm", (ctx) => {
  const d = ctx.device;
  // test/test_custom_ops/test_npu_rms_norm.py: x uniform(0, 100) [1024, 12288] (here 4 rows),
  // gamma uniform(0, 100) [12288], float32, and float16 x with float32 gamma (mix dtype);
  // epsilon 1e-6.
  for (const dtype of ["float32", "float16"] as const) {
    const x = uniform([4, 12288], 400, 0, 100, dtype);
    const g = uniform([12288], 401, 0, 100);
    const r = rmsNorm({ x: on(x, d), gamma: on(g, d) });
    const e = rmsNorm64(f64(x), 4, 12288, 1e-6, f64(g));
    assertClose(r.y, e.y, toleranceFor(dtype), `${ctx.label} npu_rms_norm ${dtype} y`);
    assertClose(r.rstd, e.rstd, undefined, `${ctx.label} npu_rms_norm ${dtype} rstd`);
  }
  // test_npu_rms_norm_backward.py: x, gamma, grad uniform(0, 100), [10, 128] float32.
  const x = uniform([10, 128], 410, 0, 100);
  const g = uniform([128], 411, 0, 100);
  const dy = uniform([10, 128], 412, 0, 100);
  const { rstd } = rmsNorm({ x: on(x, d), gamma: on(g, d) });
  const b = rmsNormGrad({ dy: on(dy, d), x: on(x, d), rstd, gamma: on(g, d) });
  const e = rmsNormBackward64(
    f64(dy),
    f64(x),
    rmsNorm64(f64(x), 10, 128, 1e-6, f64(g)).rstd,
    f64(g),
    10,
    128,
  );
  assertClose(b.dx, e.dx, undefined, `${ctx.label} npu_rms_norm backward dx`);
  assertClose(b.dgamma, e.dgamma, undefined, `${ctx.label} npu_rms_norm backward dgamma`);
  // test_npu_add_rms_norm.py: x1, x2 uniform(0, 100) [1024, 12288] (here 4 rows), gamma [12288],
  // float32 (rtol 1e-4) and float16 (1e-3); epsilon 1e-6.
  for (const dtype of ["float32", "float16"] as const) {
    const x1 = uniform([4, 12288], 420, 0, 100, dtype);
    const x2 = uniform([4, 12288], 421, 0, 100, dtype);
    const gamma = uniform([12288], 422, 0, 100, dtype);
    const a = addRmsNorm({ x1: on(x1, d), x2: on(x2, d), gamma: on(gamma, d) });
    const xs = f64(a.x);
    const ea = rmsNorm64(xs, 4, 12288, 1e-6, f64(gamma));
    const b2 = f64(x2);
    assertClose(a.x, f64(x1).map((v, i) => v + b2[i]), toleranceFor(dtype), "x");
    assertClose(a.rstd, ea.rstd, undefined, `${ctx.label} npu_add_rms_norm ${dtype} rstd`);
    assertClose(a.y, ea.y, { rtol: 2e-3, atol: 2e-3 }, `${ctx.label} npu_add_rms_norm ${dtype} y`);
  }
});
