/**
 * groupNormBackward's shapes and layouts: ranks 0 to 8 (explicit N, C, HxW for ranks 0 and 1,
 * and reinterpreting an input's shape), non-contiguous and channels-last inputs, out tensors
 * (strided views too; none may overwrite gradOut).
 *
 * @module
 */

import assert from "node:assert/strict";
import { groupNormBackward } from "../../src/ops/group_norm_backward.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { INVALID } from "../helpers/op_inputs.ts";
import { EXACT, F32_ARITHMETIC, toleranceFor } from "../helpers/tolerance.ts";
import { problem, referenceOf } from "../fixtures/group_norm_backward_problem.ts";

Deno.test("groupNormBackward: rank 2 (HxW = 1), 3, 4 and 8", () => {
  const shapes: number[][] = [[4, 6], [2, 6, 5], [2, 4, 3, 2], [2, 4, 1, 2, 1, 3, 1, 2]];
  for (const shape of shapes) {
    const [N, C] = shape;
    const HxW = shape.slice(2).reduce((p, d) => p * d, 1);
    const G = 2;
    const a = problem(N, C, HxW, G, "float32", "float32", shape);
    const r = groupNormBackward(a);
    assert.deepEqual(r.gradInput!.shape, shape);
    const ref = referenceOf(a, N, C, HxW);
    const tol = toleranceFor("float32");
    assertClose(r.gradInput!, ref.gradInput, tol, `rank ${shape.length} gradInput`);
    assertClose(r.gradGamma!, ref.gradGamma, tol, `rank ${shape.length} gradGamma`);
    assertClose(r.gradBeta!, ref.gradBeta, tol, `rank ${shape.length} gradBeta`);
  }
});

Deno.test("groupNormBackward: ranks 0 and 1 with explicit N, C, HxW", () => {
  const a = problem(2, 4, 3, 2);
  const expected = groupNormBackward(a);
  const flat = groupNormBackward({
    ...a,
    input: a.input.reshape([24]),
    gradOut: a.gradOut.reshape([24]),
    mean: a.mean.reshape([4]),
    N: 2,
    C: 4,
    HxW: 3,
  });
  assert.deepEqual(flat.gradInput!.shape, [24]);
  assertClose(flat.gradInput!, expected.gradInput!, EXACT);
  assertClose(flat.gradGamma!, expected.gradGamma!, EXACT);
  // gradOut may have another shape than input: only its numel counts.
  const mixed = groupNormBackward({ ...a, input: a.input.reshape([24]), N: 2, C: 4, HxW: 3 });
  assertClose(mixed.gradInput!, expected.gradInput!, EXACT);

  // Rank 0: one element, one group. xhat = (x - mean) * rstd; gradInput = rstd * (dy - dy -
  // xhat * dy * xhat) = -rstd * dy * xhat^2, gradGamma = dy * xhat, gradBeta = dy.
  const r = groupNormBackward({
    gradOut: Tensor.fromArray([3], []),
    input: Tensor.fromArray([2], []),
    mean: Tensor.fromArray([0.5], []),
    rstd: Tensor.fromArray([2], []),
    gamma: Tensor.fromArray([1], []),
    N: 1,
    C: 1,
    HxW: 1,
    group: 1,
  });
  assert.deepEqual(r.gradInput!.shape, []);
  assert.deepEqual(r.gradGamma!.shape, []);
  assertClose(r.gradInput!, [-2 * 3 * 9]);
  assertClose(r.gradGamma!, [9]);
  assertClose(r.gradBeta!, [3]);
});

Deno.test("groupNormBackward: explicit N, C, HxW reinterpret the input's shape", () => {
  // [2, 6, 4] read as (N=2, C=3, HxW=8) equals the [2, 3, 8] problem.
  const a = problem(2, 3, 8, 3);
  const expected = groupNormBackward(a);
  const r = groupNormBackward({
    ...a,
    input: a.input.reshape([2, 6, 4]),
    gradOut: a.gradOut.reshape([2, 6, 4]),
    C: 3,
    HxW: 8,
  });
  assert.deepEqual(r.gradInput!.shape, [2, 6, 4]);
  assertClose(r.gradInput!, expected.gradInput!, EXACT);
  assertClose(r.gradBeta!, expected.gradBeta!, EXACT);
});

