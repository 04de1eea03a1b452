import assert from "node:assert/strict";
import {
  batchNormBackward,
  type BatchNormBackwardArgs,
} from "../../src/ops/batch_norm_backward.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { EXACT, toleranceFor } from "../helpers/tolerance.ts";
import {
  batchNormBackwardAt64,
  batchNormForward64,
  dot,
  invstdOf,
  numericalGradient,
} from "../oracle/mod.ts";

const NULLPTR = 161001;
const INVALID = 161002;

function rnd(shape: number[], seed: number, dtype: DType = "float32", low = -1, high = 1) {
  return Tensor.random(shape, { seed, dtype, low, high });
}

/** A complete training-mode problem with plausible stats. */
function problem(shape: number[], dtype: DType = "float32", statsDType: DType = dtype) {
  const C = shape[1];
  return {
    gradOut: rnd(shape, 1, dtype),
    input: rnd(shape, 2, dtype, -2, 3),
    weight: rnd([C], 3, statsDType, 0.5, 1.5),
    runningMean: rnd([C], 4, statsDType),
    runningVar: rnd([C], 5, statsDType, 0.5, 2),
    saveMean: rnd([C], 6, statsDType),
    saveInvstd: rnd([C], 7, statsDType, 0.5, 2),
  };
}

/** The oracle's gradients (gi, gw, gb) at the statistics the mode reads. */
function expected(p: ReturnType<typeof problem>, training: boolean, eps = 1e-5) {
  const mean = (training ? p.saveMean : p.runningMean).toFloat64Array();
  const invstd = training
    ? p.saveInvstd.toFloat64Array()
    : invstdOf(p.runningVar.toFloat64Array(), eps);
  const g = batchNormBackwardAt64(
    p.gradOut.toFloat64Array(),
    p.input.toFloat64Array(),
    p.input.shape,
    p.weight.toFloat64Array(),
    mean,
    invstd,
    training,
  );
  return { gi: g.gradInput, gw: g.gradWeight, gb: g.gradBias };
}

// ---------------------------------------------------------------------------------------------
// Errors

Deno.test("batchNormBackward: missing gradOut/input is 161001", () => {
  const p = problem([2, 3, 4]);
  assertAclnnError(
    () => batchNormBackward({ ...p, gradOut: undefined, training: true }),
    NULLPTR,
    "gradOut",
  );
  assertAclnnError(
    () => batchNormBackward({ ...p, input: null, training: true }),
    NULLPTR,
    "input",
  );
});

Deno.test("batchNormBackward: an output requested by the mask but null in out is 161001", () => {
  const p = problem([2, 3, 4]);
  for (const name of ["gradInput", "gradWeight", "gradBias"] as const) {
    assertAclnnError(
      () => batchNormBackward({ ...p, training: true, out: { [name]: null } }),
      NULLPTR,
      name,
    );
  }
  // Masked off: null is fine and the result is null.
  const r = batchNormBackward({
    ...p,
    training: true,
    outputMask: [false, true, true],
    out: { gradInput: null },
  });
  assert.equal(r.gradInput, null);
});

Deno.test("batchNormBackward: dtype rules are 161002 naming the argument", () => {
  const p = problem([2, 3, 4]);
  const i32 = (shape: number[]) => Tensor.zeros(shape, "int32");
  const cases: [Partial<BatchNormBackwardArgs>, string][] = [
    [{ gradOut: i32([2, 3, 4]) }, "gradOut"],
    [{ input: i32([2, 3, 4]) }, "input"],
    [{ input: rnd([2, 3, 4], 2, "float16") }, "input"],
    [{ weight: i32([3]) }, "weight"],
    [{ runningMean: i32([3]) }, "runningMean"],
    [{ runningVar: i32([3]) }, "runningVar"],
    [{ saveMean: i32([3]) }, "saveMean"],
    [{ saveInvstd: i32([3]) }, "saveInvstd"],
    // float32 data: per-channel tensors must be float32 too.
    [{ weight: rnd([3], 3, "float16") }, "weight"],
    [{ saveMean: rnd([3], 3, "bfloat16"), saveInvstd: rnd([3], 3, "bfloat16") }, "saveMean"],
  ];
  for (const [patch, name] of cases) {
    assertAclnnError(() => batchNormBackward({ ...p, ...patch, training: true }), INVALID, name);
  }
  // Dtypes are checked before shapes, as aclnn does.
  assertAclnnError(
    () =>
      batchNormBackward({
        ...p,
        input: rnd([2, 3, 5], 2),
        weight: i32([7]),
        training: true,
      }),
    INVALID,
    "weight",
  );
  // float16 data: stats in float16 or float32, but not bfloat16.
  const h = problem([2, 3, 4], "float16");
  assertAclnnError(
    () => batchNormBackward({ ...h, weight: rnd([3], 3, "bfloat16"), training: true }),
    INVALID,
    "weight",
  );
  // runningVar follows runningMean, saveInvstd follows saveMean.
  assertAclnnError(
    () => batchNormBackward({ ...h, runningVar: rnd([3], 5, "float32", 1, 2), training: false }),
    INVALID,
    "runningVar",
  );
  assertAclnnError(
    () => batchNormBackward({ ...h, saveInvstd: rnd([3], 5, "float32", 1, 2), training: true }),
    INVALID,
    "saveInvstd",
  );
});

