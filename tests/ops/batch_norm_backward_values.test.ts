/**
 * batchNormBackward's values: training and evaluation against the float64 formulas and against
 * finite differences of the forward, the defaults (eps, outputMask, absent tensors),
 * float16/bfloat16 data with same-dtype or float32 statistics, ranks 2 and 8, non-contiguous and
 * channels-last inputs, out tensors (strided views too), empty inputs, NaN and Inf.
 *
 * @module
 */

import assert from "node:assert/strict";
import { batchNormBackward } from "../../src/ops/batch_norm_backward.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { rnd } from "../helpers/op_inputs.ts";
import { EXACT, toleranceFor } from "../helpers/tolerance.ts";
import { batchNormForward64, dot, numericalGradient } from "../oracle/mod.ts";
import { expected, problem } from "../fixtures/batch_norm_backward_problem.ts";

Deno.test("batchNormBackward: training and eval match the float64 formulas", () => {
  const p = problem([3, 4, 5]);
  for (const training of [true, false]) {
    const r = batchNormBackward({ ...p, training, eps: 1e-3 });
    const e = expected(p, training, 1e-3);
    const tol = toleranceFor("float32");
    assertClose(r.gradInput!, e.gi, tol, `gradInput training=${training}`);
    assertClose(r.gradWeight!, e.gw, tol, `gradWeight training=${training}`);
    assertClose(r.gradBias!, e.gb, tol, `gradBias training=${training}`);
    assert.equal(r.gradInput!.dtype, "float32");
    assert.deepEqual(r.gradInput!.shape, [3, 4, 5]);
  }
});

Deno.test("batchNormBackward: eps defaults to 1e-5 and outputMask to all true", () => {
  const p = problem([2, 3, 4]);
  p.runningVar = Tensor.fromArray([1e-5, 3e-5, 0], [3]);
  const r = batchNormBackward({ ...p, training: false });
  assertClose(r.gradInput!, expected(p, false, 1e-5).gi, toleranceFor("float32"));
  assert.ok(r.gradWeight && r.gradBias);
});

Deno.test("batchNormBackward: missing tensors default to weight 1, mean 0, var 1, invstd 1", () => {
  const p = problem([2, 3, 4]);
  const C = 3;
  const t = batchNormBackward({ gradOut: p.gradOut, input: p.input, training: true });
  const tExplicit = batchNormBackward({
    gradOut: p.gradOut,
    input: p.input,
    weight: Tensor.ones([C]),
    saveMean: Tensor.zeros([C]),
    saveInvstd: Tensor.ones([C]),
    training: true,
  });
  const e = batchNormBackward({ gradOut: p.gradOut, input: p.input, training: false, eps: 1e-12 });
  const eExplicit = batchNormBackward({
    gradOut: p.gradOut,
    input: p.input,
    weight: Tensor.ones([C]),
    runningMean: Tensor.zeros([C]),
    runningVar: Tensor.ones([C]),
    training: false,
    eps: 1e-12,
  });
  for (const [a, b] of [[t, tExplicit], [e, eExplicit]]) {
    assert.deepEqual(a.gradInput!.toArray(), b.gradInput!.toArray());
    assert.deepEqual(a.gradWeight!.toArray(), b.gradWeight!.toArray());
    assert.deepEqual(a.gradBias!.toArray(), b.gradBias!.toArray());
  }
  // Eval with the defaults is gradOut itself (scale 1).
  assertClose(e.gradInput!, p.gradOut, EXACT);
});

Deno.test("batchNormBackward: training gradients equal finite differences of the forward", () => {
  const shape = [3, 2, 4];
  const eps = 1e-3;
  const x = rnd(shape, 11, "float32", -2, 2);
  const dy = rnd(shape, 12);
  const w = rnd([2], 13, "float32", 0.5, 1.5);
  const b = rnd([2], 14);
  const x64 = x.toFloat64Array();
  const w64 = w.toFloat64Array();
  const b64 = b.toFloat64Array();
  const dy64 = dy.toFloat64Array();
  const fwd = batchNormForward64(x64, shape, w64, b64, eps);
  const r = batchNormBackward({
    gradOut: dy,
    input: x,
    weight: w,
    saveMean: Tensor.fromArray(fwd.mean, [2]),
    saveInvstd: Tensor.fromArray(fwd.invstd, [2]),
    training: true,
    eps,
  });
  // The forward recomputes the batch statistics as x moves: the training-mode gradient.
  const gx = numericalGradient(
    (v) => dot(dy64, batchNormForward64(v, shape, w64, b64, eps).y),
    x64,
  );
  const gw = numericalGradient(
    (v) => dot(dy64, batchNormForward64(x64, shape, v, b64, eps).y),
    w64,
  );
  const gb = numericalGradient(
    (v) => dot(dy64, batchNormForward64(x64, shape, w64, v, eps).y),
    b64,
  );
  const tol = toleranceFor("float32");
  assertClose(r.gradInput!, gx, tol, "gradInput vs finite differences");
  assertClose(r.gradWeight!, gw, tol, "gradWeight vs finite differences");
  assertClose(r.gradBias!, gb, tol, "gradBias vs finite differences");
});

