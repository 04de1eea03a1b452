/**
 * The InstanceNorm module beyond the torch fixture (tests/nn/torch_modules.test.ts): PyTorch's
 * defaults, train/eval with and without running statistics (eval on the running statistics is
 * BatchNorm's inference mode; without them both modes use the planes' statistics), the
 * gradient against central differences of the float64 forward, float16 data, the refused
 * inputs (unbatched, one element per plane, another dtype) and options (momentum null), and on
 * the software CANN: the 310P runs the forward (its backward needs aclnnGroupNormBackward, which
 * the 310P lacks: refused naming the SoC), an Atlas A2 refuses the forward naming the SoC.
 *
 * @module
 */

import assert from "node:assert/strict";
import { InstanceNorm } from "../../src/nn/mod.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, forEachBackend, on } from "../helpers/backends.ts";
import { FINITE_DIFFERENCES, toleranceFor } from "../helpers/tolerance.ts";
import { dot, numericalGradient } from "../oracle/finite_differences.ts";
import { instanceNorm64 } from "../oracle/instance_norm.ts";

const INVALID = 161002;

/** y of InstanceNorm over [N, C, S] (as [N, C, S, 1]) in float64. */
function forward64(
  x: ArrayLike<number>,
  shape: number[],
  w?: ArrayLike<number>,
  b?: ArrayLike<number>,
) {
  const [N, C] = shape;
  const S = x.length / (N * C);
  const gamma = w ?? new Array(C).fill(1);
  const beta = b ?? new Array(C).fill(0);
  return instanceNorm64(x, [N, C, S, 1], false, gamma, beta, Math.fround(1e-5));
}

Deno.test("InstanceNorm: PyTorch's defaults", () => {
  using m = new InstanceNorm({ numFeatures: 3 });
  assert.deepEqual(
    [m.eps, m.momentum, m.affine, m.trackRunningStats, m.weight, m.runningMean],
    [1e-5, 0.1, false, false, null, null],
  );
  assert.equal(m.numBatchesTracked, null);
  const e = assertAclnnError(
    () => new InstanceNorm({ numFeatures: 3, momentum: null } as never),
    INVALID,
    "momentum",
  );
  assert.match(e.message, /no cumulative average/);
});

forEachBackend("InstanceNorm: forward and gradients against the float64 oracle", (ctx) => {
  const shape = [2, 3, 5];
  const x = Tensor.random(shape, { seed: 1, low: -2, high: 3 });
  const dy = Tensor.random(shape, { seed: 2 });
  using m = new InstanceNorm({ numFeatures: 3, affine: true, device: ctx.device });
  m.weight!.copy_([0.5, 1.5, 2]);
  m.bias!.copy_([0.25, -1, 0]);
  const w = [0.5, 1.5, 2];
  const b = [0.25, -1, 0];
  using y = m.forward(on(x, ctx.device));
  const xs = x.toFloat64Array();
  assertClose(y, forward64(xs, shape, w, b).y, undefined, `${ctx.label} y`);
  using g = m.backward(on(dy, ctx.device));
  const dys = [...dy.toFloat64Array()];
  const loss = (v: Float64Array) => dot(forward64(v, shape, w, b).y, dys);
  const gradInput = numericalGradient(loss, xs);
  const tol = { rtol: 1e-4, atol: 1e-4 }; // float32 outputs against float64 differences
  assertClose(g.gradInput, gradInput, tol, `${ctx.label} gradInput`);
  const gw = numericalGradient((v) => dot(forward64(xs, shape, v, b).y, dys), Float64Array.from(w));
  const gb = numericalGradient((v) => dot(forward64(xs, shape, w, v).y, dys), Float64Array.from(b));
  assertClose(g.gradWeight, gw, tol, `${ctx.label} gradWeight`);
  assertClose(g.gradBias, gb, tol, `${ctx.label} gradBias`);
  assert.ok(FINITE_DIFFERENCES.rtol < tol.rtol);
}, { socs: [] });

forEachBackend("InstanceNorm: train/eval with and without running statistics", (ctx) => {
  const x = on(Tensor.random([2, 3, 4, 4], { seed: 3, low: -1, high: 4 }), ctx.device);
  using plain = new InstanceNorm({ numFeatures: 3, device: ctx.device });
  using a = plain.forward(x);
  plain.backward(Tensor.ones(a.shape, "float32", ctx.device))[Symbol.dispose]();
  plain.eval();
  using b = plain.forward(x); // no running statistics: the planes' own in eval too
  assertClose(b, a.toFloat64Array(), { rtol: 0, atol: 0 }, "eval = train without tracking");

  using tracked = new InstanceNorm({ numFeatures: 3, trackRunningStats: true, device: ctx.device });
  using t = tracked.forward(x);
  tracked.backward(Tensor.ones(t.shape, "float32", ctx.device))[Symbol.dispose]();
  assert.equal(tracked.numBatchesTracked, 0, "torch's _InstanceNorm never counts");
  const rm = tracked.runningMean!.toFloat64Array();
  const rv = tracked.runningVar!.toFloat64Array();
  tracked.eval();
  using e = tracked.forward(x); // BatchNorm's inference mode on the running statistics
  const xs = x.toFloat64Array();
  const expected = Array.from(xs, (v, i) => {
    const c = Math.floor(i / 16) % 3;
    return (v - rm[c]) / Math.sqrt(rv[c] + Math.fround(1e-5));
  });
  assertClose(e, expected, undefined, `${ctx.label} eval on the running statistics`);
  using ge = tracked.backward(Tensor.ones(e.shape, "float32", ctx.device));
  const inv = Array.from(rv, (v) => 1 / Math.sqrt(v + Math.fround(1e-5)));
  const gi = Array.from(xs, (_, i) => inv[Math.floor(i / 16) % 3]);
  assertClose(ge.gradInput, gi, undefined, `${ctx.label} eval gradInput = invstd`);
}, { socs: [] });

