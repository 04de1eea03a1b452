import assert from "node:assert/strict";
import { batchNormBackward } from "../../src/ops/batch_norm_backward.ts";
import {
  type BatchNormBackwardComputeArgs,
  type BatchNormBackwardDescriptorArgs,
  createBatchNormBackwardDescriptor,
} from "../../src/ops/infiniop_batch_norm_backward.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { toleranceFor } from "../helpers/tolerance.ts";
import {
  batchNormForward64,
  batchStats64,
  dot,
  infiniopBatchNormBackward64,
  invstdOf,
  numericalGradient,
} from "../oracle/mod.ts";
import { INFINIOP_TENSOR_NAMES, plainDescriptors } from "../fixtures/infiniop.ts";

const NULLPTR = 161001;
const INVALID = 161002;
const NAMES = INFINIOP_TENSOR_NAMES;

/** Tensors for an (N, C, L) problem whose running stats are the batch's E[x] and Var[x]. */
function tensors(N: number, C: number, L: number, dtype: DType = "float32") {
  const shape = [N, C, L];
  const input = Tensor.random(shape, { seed: 1, low: -2, high: 3, dtype });
  const gradOutput = Tensor.random(shape, { seed: 2, dtype });
  const weight = Tensor.random([C], { seed: 3, low: 0.5, high: 1.5, dtype });
  const stats = batchStats64(input.toFloat64Array(), shape);
  return {
    gradInput: Tensor.zeros(shape, dtype),
    gradWeight: Tensor.zeros([C], dtype),
    gradBias: Tensor.zeros([C], dtype),
    input,
    gradOutput,
    weight,
    runningMean: Tensor.fromArray(stats.mean, [C], dtype),
    runningVar: Tensor.fromArray(stats.variance, [C], dtype),
  } satisfies BatchNormBackwardComputeArgs;
}

/** The oracle's gradient at (runningMean, 1/sqrt(runningVar + eps)), training reading. */
function reference(t: ReturnType<typeof tensors>, eps = 0) {
  const g = infiniopBatchNormBackward64({
    dy: t.gradOutput.toFloat64Array(),
    x: t.input.toFloat64Array(),
    shape: t.input.shape,
    weight: t.weight.toFloat64Array(),
    runningMean: t.runningMean.toFloat64Array(),
    runningVar: t.runningVar.toFloat64Array(),
    eps,
  });
  return { gi: g.gradInput, gw: g.gradWeight, gb: g.gradBias };
}

function assertMatches(t: ReturnType<typeof tensors>, eps: number, dtype: DType, what = "") {
  const e = reference(t, eps);
  const tol = toleranceFor(dtype);
  assertClose(t.gradInput, e.gi, tol, `gradInput ${what}`);
  assertClose(t.gradWeight, e.gw, tol, `gradWeight ${what}`);
  assertClose(t.gradBias, e.gb, tol, `gradBias ${what}`);
}

// ---------------------------------------------------------------------------------------------
// Creation

Deno.test("infiniop BatchNormBackward: descriptor from plain descriptors and from tensors", () => {
  const t = tensors(3, 4, 5);
  const fromPlain = createBatchNormBackwardDescriptor(plainDescriptors(3, 4, 5));
  const fromTensors = createBatchNormBackwardDescriptor(t);
  for (const desc of [fromPlain, fromTensors]) {
    assert.equal(desc.dtype, "float32");
    assert.deepEqual([desc.N, desc.C, desc.L], [3, 4, 5]);
    assert.equal(desc.eps, 0);
    assert.equal(desc.workspaceSize, 24 * 4);
    assert.equal(desc.destroyed, false);
  }
  fromPlain.compute({ ...t, workspace: new Uint8Array(fromPlain.workspaceSize) });
  assertMatches(t, 0, "float32", "plain");
  const u = tensors(3, 4, 5);
  fromTensors.compute(u);
  assert.deepEqual(u.gradInput.toArray(), t.gradInput.toArray());
  // Explicit contiguous strides and strided per-channel descriptors are accepted.
  createBatchNormBackwardDescriptor({
    ...plainDescriptors(3, 4, 5),
    input: { dtype: "float32", shape: [3, 4, 5], strides: [20, 5, 1] },
    weight: { dtype: "float32", shape: [4], strides: [2] },
  }).destroy();
});