Deno.test("batchNormBackward: eval gradients equal finite differences with fixed stats", () => {
  const shape = [2, 3, 5];
  const eps = 1e-5;
  const x = rnd(shape, 21, "float32", -2, 2);
  const dy = rnd(shape, 22);
  const w = rnd([3], 23, "float32", 0.5, 1.5);
  const rm = rnd([3], 24);
  const rv = rnd([3], 25, "float32", 0.5, 2);
  const [x64, w64, dy64] = [x.toFloat64Array(), w.toFloat64Array(), dy.toFloat64Array()];
  const stats = { mean: rm.toFloat64Array(), variance: rv.toFloat64Array() };
  const b64 = new Float64Array(3);
  const r = batchNormBackward({
    gradOut: dy,
    input: x,
    weight: w,
    runningMean: rm,
    runningVar: rv,
    training: false,
    eps,
  });
  const loss = (xv: Float64Array, wv: Float64Array, bv: Float64Array) =>
    dot(dy64, batchNormForward64(xv, shape, wv, bv, eps, stats).y);
  const tol = toleranceFor("float32");
  assertClose(r.gradInput!, numericalGradient((v) => loss(v, w64, b64), x64), tol);
  assertClose(r.gradWeight!, numericalGradient((v) => loss(x64, v, b64), w64), tol);
  assertClose(r.gradBias!, numericalGradient((v) => loss(x64, w64, v), b64), tol);
});

Deno.test("batchNormBackward: float16/bfloat16, same-dtype and mixed with float32 stats", () => {
  for (const dtype of ["float16", "bfloat16"] as const) {
    for (const statsDType of [dtype, "float32"] as const) {
      const p = problem([4, 3, 6], dtype, statsDType);
      for (const training of [true, false]) {
        const r = batchNormBackward({ ...p, training });
        const e = expected(p, training);
        const what = `${dtype}/${statsDType} training=${training}`;
        assert.equal(r.gradInput!.dtype, dtype, what);
        assert.equal(r.gradWeight!.dtype, statsDType, what);
        assert.equal(r.gradBias!.dtype, statsDType, what);
        assertClose(r.gradInput!, e.gi, toleranceFor(dtype), `gradInput ${what}`);
        assertClose(r.gradWeight!, e.gw, toleranceFor(statsDType), `gradWeight ${what}`);
        assertClose(r.gradBias!, e.gb, toleranceFor(statsDType), `gradBias ${what}`);
      }
    }
  }
  // Without weight, gradWeight/gradBias take input's dtype; float32 outputs are also legal.
  const p = problem([2, 3, 4], "bfloat16", "float32");
  const r = batchNormBackward({ gradOut: p.gradOut, input: p.input, training: true });
  assert.equal(r.gradWeight!.dtype, "bfloat16");
  const f32 = batchNormBackward({
    ...p,
    weight: rnd([3], 3, "bfloat16", 0.5, 1.5),
    training: true,
    out: { gradWeight: Tensor.zeros([3]), gradBias: Tensor.zeros([3]) },
  });
  assert.equal(f32.gradWeight!.dtype, "float32");
});

Deno.test("batchNormBackward: rank 2 and rank 8", () => {
  for (const shape of [[6, 4], [2, 3, 1, 2, 1, 2, 1, 2]]) {
    const p = problem(shape);
    for (const training of [true, false]) {
      const r = batchNormBackward({ ...p, training });
      const e = expected(p, training);
      assert.deepEqual(r.gradInput!.shape, shape);
      assertClose(r.gradInput!, e.gi, toleranceFor("float32"), `rank ${shape.length}`);
      assertClose(r.gradWeight!, e.gw, toleranceFor("float32"), `rank ${shape.length}`);
      assertClose(r.gradBias!, e.gb, toleranceFor("float32"), `rank ${shape.length}`);
    }
  }
});

Deno.test("batchNormBackward: non-contiguous and channels-last inputs", () => {
  // Channels-last: a contiguous NHWC tensor viewed as NCHW.
  const nhwc = (seed: number, low = -1, high = 1) =>
    Tensor.random([2, 3, 4, 5], { seed, low, high }).permute([0, 3, 1, 2]);
  const p = problem([2, 5, 3, 4]);
  const cl = { ...p, gradOut: nhwc(31), input: nhwc(32, -2, 2) };
  assert.ok(!cl.input.isContiguous());
  // Permuted and sliced views: (C, N, L) transposed, and every other element of L.
  const sliced = {
    ...problem([3, 2, 4]),
    gradOut: rnd([2, 3, 8], 33).transpose(0, 1).slice(2, 0, 8, 2),
    input: rnd([3, 2, 8], 34).slice(2, 1, 8, 2),
  };
  const strided = {
    ...sliced,
    weight: rnd([4], 35, "float32", 0.5, 1.5).slice(0, 0, 4, 2),
    saveMean: rnd([2, 2], 36).permute([1, 0]).slice(0, 1, 2).reshape([2]),
  };
  for (const args of [cl, sliced, strided]) {
    for (const training of [true, false]) {
      const r = batchNormBackward({ ...args, training });
      const e = expected(args, training);
      // An allocated gradInput keeps the input's memory layout (PyTorch's preserve_format):
      // channels-last stays channels-last; a sliced row-major view gives a contiguous one.
      if (args === cl) assert.deepEqual(r.gradInput!.strides, cl.input.strides, "channels-last");
      else assert.ok(r.gradInput!.isContiguous(), "row-major order");
      assertClose(r.gradInput!, e.gi, toleranceFor("float32"));
      assertClose(r.gradWeight!, e.gw, toleranceFor("float32"));
      assertClose(r.gradBias!, e.gb, toleranceFor("float32"));
    }
  }
});

