import assert from "node:assert/strict";
import {
  batchNormReduceBackward,
  type BatchNormReduceBackwardArgs,
} from "../../src/ops/batch_norm_reduce_backward.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { EXACT, F32_ARITHMETIC, toleranceFor } from "../helpers/tolerance.ts";
import {
  batchNormForward64,
  batchNormReduceBackward64,
  dot,
  numericalGradient,
  type ReduceBackward64,
} from "../oracle/mod.ts";

const NULLPTR = 161001;
const INVALID = 161002;
const EPS = 1e-5;

function rnd(shape: number[], seed: number, dtype: DType = "float32", low = -1, high = 1) {
  return Tensor.random(shape, { seed, dtype, low, high });
}

function problem(shape: number[], dtype: DType = "float32", statsDType: DType = dtype) {
  const C = shape[1];
  return {
    gradOut: rnd(shape, 1, dtype),
    input: rnd(shape, 2, dtype, -2, 3),
    mean: rnd([C], 3, statsDType, 0, 1),
    invstd: rnd([C], 4, statsDType, 0.5, 2),
    weight: rnd([C], 5, statsDType, 0.5, 1.5),
  } satisfies BatchNormReduceBackwardArgs;
}

function referenceOf(a: ReturnType<typeof problem>) {
  return batchNormReduceBackward64(
    a.gradOut.toFloat64Array(),
    a.input.toFloat64Array(),
    a.input.shape,
    a.mean.toFloat64Array(),
    a.invstd.toFloat64Array(),
  );
}

function assertMatches(
  r: ReturnType<typeof batchNormReduceBackward>,
  ref: ReduceBackward64,
  dtype: DType,
  what = "",
) {
  const tol = toleranceFor(dtype);
  assertClose(r.sumDy!, ref.sumDy, tol, `${what} sumDy`);
  assertClose(r.sumDyXmu!, ref.sumDyXmu, tol, `${what} sumDyXmu`);
  assertClose(r.gradWeight!, ref.gradWeight, tol, `${what} gradWeight`);
  assertClose(r.gradBias!, ref.gradBias, tol, `${what} gradBias`);
}

const OUTPUTS = ["sumDy", "sumDyXmu", "gradWeight", "gradBias"] as const;
const MASK_OF = {
  sumDy: "inputG",
  sumDyXmu: "inputG",
  gradWeight: "weightG",
  gradBias: "biasG",
} as const;

// ---------------------------------------------------------------------------------------
// The seed example

Deno.test("batchNormReduceBackward: the CANN doc example", () => {
  const r = batchNormReduceBackward({
    gradOut: Tensor.fromArray([1, 1, 1, 2, 2, 2, 3, 3], [4, 2]),
    input: Tensor.fromArray([0, 1, 2, 3, 4, 5, 6, 7], [4, 2]),
    mean: Tensor.fromArray([1, 1], [2]),
    invstd: Tensor.fromArray([1, 1], [2]),
    weight: Tensor.fromArray([1, 1], [2]),
    inputG: true,
    weightG: true,
    biasG: true,
  });
  // By hand, channel 0 holds rows (dy, x) = (1,0) (1,2) (2,4) (3,6); channel 1 holds
  // (1,1) (2,3) (2,5) (3,7).
  // sumDy:    1+1+2+3 = 7,                 1+2+2+3 = 8
  // sumDyXmu: 1*-1 + 1*1 + 2*3 + 3*5 = 21, 1*0 + 2*2 + 2*4 + 3*6 = 30
  assertClose(r.sumDy!, [7, 8], EXACT);
  assertClose(r.sumDyXmu!, [21, 30], EXACT);
  assertClose(r.gradWeight!, [21 * 1, 30 * 1], EXACT); // sumDyXmu * invstd
  assertClose(r.gradBias!, [7, 8], EXACT); // sumDy
  for (const name of OUTPUTS) {
    assert.deepEqual(r[name]!.shape, [2]);
    assert.equal(r[name]!.dtype, "float32");
  }
});

// ---------------------------------------------------------------------------------------
// 161001

Deno.test("batchNormReduceBackward: missing gradOut/input/mean/invstd is 161001", () => {
  const a = problem([4, 3, 2]);
  for (const name of ["gradOut", "input", "mean", "invstd"] as const) {
    for (const value of [undefined, null]) {
      assertAclnnError(() => batchNormReduceBackward({ ...a, [name]: value }), NULLPTR, name);
    }
  }
  // weight is optional.
  assert.ok(batchNormReduceBackward({ ...a, weight: undefined }).gradWeight);
});