Deno.test("infiniop BatchNormBackward: a missing tensor is NULL_POINTER (161001)", () => {
  for (const name of NAMES) {
    for (const value of [undefined, null]) {
      assertAclnnError(
        () => createBatchNormBackwardDescriptor({ ...plainDescriptors(2, 3, 4), [name]: value }),
        NULLPTR,
        name,
        "NULL_POINTER",
      );
    }
  }
});

Deno.test("infiniop BatchNormBackward: compute without its argument object is NULL_POINTER", () => {
  using desc = createBatchNormBackwardDescriptor(plainDescriptors(2, 3, 4));
  for (const value of [undefined, null]) {
    assertAclnnError(() => desc.compute(value as never), NULLPTR, "args", "NULL_POINTER");
  }
});

Deno.test("infiniop BatchNormBackward: dtype rules are BAD_TENSOR_DTYPE", () => {
  const p = plainDescriptors(2, 3, 4);
  assertAclnnError(
    () =>
      createBatchNormBackwardDescriptor({
        ...plainDescriptors(2, 3, 4, "int32"),
      }),
    INVALID,
    "input",
    "BAD_TENSOR_DTYPE",
  );
  for (const name of NAMES) {
    if (name === "input") continue;
    const patched = { ...p, [name]: { ...p[name], dtype: "float16" } };
    assertAclnnError(
      () => createBatchNormBackwardDescriptor(patched),
      INVALID,
      name,
      "BAD_TENSOR_DTYPE",
    );
  }
  assertAclnnError(
    () =>
      createBatchNormBackwardDescriptor({
        ...p,
        weight: { dtype: "float64" as DType, shape: [3] },
      }),
    INVALID,
    "weight",
    "BAD_TENSOR_DTYPE",
  );
  // bfloat16 and float16 as dT are fine.
  for (const dtype of ["float16", "bfloat16"] as const) {
    createBatchNormBackwardDescriptor(plainDescriptors(2, 3, 4, dtype)).destroy();
  }
});

Deno.test("infiniop BatchNormBackward: shape rules are BAD_TENSOR_SHAPE", () => {
  const p = plainDescriptors(2, 3, 4);
  const f = "float32" as const;
  const cases: [Partial<BatchNormBackwardDescriptorArgs>, string][] = [
    [{ input: { dtype: f, shape: [2, 3, 4, 1] } }, "input"],
    [{ input: { dtype: f, shape: [2, 3] } }, "input"],
    [{ gradOutput: { dtype: f, shape: [2, 3, 5] } }, "gradOutput"],
    [{ gradInput: { dtype: f, shape: [2, 4, 4] } }, "gradInput"],
    [{ input: { dtype: f, shape: [2, -1, 4] } }, "input"],
  ];
  for (const name of ["gradWeight", "gradBias", "weight", "runningMean", "runningVar"]) {
    cases.push([{ [name]: { dtype: f, shape: [4] } }, name]);
    cases.push([{ [name]: { dtype: f, shape: [3, 1] } }, name]);
  }
  for (const [patch, name] of cases) {
    assertAclnnError(
      () => createBatchNormBackwardDescriptor({ ...p, ...patch }),
      INVALID,
      name,
      "BAD_TENSOR_SHAPE",
    );
  }
});

