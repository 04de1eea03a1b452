/**
 * batchNormBackward's validation (aclnnBatchNormBackward): the missing arguments and outputs
 * (161001), the dtype, rank, shape, output and scalar rules (161002, naming the argument), and
 * outputs masked off, which are neither validated nor written.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  batchNormBackward,
  type BatchNormBackwardArgs,
} from "../../src/ops/batch_norm_backward.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { INVALID, NULLPTR, rnd } from "../helpers/op_inputs.ts";
import { toleranceFor } from "../helpers/tolerance.ts";
import { expected, problem } from "../fixtures/batch_norm_backward_problem.ts";

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