Deno.test("batchNormReduceBackward: an explicit null output whose mask is true is 161001", () => {
  const a = problem([4, 3, 2]);
  for (const name of OUTPUTS) {
    assertAclnnError(() => batchNormReduceBackward({ ...a, out: { [name]: null } }), NULLPTR, name);
    // With its mask false, null is fine and the output is null.
    const r = batchNormReduceBackward({ ...a, [MASK_OF[name]]: false, out: { [name]: null } });
    assert.equal(r[name], null);
  }
});

// ---------------------------------------------------------------------------------------
// 161002

Deno.test("batchNormReduceBackward: unsupported dtypes are 161002 naming the tensor", () => {
  const a = problem([4, 3, 2]);
  const i32 = (t: Tensor) => Tensor.fromArray(t.toFloat64Array(), t.shape, "int32");
  assertAclnnError(
    () => batchNormReduceBackward({ ...a, gradOut: i32(a.gradOut), input: i32(a.input) }),
    INVALID,
    "gradOut",
  );
  for (const name of ["input", "mean", "invstd", "weight"] as const) {
    assertAclnnError(
      () => batchNormReduceBackward({ ...a, [name]: i32(a[name]) }),
      INVALID,
      name,
    );
  }
  for (const name of OUTPUTS) {
    assertAclnnError(
      () => batchNormReduceBackward({ ...a, out: { [name]: Tensor.zeros([3], "int32") } }),
      INVALID,
      name,
    );
  }
  // Not a tensor at all.
  assertAclnnError(
    () => batchNormReduceBackward({ ...a, weight: [1, 2, 3] as unknown as Tensor }),
    INVALID,
    "weight",
  );
});

Deno.test("batchNormReduceBackward: gradOut dtype != input dtype is 161002", () => {
  const a = problem([4, 3, 2]);
  const h = Tensor.fromArray(a.gradOut.toFloat64Array(), a.gradOut.shape, "float16");
  assertAclnnError(() => batchNormReduceBackward({ ...a, gradOut: h }), INVALID, "gradOut");
  const b = Tensor.fromArray(a.input.toFloat64Array(), a.input.shape, "bfloat16");
  assertAclnnError(() => batchNormReduceBackward({ ...a, input: b }), INVALID, "gradOut");
});

Deno.test("batchNormReduceBackward: rank < 2 is 161002", () => {
  const a = problem([4, 3]);
  const flat = { ...a, gradOut: rnd([3], 1), input: rnd([3], 2) };
  assertAclnnError(() => batchNormReduceBackward(flat), INVALID, "gradOut");
  assertAclnnError(
    () => batchNormReduceBackward({ ...a, input: a.input.reshape([12]) }),
    INVALID,
    "input",
  );
  const scalar = { ...a, gradOut: Tensor.fromArray([1], []), input: Tensor.fromArray([1], []) };
  assertAclnnError(() => batchNormReduceBackward(scalar), INVALID, "gradOut");
});

Deno.test("batchNormReduceBackward: rank 9 is refused with 161002; a forged tensor too", () => {
  // Tensors go up to rank 64; the operator's own rule (rank 2..8) refuses rank 9.
  const a = problem([2, 3, 1, 1, 1, 1, 1, 2]);
  const nine = (t: Tensor) => t.reshape([...t.shape, 1]);
  assertAclnnError(
    () => batchNormReduceBackward({ ...a, gradOut: nine(a.gradOut), input: nine(a.input) }),
    INVALID,
    "gradOut",
  );
  // An object made to look like a Tensor (not built by the Tensor class) is not one.
  const forged = Object.create(Tensor.prototype, {
    dtype: { value: a.gradOut.dtype },
    shape: { value: a.gradOut.shape },
    strides: { value: a.gradOut.strides },
    offset: { value: 0 },
    storage: { value: a.gradOut.storage },
  }) as Tensor;
  assertAclnnError(() => batchNormReduceBackward({ ...a, gradOut: forged }), INVALID, "gradOut");
});

Deno.test("batchNormReduceBackward: a channel dim of 0 is 161002", () => {
  assertAclnnError(
    () =>
      batchNormReduceBackward({
        gradOut: Tensor.zeros([4, 0, 2]),
        input: Tensor.zeros([4, 0, 2]),
        mean: Tensor.zeros([0]),
        invstd: Tensor.zeros([0]),
      }),
    INVALID,
    "input",
  );
});