Deno.test("infiniop BatchNormBackward: non-contiguous data tensors are BAD_TENSOR_STRIDES", () => {
  const p = plainDescriptors(2, 3, 4);
  for (const name of ["gradInput", "gradOutput", "input"] as const) {
    assertAclnnError(
      () =>
        createBatchNormBackwardDescriptor({
          ...p,
          [name]: { dtype: "float32", shape: [2, 3, 4], strides: [1, 2, 6] },
        }),
      INVALID,
      name,
      "BAD_TENSOR_STRIDES",
    );
  }
  // A channels-last Tensor (contiguous (N, L, C) viewed as (N, C, L)).
  const nlc = Tensor.zeros([2, 4, 3]).permute([0, 2, 1]);
  assertAclnnError(
    () => createBatchNormBackwardDescriptor({ ...p, input: nlc }),
    INVALID,
    "input",
    "BAD_TENSOR_STRIDES",
  );
  assertAclnnError(
    () =>
      createBatchNormBackwardDescriptor({
        ...p,
        weight: { dtype: "float32", shape: [3], strides: [1, 1] },
      }),
    INVALID,
    "weight",
    "BAD_TENSOR_STRIDES",
  );
});

Deno.test("infiniop BatchNormBackward: bad eps or descriptor objects are BAD_PARAM", () => {
  const p = plainDescriptors(2, 3, 4);
  for (const eps of [-1, NaN, Infinity, "0" as unknown as number]) {
    assertAclnnError(
      () => createBatchNormBackwardDescriptor({ ...p, eps }),
      INVALID,
      "eps",
      "BAD_PARAM",
    );
  }
  assertAclnnError(
    () => createBatchNormBackwardDescriptor({ ...p, weight: 3 as unknown as Tensor }),
    INVALID,
    "weight",
    "BAD_PARAM",
  );
});

// ---------------------------------------------------------------------------------------------
// Compute

Deno.test("infiniop BatchNormBackward: compute checks tensors against the descriptor", () => {
  const desc = createBatchNormBackwardDescriptor(plainDescriptors(2, 3, 4));
  const t = tensors(2, 3, 4);
  for (const name of NAMES) {
    assertAclnnError(
      () => desc.compute({ ...t, [name]: null }),
      NULLPTR,
      name,
      "NULL_POINTER",
    );
    assertAclnnError(
      () => desc.compute({ ...t, [name]: { dtype: "float32", shape: t[name].shape } as never }),
      INVALID,
      name,
      "BAD_PARAM",
    );
    const shape = t[name].rank === 3 ? [2, 3, 5] : [4];
    assertAclnnError(
      () => desc.compute({ ...t, [name]: Tensor.zeros(shape) }),
      INVALID,
      name,
      "BAD_TENSOR_SHAPE",
    );
    assertAclnnError(
      () => desc.compute({ ...t, [name]: Tensor.zeros(t[name].shape, "float16") }),
      INVALID,
      name,
      "BAD_TENSOR_DTYPE",
    );
  }
  // Strides must match the descriptor's (contiguous here) for every tensor.
  assertAclnnError(
    () => desc.compute({ ...t, weight: Tensor.zeros([6]).slice(0, 0, 6, 2) }),
    INVALID,
    "weight",
    "BAD_TENSOR_STRIDES",
  );
  assertAclnnError(
    () => desc.compute({ ...t, gradInput: Tensor.zeros([2, 4, 3]).permute([0, 2, 1]) }),
    INVALID,
    "gradInput",
    "BAD_TENSOR_STRIDES",
  );
  // A descriptor with strided per-channel tensors takes exactly those strides.
  const strided = createBatchNormBackwardDescriptor({
    ...plainDescriptors(2, 3, 4),
    weight: { dtype: "float32", shape: [3], strides: [2] },
  });
  const w = Tensor.random([6], { seed: 9, low: 0.5, high: 1.5 }).slice(0, 0, 6, 2);
  const s = { ...t, weight: w };
  strided.compute(s);
  assertMatches(s, 0, "float32", "strided weight");
});