forEachBackend("InstanceNorm: float16 data with a float16 module", (ctx) => {
  const x = Tensor.random([2, 4, 6], { seed: 4, dtype: "float16", low: -2, high: 2 });
  using m = new InstanceNorm({ numFeatures: 4, affine: true, dtype: "float16" });
  using y = m.forward(on(x, ctx.device));
  assert.equal(y.dtype, "float16");
  assertClose(y, forward64(x.toFloat64Array(), [2, 4, 6]).y, toleranceFor("float16"), "y");
  using g = m.backward(Tensor.ones([2, 4, 6], "float16"));
  assert.equal(g.gradWeight!.dtype, "float16");
  assertClose(g.gradBias, [12, 12, 12, 12], toleranceFor("float16"), "gradBias");
}, { socs: [] });

Deno.test("InstanceNorm: refused inputs name the rule", () => {
  using m = new InstanceNorm({ numFeatures: 3, affine: true });
  let e = assertAclnnError(() => m.forward(Tensor.zeros([3, 5])), INVALID, "input");
  assert.match(e.message, /must be batched/);
  e = assertAclnnError(() => m.forward(Tensor.zeros([2, 3, 1])), INVALID, "input");
  assert.match(e.message, /more than 1 spatial element/);
  e = assertAclnnError(() => m.forward(Tensor.zeros([2, 4, 5])), INVALID, "input");
  assert.match(e.message, /numFeatures \(3\)/);
  e = assertAclnnError(() => m.forward(Tensor.zeros([2, 3, 5], "float16")), INVALID, "input");
  assert.match(e.message, /module's dtype float32/);
  // A refused forward leaves no backward behind.
  assertAclnnError(() => m.backward(Tensor.zeros([2, 3, 5])), INVALID);
});

forEachBackend(
  "InstanceNorm on the NPU path: the 310P runs the forward, not the backward",
  (ctx) => {
    // C = 8 float32 channels and planes of 8: the 32 bytes the 310P kernel needs.
    const x = Tensor.random([2, 8, 2, 4], { seed: 5, low: -1, high: 2 });
    using m = new InstanceNorm({ numFeatures: 8, affine: true, device: ctx.device });
    using y = m.forward(on(x, ctx.device));
    const e = instanceNorm64(
      x.toFloat64Array(),
      [2, 8, 2, 4],
      false,
      new Array(8).fill(1),
      new Array(8).fill(0),
      Math.fround(1e-5),
    );
    assertClose(y, e.y, undefined, `${ctx.label} y`);
    // The Atlas inference series has no aclnnGroupNormBackward (soc.ts operatorSupported).
    const dy = Tensor.ones([2, 8, 2, 4], "float32", ctx.device);
    const refusal = assertChipRefuses(ctx, () => m.backward(dy), "device");
    assert.match(refusal.message, /aclnnGroupNormBackward/);
  },
  { cpu: false, socs: ["Ascend310P3"] },
);

forEachBackend("InstanceNorm on the NPU path: an Atlas A2 refuses it, naming the SoC", (ctx) => {
  const x = Tensor.random([2, 8, 2, 4], { seed: 5 });
  using m = new InstanceNorm({ numFeatures: 8, device: ctx.device });
  assertChipRefuses(ctx, () => m.forward(on(x, ctx.device)), "device");
}, { cpu: false, socs: ["Ascend910B4"] });

forEachBackend("InstanceNorm: a permuted rank-5 input's output keeps its layout", (ctx) => {
  // Stored [N, D, C, W, H], seen as [N, C, D, H, W]: the spatial dims do not merge into one
  // view, so the kernel runs on a contiguous copy; the output still takes the input's layout,
  // as every module's does (the dense and channels-last cases keep it without a copy).
  const stored = Tensor.random([2, 4, 8, 4, 2], { seed: 6, low: -1, high: 2 });
  const x = on(stored, ctx.device).permute([0, 2, 1, 4, 3]);
  using m = new InstanceNorm({ numFeatures: 8, device: ctx.device });
  using y = m.forward(x);
  assert.deepEqual(y.shape, [2, 8, 4, 2, 4]);
  assert.deepEqual(y.strides, x.strides, `${ctx.label}: the output keeps the input's layout`);
  const dense = x.toFloat64Array(); // logical order
  const e = instanceNorm64(
    dense,
    [2, 8, 32, 1],
    false,
    new Array(8).fill(1),
    new Array(8).fill(0),
    Math.fround(1e-5),
  );
  assertClose(y, e.y, undefined, `${ctx.label} y`);
}, { socs: ["Ascend310P3"] });