Deno.test("batchNormReduceBackward: gradOut shape != input shape is 161002", () => {
  const a = problem([4, 3, 2]);
  assertAclnnError(
    () => batchNormReduceBackward({ ...a, gradOut: rnd([4, 3, 3], 1) }),
    INVALID,
    "gradOut",
  );
  assertAclnnError(
    () => batchNormReduceBackward({ ...a, gradOut: a.gradOut.reshape([4, 6]) }),
    INVALID,
    "gradOut",
  );
});

Deno.test("batchNormReduceBackward: per-channel sizes != C are 161002", () => {
  const a = problem([4, 3, 2]);
  for (const name of ["mean", "invstd", "weight"] as const) {
    assertAclnnError(
      () => batchNormReduceBackward({ ...a, [name]: Tensor.ones([4]) }),
      INVALID,
      name,
    );
  }
  for (const name of OUTPUTS) {
    assertAclnnError(
      () => batchNormReduceBackward({ ...a, out: { [name]: Tensor.zeros([2]) } }),
      INVALID,
      name,
    );
  }
  // The shape counts, not the size: [1, 3] and [3, 1] hold C elements and are refused, as
  // CANN refuses them (161002).
  assertAclnnError(
    () => batchNormReduceBackward({ ...a, mean: a.mean.view([1, 3]) }),
    INVALID,
    "mean",
  );
  assertAclnnError(
    () => batchNormReduceBackward({ ...a, out: { sumDy: Tensor.zeros([3, 1]) } }),
    INVALID,
    "sumDy",
  );
});

Deno.test("batchNormReduceBackward: non-boolean masks are 161002", () => {
  const a = problem([4, 3]);
  for (const name of ["inputG", "weightG", "biasG"] as const) {
    assertAclnnError(
      () => batchNormReduceBackward({ ...a, [name]: 1 as unknown as boolean }),
      INVALID,
      name,
    );
  }
});

// ---------------------------------------------------------------------------------------
// Masks and out

Deno.test("batchNormReduceBackward: masked outputs are null and not validated even if wrong", () => {
  const a = problem([4, 3, 2]);
  const ref = referenceOf(a);
  const bad = Tensor.full([7], 5, "int32");
  const r1 = batchNormReduceBackward({
    ...a,
    inputG: false,
    out: { sumDy: bad, sumDyXmu: bad },
  });
  assert.equal(r1.sumDy, null);
  assert.equal(r1.sumDyXmu, null);
  assertClose(r1.gradWeight!, ref.gradWeight, toleranceFor("float32"));
  assertClose(bad, new Array(7).fill(5)); // untouched
  const r2 = batchNormReduceBackward({
    ...a,
    weightG: false,
    biasG: false,
    out: { gradWeight: bad, gradBias: Tensor.zeros([1, 2, 3], "float16") },
  });
  assert.equal(r2.gradWeight, null);
  assert.equal(r2.gradBias, null);
  assertClose(r2.sumDyXmu!, ref.sumDyXmu, toleranceFor("float32"));
  const none = batchNormReduceBackward({ ...a, inputG: false, weightG: false, biasG: false });
  assert.deepEqual({ ...none }, { sumDy: null, sumDyXmu: null, gradWeight: null, gradBias: null });
});

Deno.test("batchNormReduceBackward: out tensors (any float dtype, strided) receive results", () => {
  const a = problem([5, 3, 4]);
  const ref = referenceOf(a);
  const store = Tensor.full([9], -1);
  const out = {
    sumDy: store.slice(0, 0, 9, 3), // stride 3
    sumDyXmu: Tensor.zeros([3], "float16"),
    gradWeight: Tensor.zeros([3], "bfloat16"),
    gradBias: Tensor.zeros([3]),
  };
  const r = batchNormReduceBackward({ ...a, out });
  for (const name of OUTPUTS) assert.equal(r[name], out[name]);
  assertClose(out.sumDy, ref.sumDy, toleranceFor("float32"));
  assertClose(out.sumDyXmu, ref.sumDyXmu, toleranceFor("float16"));
  assertClose(out.gradWeight, ref.gradWeight, toleranceFor("bfloat16"));
  assertClose(out.gradBias, ref.gradBias, toleranceFor("float32"));
  assertClose(store.slice(0, 1, 9, 3), [-1, -1, -1]); // gaps untouched
});

// ---------------------------------------------------------------------------------------
// Values

