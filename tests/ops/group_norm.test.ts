/**
 * groupNorm (aclnnGroupNorm): output, mean and rstd (biased) against the float64 oracle,
 * explicit N/C/HxW, out tensors, a non-contiguous input, an empty batch, every documented error
 * code on the exact argument; and groupNorm then groupNormBackward against finite differences
 * of the forward.
 *
 * @module
 */

import assert from "node:assert/strict";
import { groupNorm } from "../../src/ops/group_norm.ts";
import { groupNormBackward } from "../../src/ops/group_norm_backward.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { TOLERANCE, toleranceFor } from "../helpers/tolerance.ts";
import { dot, groupNorm64, groupNormForward64, numericalGradient } from "../oracle/mod.ts";
import { INVALID, NULLPTR, rnd } from "../helpers/op_inputs.ts";

const F32 = TOLERANCE.float32;

Deno.test("groupNorm: output, mean and rstd (biased) match PyTorch", () => {
  const cases: [number[], number][] = [[[2, 6, 4, 5], 3], [[8, 64, 8, 8], 32], [[3, 4], 2], [
    [2, 6, 2, 2, 2],
    6,
  ]];
  for (const [shape, group] of cases) {
    for (const dtype of ["float32", "float16", "bfloat16"] as DType[]) {
      const [N, C] = shape;
      const HxW = shape.slice(2).reduce((a, b) => a * b, 1);
      const x = rnd(shape, 1, dtype, -2, 3);
      const gamma = rnd([C], 2, dtype, 0.5, 1.5);
      const beta = rnd([C], 3, dtype);
      const eps = 1e-5;
      const r = groupNorm({ input: x, gamma, beta, group, eps });
      assert.equal(r.output.dtype, dtype);
      assert.deepEqual(r.mean.shape, [N, group]);
      const e = groupNorm64(
        x.toFloat64Array(),
        N,
        C,
        HxW,
        group,
        gamma.toFloat64Array(),
        beta.toFloat64Array(),
        eps,
      );
      const tol = toleranceFor(dtype);
      assertClose(r.output, e.output, tol, `${shape} ${dtype} output`);
      assertClose(r.mean, e.mean, tol, `${shape} ${dtype} mean`);
      assertClose(r.rstd, e.rstd, tol, `${shape} ${dtype} rstd`);
    }
  }
});

Deno.test("groupNorm: explicit N/C/HxW, out tensors, non-contiguous input, empty batch", () => {
  const base = rnd([2, 5, 5, 4], 4);
  const x = base.permute([0, 3, 1, 2]); // [2, 4, 5, 5] channels-last
  const output = Tensor.zeros([2, 4, 5, 5]);
  const mean = Tensor.zeros([2, 2]);
  const rstd = Tensor.zeros([2, 2]);
  const r = groupNorm({ input: x, N: 2, C: 4, HxW: 25, group: 2, out: { output, mean, rstd } });
  assert.equal(r.output, output);
  const e = groupNorm64(x.toFloat64Array(), 2, 4, 25, 2, undefined, undefined, 1e-5);
  assertClose(output, e.output, F32, "output");
  assertClose(mean, e.mean, F32, "mean");
  assertClose(rstd, e.rstd, F32, "rstd");
  const empty = groupNorm({ input: Tensor.zeros([0, 4, 3]), group: 2 });
  assert.deepEqual(empty.mean.shape, [0, 2]);
  const noSpatial = groupNorm({ input: Tensor.zeros([2, 4, 0]), group: 2 });
  assert.deepEqual(noSpatial.mean.toArray(), [0, 0, 0, 0]);
  assert.deepEqual(noSpatial.rstd.toArray(), [NaN, NaN, NaN, NaN]);
});