Deno.test("batchNormBackward: rank and shape rules are 161002 naming the argument", () => {
  const p = problem([2, 3, 4]);
  assertAclnnError(
    () => batchNormBackward({ ...p, gradOut: rnd([24], 1), input: rnd([24], 2), training: true }),
    INVALID,
    "gradOut",
  );
  assertAclnnError(
    () => batchNormBackward({ ...p, input: rnd([2, 3, 5], 2), training: true }),
    INVALID,
    "input",
  );
  for (const name of ["weight", "runningMean", "runningVar", "saveMean", "saveInvstd"] as const) {
    assertAclnnError(
      () => batchNormBackward({ ...p, [name]: rnd([4], 9, "float32", 1, 2), training: true }),
      INVALID,
      name,
    );
  }
  // Per-channel tensors must be exactly [C], as CANN's CheckOtherShape requires: [3, 1] and
  // [1, 3] hold C = 3 elements and are still refused.
  for (
    const [name, t] of [["weight", p.weight.reshape([3, 1])], [
      "saveInvstd",
      p.saveInvstd.reshape([1, 3]),
    ]] as const
  ) {
    const e = assertAclnnError(
      () => batchNormBackward({ ...p, [name]: t, training: true }),
      INVALID,
      name,
    );
    assert.match(e.message, /must be \[3\]: one value per channel/);
  }
  // saveMean/saveInvstd may be empty in evaluation mode only.
  const empty = { saveMean: Tensor.zeros([0]), saveInvstd: Tensor.zeros([0]) };
  assertAclnnError(
    () => batchNormBackward({ ...p, ...empty, training: true }),
    INVALID,
    "saveMean",
  );
  const r = batchNormBackward({ ...p, ...empty, training: false });
  assertClose(r.gradInput!, expected(p, false).gi, toleranceFor("float32"));
});

Deno.test("batchNormBackward: output rules are 161002 naming the output", () => {
  const p = problem([2, 3, 4], "float16", "float16");
  const cases: [BatchNormBackwardArgs["out"], string][] = [
    [{ gradInput: Tensor.zeros([2, 3, 5], "float16") }, "gradInput"],
    [{ gradInput: Tensor.zeros([2, 3, 4], "float32") }, "gradInput"],
    [{ gradInput: Tensor.zeros([2, 3, 4], "int32") }, "gradInput"],
    [{ gradWeight: Tensor.zeros([4], "float16") }, "gradWeight"],
    [{ gradWeight: Tensor.zeros([1, 3], "float16") }, "gradWeight"],
    [{ gradWeight: Tensor.zeros([3], "bfloat16") }, "gradWeight"],
    [{ gradBias: Tensor.zeros([2], "float16") }, "gradBias"],
    [{ gradBias: Tensor.zeros([3], "int32") }, "gradBias"],
    // gradWeight and gradBias must share a dtype.
    [{ gradWeight: Tensor.zeros([3], "float32"), gradBias: Tensor.zeros([3]) }, ""],
    [{ gradWeight: Tensor.zeros([3], "float16"), gradBias: Tensor.zeros([3]) }, "gradBias"],
  ];
  for (const [out, name] of cases) {
    const run = () => batchNormBackward({ ...p, training: true, out });
    if (name === "") run();
    else assertAclnnError(run, INVALID, name);
  }
});

Deno.test("batchNormBackward: scalar rules are 161002; an outputMask of the wrong length 161001", () => {
  const p = problem([2, 3, 4]);
  const args = p as unknown as BatchNormBackwardArgs;
  assertAclnnError(() => batchNormBackward(args), INVALID, "training");
  assertAclnnError(
    () => batchNormBackward({ ...p, training: 1 as unknown as boolean }),
    INVALID,
    "training",
  );
  assertAclnnError(() => batchNormBackward({ ...p, training: true, eps: NaN }), INVALID, "eps");
  assertAclnnError(
    () => batchNormBackward({ ...p, training: true, eps: "1" as unknown as number }),
    INVALID,
    "eps",
  );
  // CANN returns ACLNN_ERR_PARAM_NULLPTR for every outputMask failure (CheckMaskNotNull).
  for (const outputMask of [[true, true], [true, true, true, true], [], null]) {
    assertAclnnError(
      () => batchNormBackward({ ...p, training: true, outputMask: outputMask as boolean[] }),
      161001,
      "outputMask",
    );
  }
  assertAclnnError(
    () =>
      batchNormBackward({ ...p, training: true, outputMask: [1, 0, 1] as unknown as boolean[] }),
    INVALID,
    "outputMask.0",
  );
  assertAclnnError(
    () => batchNormBackward({ ...p, training: true, gradOut: [1, 2] as unknown as Tensor }),
    INVALID,
    "gradOut",
  );
});

Deno.test("batchNormBackward: masked-off outputs are neither validated nor written", () => {
  const p = problem([2, 3, 4]);
  const bad = Tensor.full([7], 42);
  const r = batchNormBackward({
    ...p,
    training: true,
    outputMask: [true, false, false],
    out: { gradWeight: bad, gradBias: bad },
  });
  assert.equal(r.gradWeight, null);
  assert.equal(r.gradBias, null);
  assert.deepEqual(bad.toArray(), new Array(7).fill(42));
  assertClose(r.gradInput!, expected(p, true).gi, toleranceFor("float32"));

  const only = batchNormBackward({ ...p, training: false, outputMask: [false, true, false] });
  assert.equal(only.gradInput, null);
  assert.equal(only.gradBias, null);
  assertClose(only.gradWeight!, expected(p, false).gw, toleranceFor("float32"));
});

// ---------------------------------------------------------------------------------------------
// Values

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