Deno.test("batchNormReduceBackward: float32 matches the float64 formulas and finite differences", () => {
  const shape = [4, 3, 5];
  const a = problem(shape);
  const r = batchNormReduceBackward(a);
  const ref = referenceOf(a);
  assertMatches(r, ref, "float32");

  // Independently: L(w, b) = <dy, w * (x - mean) * invstd + b> with the statistics fixed
  // (variance chosen so that 1/sqrt(var + eps) is invstd).
  const x = a.input.toFloat64Array();
  const dy = a.gradOut.toFloat64Array();
  const mean = a.mean.toFloat64Array();
  const invstd = a.invstd.toFloat64Array();
  const stats = { mean, variance: invstd.map((v) => 1 / (v * v) - EPS) };
  const w = a.weight.toFloat64Array();
  const b = new Float64Array(3);
  const loss = (wv: Float64Array, bv: Float64Array) =>
    dot(dy, batchNormForward64(x, shape, wv, bv, EPS, stats).y);
  const dw = numericalGradient((v) => loss(v, b), w.slice());
  const db = numericalGradient((v) => loss(w, v), b.slice());
  // The float32 outputs vs exact derivatives: the outputs' rounding alone.
  const tol = F32_ARITHMETIC.float32;
  assertClose(r.gradWeight!, dw, tol, "gradWeight vs FD");
  assertClose(r.gradBias!, db, tol, "gradBias vs FD");
  // sumDy is dL/db and sumDyXmu is dL/dw / invstd.
  assertClose(r.sumDy!, db, tol, "sumDy vs FD");
  assertClose(r.sumDyXmu!, dw.map((v, c) => v / invstd[c]), tol, "sumDyXmu vs FD");
});

Deno.test("batchNormReduceBackward: weight's values are unused; its absence changes nothing", () => {
  const a = problem([4, 3, 2]);
  const r1 = batchNormReduceBackward(a);
  const r2 = batchNormReduceBackward({ ...a, weight: Tensor.full([3], 123) });
  const r3 = batchNormReduceBackward({ ...a, weight: undefined });
  for (const name of OUTPUTS) {
    assertClose(r2[name]!, r1[name]!, EXACT);
    assertClose(r3[name]!, r1[name]!, EXACT);
  }
});

Deno.test("batchNormReduceBackward: float16/bfloat16 and mixed dtypes", () => {
  const cases: [DType, DType][] = [
    ["float16", "float16"],
    ["bfloat16", "bfloat16"],
    ["float16", "float32"],
    ["bfloat16", "float32"],
  ];
  for (const [dtype, statsDType] of cases) {
    const a = problem([6, 3, 4], dtype, statsDType);
    const r = batchNormReduceBackward(a);
    // Per-channel sums in mean's dtype, weight gradients in weight's dtype.
    for (const name of OUTPUTS) assert.equal(r[name]!.dtype, statsDType, `${name} dtype`);
    assertMatches(r, referenceOf(a), statsDType, `${dtype}/${statsDType}`);
  }
  // fp16 input, fp16 stats, fp32 outputs: legal, and exact to float32.
  const h = problem([6, 3, 4], "float16");
  const out = {
    sumDy: Tensor.zeros([3]),
    sumDyXmu: Tensor.zeros([3]),
    gradWeight: Tensor.zeros([3]),
    gradBias: Tensor.zeros([3]),
  };
  assertMatches(batchNormReduceBackward({ ...h, out }), referenceOf(h), "float32", "fp32 out");
  // Weight gradients follow weight's dtype when it differs from mean's.
  const w = batchNormReduceBackward({ ...h, weight: Tensor.ones([3], "bfloat16") });
  assert.equal(w.gradWeight!.dtype, "bfloat16");
  assert.equal(w.sumDy!.dtype, "float16");
});

Deno.test("batchNormReduceBackward: rank 2 and rank 8", () => {
  for (const shape of [[7, 3], [2, 3, 2, 1, 2, 1, 2, 2]]) {
    const a = problem(shape);
    assertMatches(batchNormReduceBackward(a), referenceOf(a), "float32", `rank ${shape.length}`);
  }
});