Deno.test("groupNorm: documented error codes", () => {
  const x = rnd([2, 4, 3], 1);
  const ok = { input: x, group: 2 };
  assertAclnnError(() => groupNorm({ ...ok, input: undefined }), NULLPTR, "input");
  for (const name of ["output", "mean", "rstd"] as const) {
    assertAclnnError(() => groupNorm({ ...ok, out: { [name]: null } }), NULLPTR, name);
  }
  assertAclnnError(
    () => groupNorm({ ...ok, input: Tensor.zeros([2, 4], "int32") }),
    INVALID,
    "input",
  );
  assertAclnnError(
    () => groupNorm({ ...ok, gamma: Tensor.ones([4], "float16") }),
    INVALID,
    "gamma",
  );
  assertAclnnError(
    () => groupNorm({ ...ok, out: { mean: Tensor.zeros([2, 2], "bfloat16") } }),
    INVALID,
    "mean",
  );
  assertAclnnError(() => groupNorm({ ...ok, input: Tensor.zeros([8]) }), INVALID, "input");
  assertAclnnError(() => groupNorm({ ...ok, group: 0 }), INVALID, "group");
  assertAclnnError(() => groupNorm({ ...ok, group: 3 }), INVALID, "group");
  assertAclnnError(() => groupNorm({ ...ok, group: 1.5 }), INVALID, "group");
  assertAclnnError(
    () => groupNorm({ input: x } as unknown as Parameters<typeof groupNorm>[0]),
    INVALID,
    "group",
  );
  assertAclnnError(() => groupNorm({ ...ok, eps: 0 }), INVALID, "eps");
  assertAclnnError(() => groupNorm({ ...ok, N: -1 }), INVALID, "N");
  assertAclnnError(() => groupNorm({ ...ok, N: 3 }), INVALID, "N");
  assertAclnnError(() => groupNorm({ ...ok, C: 8 }), INVALID, "C");
  assertAclnnError(() => groupNorm({ ...ok, HxW: 4 }), INVALID, "HxW");
  assertAclnnError(
    () => groupNorm({ ...ok, out: { output: Tensor.zeros([2, 4, 4]) } }),
    INVALID,
    "output",
  );
  assertAclnnError(
    () => groupNorm({ ...ok, out: { rstd: Tensor.zeros([4]) } }),
    INVALID,
    "rstd",
  );
  assertAclnnError(() => groupNorm({ ...ok, beta: Tensor.zeros([2, 2]) }), INVALID, "beta");
  assertAclnnError(() => groupNorm({ ...ok, gamma: Tensor.zeros([5]) }), INVALID, "gamma");
});

Deno.test("groupNorm -> groupNormBackward equals finite differences of the forward", () => {
  const [N, C, HxW, group] = [2, 4, 3, 2];
  const shape = [N, C, HxW];
  const x = rnd(shape, 1, "float32", -1, 2);
  const gamma = rnd([C], 2, "float32", 0.5, 1.5);
  const beta = rnd([C], 3);
  const dy = rnd(shape, 4);
  const eps = 1e-3;
  const fwd = groupNorm({ input: x, gamma, beta, group, eps });
  const grads = groupNormBackward({
    gradOut: dy,
    input: x,
    mean: fwd.mean,
    rstd: fwd.rstd,
    gamma,
    group,
  });
  const dy64 = dy.toFloat64Array();
  const x64 = x.toFloat64Array();
  const g64 = gamma.toFloat64Array();
  const b64 = beta.toFloat64Array();
  const loss = (xv: Float64Array, gv: Float64Array, bv: Float64Array) =>
    dot(dy64, groupNormForward64(xv, N, C, HxW, group, gv, bv, eps).y);
  // float32 outputs at float32 statistics vs exact derivatives.
  const tol = F32;
  assertClose(grads.gradInput!, numericalGradient((v) => loss(v, g64, b64), x64), tol, "dx");
  assertClose(grads.gradGamma!, numericalGradient((v) => loss(x64, v, b64), g64), tol, "dgamma");
  assertClose(grads.gradBeta!, numericalGradient((v) => loss(x64, g64, v), b64), tol, "dbeta");
});
