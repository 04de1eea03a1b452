/**
 * A first hour without surprises (issue 10): configuration mistakes are errors that name the
 * fix. An unknown ACLNN_NORM_BACKEND lists the valid values; tensors of rank above 8 can be
 * built (as in PyTorch) and the operators refuse them with 161002, as CANN does.
 *
 * @module
 */

import assert from "node:assert/strict";
import { selectDefaultDevice } from "../../src/backends/default_device.ts";
import { batchNormStats } from "../../src/ops/batch_norm_stats.ts";
import { groupNormBackward } from "../../src/ops/group_norm_backward.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError } from "../helpers/assert.ts";

Deno.test("first hour: an unknown ACLNN_NORM_BACKEND is an error listing the valid values", () => {
  const saved = Deno.env.get("ACLNN_NORM_BACKEND");
  try {
    Deno.env.set("ACLNN_NORM_BACKEND", "gpu");
    assert.throws(
      () => selectDefaultDevice(),
      (e: unknown) =>
        e instanceof RangeError &&
        e.message ===
          '$ACLNN_NORM_BACKEND is "gpu", which is not a backend: use one of "auto", "cpu", "npu"',
    );
    Deno.env.set("ACLNN_NORM_BACKEND", "cpu");
    assert.equal(selectDefaultDevice().device, "cpu");
    assert.throws(
      () => selectDefaultDevice({ backend: "CPU" as "cpu" }),
      (e: unknown) =>
        e instanceof RangeError && /the backend option is "CPU", which is not a/.test(e.message),
    );
  } finally {
    if (saved === undefined) Deno.env.delete("ACLNN_NORM_BACKEND");
    else Deno.env.set("ACLNN_NORM_BACKEND", saved);
  }
});

Deno.test("first hour: rank > 8 tensors exist; the operators refuse them with 161002", () => {
  const shape = [2, 3, 1, 1, 1, 1, 1, 1, 2];
  const x = Tensor.random(shape, { seed: 1 });
  assert.equal(x.rank, 9);
  assert.equal(x.permute([8, 7, 6, 5, 4, 3, 2, 1, 0]).shape[0], 2);
  assert.equal(Tensor.zeros(new Array(64).fill(1)).rank, 64);
  assert.throws(() => Tensor.zeros(new Array(65).fill(1)), /rank 65 exceeds the maximum of 64/);
  const e = assertAclnnError(() => batchNormStats({ input: x }), 161002, "input");
  assert.match(e.message, /rank 9 .* must be in 2\.\.8/);
  assertAclnnError(
    () =>
      groupNormBackward({
        gradOut: x,
        input: x,
        mean: Tensor.zeros([2, 1]),
        rstd: Tensor.ones([2, 1]),
        group: 1,
      }),
    161002,
    "gradOut",
  );
});
