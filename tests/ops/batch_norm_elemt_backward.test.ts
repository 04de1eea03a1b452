/**
 * batchNormElemtBackward (aclnnBatchNormElemtBackward): batchNormBackward's training gradInput
 * from the reduced sums (float32 and int32 counters), its dtypes, an empty input, out tensors,
 * and every documented error code on the exact argument.
 *
 * @module
 */

import assert from "node:assert/strict";
import { batchNorm } from "../../src/ops/batch_norm.ts";
import { batchNormBackward } from "../../src/ops/batch_norm_backward.ts";
import { batchNormElemtBackward } from "../../src/ops/batch_norm_elemt_backward.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { betweenKernels, TOLERANCE, toleranceFor } from "../helpers/tolerance.ts";
import { batchNormReduceBackward64 } from "../oracle/mod.ts";
import { INVALID, NULLPTR, rnd } from "../helpers/op_inputs.ts";

const F32 = TOLERANCE.float32;

Deno.test("batchNormElemtBackward: equals batchNormBackward's training gradInput", () => {
  for (const shape of [[2, 3, 4, 5], [8, 64, 8, 8]]) {
    const C = shape[1];
    const x = rnd(shape, 1, "float32", -2, 3);
    const dy = rnd(shape, 2);
    const w = rnd([C], 3, "float32", 0.5, 1.5);
    const fwd = batchNorm({ input: x, weight: w, training: true });
    const full = batchNormBackward({
      gradOut: dy,
      input: x,
      weight: w,
      saveMean: fwd.saveMean,
      saveInvstd: fwd.saveInvstd,
      training: true,
    });
    // The sums batchNormReduceBackward gives, from the oracle.
    const xs = x.toFloat64Array();
    const { sumDy, sumDyXmu } = batchNormReduceBackward64(
      dy.toFloat64Array(),
      xs,
      shape,
      fwd.saveMean.toFloat64Array(),
      fwd.saveInvstd.toFloat64Array(),
    );
    const M = xs.length / C;
    for (
      const counter of [
        Tensor.fromArray([M], [1], "int32"),
        Tensor.fromArray([M / 2, M / 2], [2], "float32"),
        Tensor.fromArray([M], [1, 1], "float16"),
      ]
    ) {
      const gi = batchNormElemtBackward({
        gradOut: dy,
        input: x,
        mean: fwd.saveMean,
        invstd: fwd.saveInvstd,
        weight: w,
        sumDy: Tensor.fromArray(sumDy, [C]),
        sumDyXmu: Tensor.fromArray(sumDyXmu, [C]),
        counter,
      });
      assertClose(gi, full.gradInput!, betweenKernels(F32), `${shape} ${counter.dtype}`);
    }
  }
});

Deno.test("batchNormElemtBackward: dtypes, empty input, out", () => {
  for (const dtype of ["float16", "bfloat16"] as DType[]) {
    const x = rnd([4, 3, 2], 1, dtype);
    const gi = batchNormElemtBackward({
      gradOut: rnd([4, 3, 2], 2, dtype),
      input: x,
      mean: Tensor.zeros([3]),
      invstd: Tensor.ones([3]),
      sumDy: Tensor.zeros([3]),
      sumDyXmu: Tensor.zeros([3]),
      counter: Tensor.fromArray([8], [1], "int32"),
    });
    assert.equal(gi.dtype, dtype);
    assertClose(gi, rnd([4, 3, 2], 2, dtype), toleranceFor(dtype)); // w = invstd = 1, sums 0
  }
  const out = Tensor.full([0, 3], 7);
  const gi = batchNormElemtBackward({
    gradOut: Tensor.zeros([0, 3]),
    input: Tensor.zeros([0, 3]),
    mean: Tensor.zeros([3]),
    invstd: Tensor.ones([3]),
    sumDy: Tensor.zeros([3]),
    sumDyXmu: Tensor.zeros([3]),
    counter: Tensor.zeros([1], "int32"),
    out: { gradInput: out },
  });
  assert.equal(gi, out);
});

Deno.test("batchNormElemtBackward: documented error codes", () => {
  const ok = {
    gradOut: rnd([2, 3, 2], 1),
    input: rnd([2, 3, 2], 2),
    mean: Tensor.zeros([3]),
    invstd: Tensor.ones([3]),
    sumDy: Tensor.zeros([3]),
    sumDyXmu: Tensor.zeros([3]),
    counter: Tensor.fromArray([4], [1], "int32"),
  };
  batchNormElemtBackward(ok);
  for (
    const name of ["gradOut", "input", "mean", "invstd", "sumDy", "sumDyXmu", "counter"] as const
  ) {
    assertAclnnError(() => batchNormElemtBackward({ ...ok, [name]: null }), NULLPTR, name);
  }
  assertAclnnError(
    () => batchNormElemtBackward({ ...ok, out: { gradInput: null } }),
    NULLPTR,
    "gradInput",
  );
  assertAclnnError(
    () => batchNormElemtBackward({ ...ok, counter: Tensor.ones([1], "bfloat16") }),
    INVALID,
    "counter",
  );
  assertAclnnError(
    () => batchNormElemtBackward({ ...ok, sumDy: Tensor.zeros([3], "int32") }),
    INVALID,
    "sumDy",
  );
  assertAclnnError(
    () => batchNormElemtBackward({ ...ok, weight: Tensor.zeros([3], "int32") }),
    INVALID,
    "weight",
  );
  assertAclnnError(
    () => batchNormElemtBackward({ ...ok, input: Tensor.zeros([12]), gradOut: Tensor.zeros([12]) }),
    INVALID,
    "input",
  );
  assertAclnnError(
    () =>
      batchNormElemtBackward({
        ...ok,
        input: Tensor.zeros([2, 0, 2]),
        gradOut: Tensor.zeros([2, 0, 2]),
      }),
    INVALID,
    "input",
  );
  assertAclnnError(
    () => batchNormElemtBackward({ ...ok, gradOut: Tensor.zeros([2, 3, 3]) }),
    INVALID,
    "gradOut",
  );
  assertAclnnError(
    () => batchNormElemtBackward({ ...ok, out: { gradInput: Tensor.zeros([2, 6]) } }),
    INVALID,
    "gradInput",
  );
  for (const name of ["mean", "invstd", "sumDy", "sumDyXmu", "weight"] as const) {
    assertAclnnError(
      () => batchNormElemtBackward({ ...ok, [name]: Tensor.zeros([4]) }),
      INVALID,
      name,
    );
  }
});
