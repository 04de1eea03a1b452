/**
 * batchNormElemt (aclnnBatchNormElemt): (x - mean) * invstd * weight + bias in the input's dtype
 * against the float64 oracle, and every documented error code on the exact argument.
 *
 * @module
 */

import assert from "node:assert/strict";
import { batchNormElemt } from "../../src/ops/batch_norm_elemt.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { toleranceFor } from "../helpers/tolerance.ts";
import { batchNormElemt64 } from "../oracle/mod.ts";
import { INVALID, rnd } from "../helpers/op_inputs.ts";

Deno.test("batchNormElemt: (x - mean) * invstd * w + b in input's dtype", () => {
  for (const dtype of ["float32", "float16", "bfloat16"] as DType[]) {
    const shape = [3, 4, 5];
    const x = rnd(shape, 1, dtype);
    const mean = rnd([4], 2, dtype);
    const invstd = rnd([4], 3, dtype, 0.5, 2);
    const w = rnd([4], 4, dtype);
    const b = rnd([4], 5, dtype);
    const y = batchNormElemt({ input: x, weight: w, bias: b, mean, invstd, eps: 1e-5 });
    assert.equal(y.dtype, dtype);
    const e = batchNormElemt64({
      x: x.toFloat64Array(),
      shape,
      mean: mean.toFloat64Array(),
      invstd: invstd.toFloat64Array(),
      weight: w.toFloat64Array(),
      bias: b.toFloat64Array(),
    });
    assertClose(y, e, toleranceFor(dtype), dtype);
  }
  const empty = batchNormElemt({
    input: Tensor.zeros([0, 2]),
    mean: Tensor.zeros([2]),
    invstd: Tensor.ones([2]),
  });
  assert.deepEqual(empty.shape, [0, 2]);
});

Deno.test("batchNormElemt: documented error codes", () => {
  const ok = { input: rnd([2, 3], 1), mean: Tensor.zeros([3]), invstd: Tensor.ones([3]) };
  // CANN returns 161002 (not 161001) for these nulls: CheckBatchNormElemtParams.
  for (const name of ["input", "mean", "invstd"] as const) {
    assertAclnnError(() => batchNormElemt({ ...ok, [name]: undefined }), INVALID, name);
  }
  assertAclnnError(() => batchNormElemt({ ...ok, out: { output: null } }), INVALID, "output");
  // Each tensor is checked against the dtype list on its own (aclnn_batch_norm_elemt.cpp
  // CheckDtypeValid): 16-bit statistics with float32 data are accepted and used as they are.
  const x = rnd([2, 3], 1);
  const y = batchNormElemt({
    input: x,
    mean: Tensor.fromArray([0.5, -0.25, 1], [3], "float16"),
    invstd: Tensor.fromArray([2, 0.5, 3], [3], "bfloat16"),
    weight: Tensor.fromArray([1.5, 1, -1], [3], "float16"),
  });
  const xs = x.toFloat64Array();
  const mean = [0.5, -0.25, 1], invstd = [2, 0.5, 3], w = [1.5, 1, -1];
  assertClose(y, Array.from(xs, (v, i) => (v - mean[i % 3]) * invstd[i % 3] * w[i % 3]));
  assertAclnnError(
    () => batchNormElemt({ ...ok, out: { output: Tensor.zeros([2, 3], "float16") } }),
    INVALID,
    "output",
  );
  assertAclnnError(
    () => batchNormElemt({ ...ok, out: { output: Tensor.zeros([3, 2]) } }),
    INVALID,
    "output",
  );
  assertAclnnError(() => batchNormElemt({ ...ok, bias: Tensor.ones([1, 3]) }), INVALID, "bias");
  assertAclnnError(() => batchNormElemt({ ...ok, invstd: Tensor.ones([4]) }), INVALID, "invstd");
  assertAclnnError(() => batchNormElemt({ ...ok, input: Tensor.zeros([3]) }), INVALID, "input");
  assertAclnnError(
    () => batchNormElemt({ ...ok, input: Tensor.zeros([2, 0]), mean: Tensor.zeros([0]) }),
    INVALID,
    "input",
  );
});