Deno.test("groupNormBackward: non-contiguous and channels-last inputs", () => {
  const [N, C, H, W, G] = [2, 4, 3, 2, 2];
  const a = problem(N, C, H * W, G, "float32", "float32", [N, C, H, W]);
  const expected = groupNormBackward(a);
  // Channels-last: storage (N, H, W, C), viewed as (N, C, H, W).
  const nhwc = (t: Tensor) => t.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2]);
  const x = nhwc(a.input);
  const dy = nhwc(a.gradOut);
  assert.equal(x.isContiguous(), false);
  assert.deepEqual(x.strides, [H * W * C, 1, W * C, C]);
  const r = groupNormBackward({ ...a, input: x, gradOut: dy });
  assertClose(r.gradInput!, expected.gradInput!, F32_ARITHMETIC.float32);
  assertClose(r.gradGamma!, expected.gradGamma!, F32_ARITHMETIC.float32);
  assertClose(r.gradBeta!, expected.gradBeta!, F32_ARITHMETIC.float32);
  // An allocated gradInput keeps the input's layout (PyTorch's preserve_format).
  assert.deepEqual(r.gradInput!.strides, x.strides, "channels-last kept");

  // Strided views: every other element of a larger tensor, a transposed (C, N) mean, a
  // stepped gamma.
  const wide = Tensor.zeros([N, C, H, 2 * W]);
  const sx = wide.slice(3, 0, 2 * W, 2).copy_(a.input);
  const meanT = a.mean.permute([1, 0]).contiguous().permute([1, 0]);
  const rstdT = a.rstd.permute([1, 0]).contiguous().permute([1, 0]);
  const gammaWide = Tensor.zeros([2 * C]);
  const sg = gammaWide.slice(0, 1, 2 * C, 2).copy_(a.gamma);
  assert.equal(sx.isContiguous() || meanT.isContiguous() || sg.isContiguous(), false);
  const s = groupNormBackward({ ...a, input: sx, mean: meanT, rstd: rstdT, gamma: sg });
  assertClose(s.gradInput!, expected.gradInput!, F32_ARITHMETIC.float32);
  assertClose(s.gradGamma!, expected.gradGamma!, F32_ARITHMETIC.float32);
});

Deno.test("groupNormBackward: out tensors, including strided views, receive the results", () => {
  const a = problem(2, 4, 3, 2);
  const expected = groupNormBackward(a);
  const gradInput = Tensor.zeros([2, 3, 4]).permute([0, 2, 1]); // (2, 4, 3), not contiguous
  const gradGammaStore = Tensor.full([8], -1);
  const gradGamma = gradGammaStore.slice(0, 0, 8, 2);
  const gradBeta = Tensor.zeros([4]);
  const r = groupNormBackward({ ...a, out: { gradInput, gradGamma, gradBeta } });
  assert.equal(r.gradInput, gradInput);
  assert.equal(r.gradGamma, gradGamma);
  assert.equal(r.gradBeta, gradBeta);
  assertClose(gradInput, expected.gradInput!, EXACT);
  assertClose(gradGamma, expected.gradGamma!, EXACT);
  assertClose(gradBeta, expected.gradBeta!, EXACT);
  // The gaps of the strided view are untouched.
  assertClose(gradGammaStore.slice(0, 1, 8, 2), [-1, -1, -1, -1]);
  // gradInput may not overwrite gradOut: CANN documents no in-place use, so an output that
  // shares memory with an input is refused (issue 12), as PyTorch refuses it.
  const dy = a.gradOut.clone();
  assertAclnnError(
    () => groupNormBackward({ ...a, gradOut: dy, out: { gradInput: dy } }),
    INVALID,
    "gradInput",
  );
});