Deno.test("infiniop BatchNormBackward: workspace size and INSUFFICIENT_WORKSPACE", () => {
  const desc = createBatchNormBackwardDescriptor(plainDescriptors(2, 3, 4));
  assert.equal(desc.workspaceSize, 72);
  const t = tensors(2, 3, 4);
  assertAclnnError(
    () => desc.compute({ ...t, workspace: new Uint8Array(71) }),
    INVALID,
    "workspace",
    "INSUFFICIENT_WORKSPACE",
  );
  assertAclnnError(
    () => desc.compute({ ...t, workspace: Tensor.zeros([35], "float16") }), // 70 bytes
    INVALID,
    "workspace",
    "INSUFFICIENT_WORKSPACE",
  );
  assertAclnnError(
    () => desc.compute({ ...t, workspace: new ArrayBuffer(100) as unknown as Uint8Array }),
    INVALID,
    "workspace",
    "BAD_PARAM",
  );
  desc.compute({ ...t, workspace: new Uint8Array(72) });
  assertMatches(t, 0, "float32", "exact workspace");
  desc.compute({ ...t, workspace: Tensor.zeros([18]) }); // 72 bytes
  desc.compute({ ...t, workspace: null });
  desc.compute(t);
  assertMatches(t, 0, "float32", "own workspace");
});

Deno.test("infiniop BatchNormBackward: values in every dtype, with and without eps", () => {
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    for (const eps of [0, 1e-3]) {
      const t = tensors(4, 3, 7, dtype);
      using desc = createBatchNormBackwardDescriptor({ ...plainDescriptors(4, 3, 7, dtype), eps });
      desc.compute(t);
      assertMatches(t, eps, dtype, `${dtype} eps=${eps}`);
    }
  }
});

Deno.test("infiniop BatchNormBackward: equals batchNormBackward in training mode", () => {
  const t = tensors(3, 2, 6);
  const eps = 1e-2;
  using desc = createBatchNormBackwardDescriptor({ ...t, eps });
  desc.compute(t);
  const invstd = invstdOf(t.runningVar.toFloat64Array(), eps);
  const r = batchNormBackward({
    gradOut: t.gradOutput,
    input: t.input,
    weight: t.weight,
    saveMean: t.runningMean,
    saveInvstd: Tensor.fromArray(invstd, [2], "float32"),
    training: true,
  });
  const tol = toleranceFor("float32");
  assertClose(t.gradInput, r.gradInput!, tol);
  assertClose(t.gradWeight, r.gradWeight!, tol);
  assertClose(t.gradBias, r.gradBias!, tol);
});

Deno.test("infiniop BatchNormBackward: training: false gives the eval-mode gradient (fixed stats)", () => {
  // With fixed running statistics y = (x - m) / sqrt(v + eps) * w + b is affine in x, so the
  // finite differences of that forward are the eval-mode gradient.
  const shape = [3, 2, 4];
  const t = tensors(3, 2, 4);
  const eps = 1e-3;
  // Statistics that are NOT the batch's: the two readings must differ.
  t.runningMean.copy_([0.25, -0.5]);
  t.runningVar.copy_([2, 0.5]);
  using desc = createBatchNormBackwardDescriptor({ ...t, eps, training: false });
  desc.compute(t);
  const x = t.input.toFloat64Array();
  const w = t.weight.toFloat64Array();
  const dy = t.gradOutput.toFloat64Array();
  const stats = { mean: new Float64Array([0.25, -0.5]), variance: new Float64Array([2, 0.5]) };
  const bias = new Float64Array([0.1, 0.2]);
  const loss = (xv: Float64Array, wv: Float64Array, bv: Float64Array) =>
    dot(dy, batchNormForward64(xv, shape, wv, bv, eps, stats).y);
  const tol = toleranceFor("float32");
  assertClose(t.gradInput, numericalGradient((v) => loss(v, w, bias), x), tol, "gradInput");
  assertClose(t.gradWeight, numericalGradient((v) => loss(x, v, bias), w), tol, "gradWeight");
  assertClose(t.gradBias, numericalGradient((v) => loss(x, w, v), bias), tol, "gradBias");
  // And the default (training) reading gives a different gradInput on the same statistics.
  const u = tensors(3, 2, 4);
  u.runningMean.copy_([0.25, -0.5]);
  u.runningVar.copy_([2, 0.5]);
  using trainingDesc = createBatchNormBackwardDescriptor({ ...u, eps });
  trainingDesc.compute(u);
  assert.ok(
    u.gradInput.toFloat64Array().some((v, i) =>
      Math.abs(v - t.gradInput.toFloat64Array()[i]) > 1e-3
    ),
  );
  assertAclnnError(
    () => createBatchNormBackwardDescriptor({ ...t, training: 1 as unknown as boolean }),
    161002,
    "training",
    "BAD_PARAM",
  );
});

