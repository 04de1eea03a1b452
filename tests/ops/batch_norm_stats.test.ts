/**
 * batchNormStats (aclnnBatchNormStats): the per-channel mean and 1/sqrt(biased variance + eps)
 * in float32 against the float64 oracle for every data dtype, a non-contiguous input,
 * preallocated outputs, CANN's values for an empty batch, and every documented error code on
 * the exact argument.
 *
 * @module
 */

import assert from "node:assert/strict";
import { batchNormStats } from "../../src/ops/batch_norm_stats.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { TOLERANCE } from "../helpers/tolerance.ts";
import { batchNormStats64 } from "../oracle/mod.ts";
import { INVALID, NULLPTR, rnd } from "../helpers/op_inputs.ts";

const F32 = TOLERANCE.float32;

Deno.test("batchNormStats: mean and 1/sqrt(biased var + eps) per channel, float32 [C]", () => {
  for (const shape of [[2, 3, 4, 5], [8, 64, 8, 8], [5, 7]]) {
    for (const dtype of ["float32", "float16", "bfloat16"] as DType[]) {
      const x = rnd(shape, 1, dtype, -2, 3);
      const eps = 1e-3;
      const r = batchNormStats({ input: x, eps });
      assert.equal(r.mean.dtype, "float32");
      assert.deepEqual(r.invstd.shape, [shape[1]]);
      const e = batchNormStats64(x.toFloat64Array(), shape, eps);
      assertClose(r.mean, e.mean, F32, `${shape} ${dtype} mean`);
      assertClose(r.invstd, e.invstd, F32, `${shape} ${dtype} invstd`);
    }
  }
});

Deno.test("batchNormStats: non-contiguous input, preallocated outputs, empty batch", () => {
  const y = rnd([4, 3, 6, 5], 2).permute([0, 3, 1, 2]); // [4, 5, 3, 6] channels-last view
  assert.ok(!y.isContiguous());
  const x = y.contiguous();
  const mean = Tensor.zeros([5]);
  const invstd = Tensor.zeros([5]);
  const r = batchNormStats({ input: y, out: { mean, invstd } });
  assert.equal(r.mean, mean);
  assert.equal(r.invstd, invstd);
  const e = batchNormStats64(x.toFloat64Array(), x.shape, 1e-5);
  assertClose(mean, e.mean, F32, "mean");
  assertClose(invstd, e.invstd, F32, "invstd");
  const empty = batchNormStats({ input: Tensor.zeros([0, 3, 4]) });
  // What CANN writes for an empty batch (ProcessEmptyTensorWithValue): mean 0, invstd NaN.
  assert.deepEqual(empty.mean.toArray(), [0, 0, 0]);
  assert.deepEqual(empty.invstd.toArray(), [NaN, NaN, NaN]);
});

Deno.test("batchNormStats: documented error codes", () => {
  const x = rnd([2, 3, 4], 1);
  assertAclnnError(() => batchNormStats({ input: undefined }), NULLPTR, "input");
  assertAclnnError(
    () => batchNormStats({ input: Tensor.zeros([2, 3], "int32") }),
    INVALID,
    "input",
  );
  assertAclnnError(() => batchNormStats({ input: Tensor.zeros([6]) }), INVALID, "input");
  assertAclnnError(() => batchNormStats({ input: Tensor.zeros([2, 0, 3]) }), INVALID, "input");
  assertAclnnError(
    () => batchNormStats({ input: x, out: { mean: Tensor.zeros([3], "float16") } }),
    INVALID,
    "mean",
  );
  assertAclnnError(
    () => batchNormStats({ input: x, out: { invstd: Tensor.zeros([4]) } }),
    INVALID,
    "invstd",
  );
  assertAclnnError(
    () => batchNormStats({ input: x, out: { mean: Tensor.zeros([1, 3]) } }),
    INVALID,
    "mean",
  );
  assertAclnnError(() => batchNormStats({ input: x, out: { mean: null } }), NULLPTR, "mean");
  assertAclnnError(
    () => batchNormStats({ input: x, eps: "1e-5" as unknown as number }),
    INVALID,
    "eps",
  );
});