Deno.test("batchNormReduceBackward: non-contiguous and channels-last inputs", () => {
  const [N, C, H, W] = [3, 4, 2, 3];
  const a = problem([N, C, H, W]);
  const ref = referenceOf(a);
  const nhwc = (t: Tensor) => t.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2]);
  const x = nhwc(a.input);
  assert.deepEqual(x.strides, [H * W * C, 1, W * C, C]);
  assertMatches(
    batchNormReduceBackward({ ...a, input: x, gradOut: nhwc(a.gradOut) }),
    ref,
    "float32",
    "channels-last",
  );
  // Strided: every other row of a larger tensor, a stepped mean, a transposed-back gradOut.
  const big = Tensor.zeros([2 * N, C, H, W]);
  const sx = big.slice(0, 1, 2 * N, 2).copy_(a.input);
  const meanStore = Tensor.zeros([2 * C]);
  const sm = meanStore.slice(0, 0, 2 * C, 2).copy_(a.mean);
  const dyT = a.gradOut.transpose(2, 3).contiguous().transpose(2, 3);
  assert.equal(sx.isContiguous() || sm.isContiguous() || dyT.isContiguous(), false);
  assertMatches(
    batchNormReduceBackward({ ...a, input: sx, mean: sm, gradOut: dyT }),
    ref,
    "float32",
    "strided",
  );
});

Deno.test("batchNormReduceBackward: empty batch (N = 0) gives zeros", () => {
  const out = { sumDy: Tensor.full([3], 9), gradBias: Tensor.full([3], 9, "float16") };
  const r = batchNormReduceBackward({
    gradOut: Tensor.zeros([0, 3, 4]),
    input: Tensor.zeros([0, 3, 4]),
    mean: Tensor.ones([3]),
    invstd: Tensor.ones([3]),
    out,
  });
  for (const name of OUTPUTS) assertClose(r[name]!, [0, 0, 0], EXACT, name);
  assert.equal(r.sumDy, out.sumDy);
  // Spatial size 0 as well.
  const s = batchNormReduceBackward({
    gradOut: Tensor.zeros([2, 3, 0]),
    input: Tensor.zeros([2, 3, 0]),
    mean: Tensor.ones([3]),
    invstd: Tensor.ones([3]),
  });
  assertClose(s.sumDyXmu!, [0, 0, 0], EXACT);
});

Deno.test("batchNormReduceBackward: large |mean| stays accurate (two-pass sum)", () => {
  const [N, C] = [4096, 2];
  const base = 1e4;
  // x = base + noise in float32; mean = base exactly; dy in [-1, 1].
  const noise = Tensor.random([N, C], { seed: 7 }).toFloat64Array();
  const input = Tensor.fromArray(noise.map((v) => base + v), [N, C]);
  const gradOut = rnd([N, C], 8);
  const mean = Tensor.fromArray([base, base], [C]);
  const r = batchNormReduceBackward({ gradOut, input, mean, invstd: Tensor.ones([C]) });
  const x = input.toFloat64Array();
  const dy = gradOut.toFloat64Array();
  const ref = batchNormReduceBackward64(dy, x, [N, C], mean.toFloat64Array(), [1, 1]);
  assertClose(r.sumDyXmu!, ref.sumDyXmu, F32_ARITHMETIC.float32);
  // The one-pass form CANN uses, sum(dy * x) - mean * sum(dy), accumulated in float32, is far
  // off on the same data: the test above is meaningful.
  const f = Math.fround;
  for (let c = 0; c < C; c++) {
    let sdx = 0;
    let sd = 0;
    for (let n = 0; n < N; n++) {
      sdx = f(sdx + f(dy[n * C + c] * x[n * C + c]));
      sd = f(sd + dy[n * C + c]);
    }
    const onePass = f(sdx - f(base * sd));
    assert.ok(
      Math.abs(onePass - ref.sumDyXmu[c]) > 100 * Math.abs(
            r.sumDyXmu!.toFloat64Array()[c] -
              ref.sumDyXmu[c],
          ),
      `channel ${c}: one-pass ${onePass} vs two-pass ${ref.sumDyXmu[c]}`,
    );
  }
});

Deno.test("batchNormReduceBackward: NaN and Inf propagate per channel", () => {
  const a = problem([4, 3]);
  const x = a.input.toFloat64Array();
  x[1] = NaN; // channel 1
  const dy = a.gradOut.toFloat64Array();
  dy[5] = Infinity; // channel 2
  const r = batchNormReduceBackward({
    ...a,
    input: Tensor.fromArray(x, [4, 3]),
    gradOut: Tensor.fromArray(dy, [4, 3]),
  });
  const sdx = r.sumDyXmu!.toFloat64Array();
  const sd = r.sumDy!.toFloat64Array();
  assert.ok(Number.isFinite(sdx[0]) && Number.isNaN(sdx[1]) && !Number.isFinite(sdx[2]));
  assert.ok(Number.isFinite(sd[0]) && Number.isFinite(sd[1]) && sd[2] === Infinity);
  assert.equal(r.gradBias!.toFloat64Array()[2], Infinity);
});