Deno.test("infiniop BatchNormBackward: gradients equal finite differences of the seed forward", () => {
  // y = (x - E[x]) / sqrt(Var[x]) * gamma + beta, statistics over dims 0 and 2, no eps.
  const shape = [3, 2, 4];
  const t = tensors(3, 2, 4);
  const bias = new Float64Array([0.3, -0.2]);
  using desc = createBatchNormBackwardDescriptor(t);
  desc.compute(t);
  const x = t.input.toFloat64Array();
  const w = t.weight.toFloat64Array();
  const dy = t.gradOutput.toFloat64Array();
  const loss = (xv: Float64Array, wv: Float64Array, bv: Float64Array) =>
    dot(dy, batchNormForward64(xv, shape, wv, bv, 0).y);
  const tol = toleranceFor("float32");
  assertClose(t.gradInput, numericalGradient((v) => loss(v, w, bias), x), tol, "gradInput");
  assertClose(t.gradWeight, numericalGradient((v) => loss(x, v, bias), w), tol, "gradWeight");
  assertClose(t.gradBias, numericalGradient((v) => loss(x, w, v), bias), tol, "gradBias");
});

Deno.test("infiniop BatchNormBackward: in place (gradInput === gradOutput) equals out of place", () => {
  for (const dtype of ["float32", "float16"] as const) {
    const t = tensors(3, 4, 5, dtype);
    using desc = createBatchNormBackwardDescriptor(t);
    desc.compute(t);
    const inPlace = { ...tensors(3, 4, 5, dtype), gradWeight: Tensor.zeros([4], dtype) };
    const gradOutput = inPlace.gradOutput.clone();
    desc.compute({ ...inPlace, gradOutput, gradInput: gradOutput });
    assert.deepEqual(gradOutput.toArray(), t.gradInput.toArray(), dtype);
    assert.deepEqual(inPlace.gradWeight.toArray(), t.gradWeight.toArray(), dtype);
    assert.deepEqual(inPlace.gradBias.toArray(), t.gradBias.toArray(), dtype);
  }
});

Deno.test("infiniop BatchNormBackward: empty batch gives zero per-channel gradients", () => {
  const t = tensors(0, 3, 4);
  t.gradWeight.copy_([5, 5, 5]);
  using desc = createBatchNormBackwardDescriptor(t);
  desc.compute(t);
  assert.deepEqual(t.gradWeight.toArray(), [0, 0, 0]);
  assert.deepEqual(t.gradBias.toArray(), [0, 0, 0]);
});

Deno.test("infiniop BatchNormBackward: destroy/dispose are idempotent; `using` destroys", () => {
  const t = tensors(2, 3, 4);
  const desc = createBatchNormBackwardDescriptor(t);
  desc.destroy();
  desc.destroy();
  desc[Symbol.dispose]();
  assert.equal(desc.destroyed, true);
  assertAclnnError(() => desc.compute(t), INVALID, "descriptor", "BAD_PARAM");

  let escaped;
  {
    using scoped = createBatchNormBackwardDescriptor(t);
    scoped.compute(t);
    escaped = scoped;
    assert.equal(scoped.destroyed, false);
  }
  assert.equal(escaped.destroyed, true);
  assertAclnnError(() => escaped.compute(t), INVALID, "descriptor", "BAD_PARAM");
});