Deno.test("batchNormBackward: out tensors, including non-contiguous views", () => {
  const p = problem([2, 3, 4], "float16", "float32");
  const giStorage = Tensor.full([4, 3, 2], 7, "float16");
  const gradInput = giStorage.permute([2, 1, 0]); // [2, 3, 4], not contiguous
  const gwStorage = Tensor.full([6], 7);
  const gradWeight = gwStorage.slice(0, 0, 6, 2); // every other element
  const gradBias = Tensor.full([3], 7);
  const r = batchNormBackward({ ...p, training: true, out: { gradInput, gradWeight, gradBias } });
  assert.equal(r.gradInput, gradInput);
  assert.equal(r.gradWeight, gradWeight);
  assert.equal(r.gradBias, gradBias);
  const e = expected(p, true);
  assertClose(gradInput, e.gi, toleranceFor("float16"));
  assertClose(gradWeight, e.gw, toleranceFor("float32"));
  assertClose(gradBias, e.gb, toleranceFor("float32"));
  // The elements between the strided view's are untouched.
  assert.deepEqual(gwStorage.slice(0, 1, 6, 2).toArray(), [7, 7, 7]);
  // Only some outputs preallocated: the rest are allocated.
  const some = batchNormBackward({ ...p, training: false, out: { gradBias } });
  assert.equal(some.gradBias, gradBias);
  assert.equal(some.gradWeight!.dtype, "float32");
  assert.equal(some.gradInput!.dtype, "float16");
});

Deno.test("batchNormBackward: empty input gives empty gradInput and zero-filled sums", () => {
  const p = problem([2, 3, 4]);
  const empty = { gradOut: Tensor.zeros([0, 3, 4]), input: Tensor.zeros([0, 3, 4]) };
  for (const training of [true, false]) {
    const r = batchNormBackward({ ...p, ...empty, training });
    assert.deepEqual(r.gradInput!.shape, [0, 3, 4]);
    assert.deepEqual(r.gradWeight!.toArray(), [0, 0, 0]);
    assert.deepEqual(r.gradBias!.toArray(), [0, 0, 0]);
  }
  // Preallocated outputs are overwritten with zeros, even with infinite invstd.
  const gradWeight = Tensor.full([3], 5);
  const gradBias = Tensor.full([3], 5);
  batchNormBackward({
    ...p,
    ...empty,
    saveInvstd: Tensor.full([3], Infinity),
    training: true,
    out: { gradWeight, gradBias },
  });
  assert.deepEqual(gradWeight.toArray(), [0, 0, 0]);
  assert.deepEqual(gradBias.toArray(), [0, 0, 0]);
  // An empty spatial dim behaves the same.
  const r = batchNormBackward({
    gradOut: Tensor.zeros([2, 3, 0]),
    input: Tensor.zeros([2, 3, 0]),
    training: true,
  });
  assert.deepEqual(r.gradInput!.shape, [2, 3, 0]);
  assert.deepEqual(r.gradBias!.toArray(), [0, 0, 0]);
});

Deno.test("batchNormBackward: NaN and Inf propagate as the formulas say", () => {
  const p = problem([2, 2, 3]);
  const x = p.input.toFloat64Array();
  x[0] = NaN; // channel 0
  const dy = p.gradOut.toFloat64Array();
  dy[4] = Infinity; // channel 1
  const q = {
    ...p,
    input: Tensor.fromArray(x, [2, 2, 3]),
    gradOut: Tensor.fromArray(dy, [2, 2, 3]),
  };
  for (const training of [true, false]) {
    const r = batchNormBackward({ ...q, training });
    const e = expected(q, training);
    assertClose(r.gradInput!, e.gi, toleranceFor("float32"), `training=${training}`);
    assertClose(r.gradWeight!, e.gw, toleranceFor("float32"), `training=${training}`);
    assertClose(r.gradBias!, e.gb, toleranceFor("float32"), `training=${training}`);
    const gw = r.gradWeight!.toArray();
    assert.ok(Number.isNaN(gw[0]));
    assert.equal(r.gradBias!.toArray()[1], Infinity);
    if (training) assert.ok(r.gradInput!.toArray().slice(0, 3).every(Number.isNaN));
  }
});
