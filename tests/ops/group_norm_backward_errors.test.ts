/**
 * groupNormBackward's validation (aclnnGroupNormBackward): the missing arguments (161001), the
 * outputs requested but null, the dtype, outputMask, output shape, group, N, C, HxW, numel and
 * rank rules (161002, naming the argument); and the Atlas A2/A3 limits on C and C/group, which
 * are not imposed.
 *
 * @module
 */

import assert from "node:assert/strict";
import { groupNormBackward } from "../../src/ops/group_norm_backward.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError } from "../helpers/assert.ts";
import { INVALID, NULLPTR, rnd } from "../helpers/op_inputs.ts";
import { problem } from "../fixtures/group_norm_backward_problem.ts";

Deno.test("groupNormBackward: missing gradOut/input/mean/rstd is 161001", () => {
  const a = problem(2, 4, 3, 2);
  for (const name of ["gradOut", "input", "mean", "rstd"] as const) {
    for (const value of [undefined, null]) {
      assertAclnnError(() => groupNormBackward({ ...a, [name]: value }), NULLPTR, name);
    }
  }
});

Deno.test("groupNormBackward: a requested output given as null in out is 161002", () => {
  const a = problem(2, 4, 3, 2);
  // CANN's CheckParams maps every CheckMaskNotNull failure to 161002 (its doc says 161001).
  for (const name of ["gradInput", "gradGamma", "gradBeta"] as const) {
    assertAclnnError(() => groupNormBackward({ ...a, out: { [name]: null } }), INVALID, name);
  }
  // Masked off: null is fine.
  const r = groupNormBackward({ ...a, outputMask: [false, true, true], out: { gradInput: null } });
  assert.equal(r.gradInput, null);
});

Deno.test("groupNormBackward: dtype rules are 161002 naming the argument", () => {
  const a = problem(2, 4, 3, 2);
  const i32 = (t: Tensor) => Tensor.fromArray(t.toFloat64Array(), t.shape, "int32");
  const as = (t: Tensor, d: DType) => Tensor.fromArray(t.toFloat64Array(), t.shape, d);
  // gradOut dtype not float32/float16/bfloat16.
  assertAclnnError(
    () => groupNormBackward({ ...a, gradOut: i32(a.gradOut), input: i32(a.input) }),
    INVALID,
    "gradOut",
  );
  // input dtype != gradOut dtype.
  assertAclnnError(
    () => groupNormBackward({ ...a, input: as(a.input, "float16") }),
    INVALID,
    "input",
  );
  // mean neither gradOut's dtype nor float32.
  assertAclnnError(
    () => groupNormBackward({ ...a, mean: as(a.mean, "float16"), rstd: as(a.rstd, "float16") }),
    INVALID,
    "mean",
  );
  const h = problem(2, 4, 3, 2, "float16");
  assertAclnnError(
    () => groupNormBackward({ ...h, mean: as(h.mean, "bfloat16"), rstd: as(h.rstd, "bfloat16") }),
    INVALID,
    "mean",
  );
  assertAclnnError(
    () => groupNormBackward({ ...a, mean: i32(a.mean), rstd: i32(a.rstd) }),
    INVALID,
    "mean",
  );
  // rstd and gamma must have mean's dtype.
  assertAclnnError(() => groupNormBackward({ ...a, rstd: as(a.rstd, "float16") }), INVALID, "rstd");
  assertAclnnError(
    () => groupNormBackward({ ...a, gamma: as(a.gamma, "bfloat16") }),
    INVALID,
    "gamma",
  );
  // Mixed: fp16 data, fp32 stats, but gamma fp16 -> gamma != mean dtype.
  const m = problem(2, 4, 3, 2, "float16", "float32");
  assertAclnnError(
    () => groupNormBackward({ ...m, gamma: as(m.gamma, "float16") }),
    INVALID,
    "gamma",
  );
  // Outputs: gradInput in gradOut's dtype, gradGamma/gradBeta in mean's dtype.
  assertAclnnError(
    () => groupNormBackward({ ...a, out: { gradInput: Tensor.zeros([2, 4, 3], "float16") } }),
    INVALID,
    "gradInput",
  );
  assertAclnnError(
    () => groupNormBackward({ ...m, out: { gradGamma: Tensor.zeros([4], "float16") } }),
    INVALID,
    "gradGamma",
  );
  assertAclnnError(
    () => groupNormBackward({ ...m, out: { gradBeta: Tensor.zeros([4], "bfloat16") } }),
    INVALID,
    "gradBeta",
  );
  // A non-tensor argument.
  assertAclnnError(
    () => groupNormBackward({ ...a, gamma: {} as unknown as Tensor }),
    INVALID,
    "gamma",
  );
});

Deno.test("groupNormBackward: outputMask rules are 161002", () => {
  const a = problem(2, 4, 3, 2);
  for (const outputMask of [[true, true], [true, true, true, true], []]) {
    assertAclnnError(() => groupNormBackward({ ...a, outputMask }), INVALID, "outputMask");
  }
  assertAclnnError(
    () => groupNormBackward({ ...a, outputMask: "yes" as unknown as boolean[] }),
    INVALID,
    "outputMask",
  );
  assertAclnnError(
    () => groupNormBackward({ ...a, outputMask: [true, 1, true] as unknown as boolean[] }),
    INVALID,
    "outputMask.1",
  );
});

Deno.test("groupNormBackward: output shape rules are 161002 naming the output", () => {
  const a = problem(2, 4, 3, 2);
  // gradInput shape must equal input's (same numel is not enough).
  assertAclnnError(
    () => groupNormBackward({ ...a, out: { gradInput: Tensor.zeros([2, 12]) } }),
    INVALID,
    "gradInput",
  );
  // gradGamma/gradBeta shape must equal gamma's.
  for (const name of ["gradGamma", "gradBeta"] as const) {
    assertAclnnError(
      () => groupNormBackward({ ...a, out: { [name]: Tensor.zeros([1, 4]) } }),
      INVALID,
      name,
    );
    assertAclnnError(
      () => groupNormBackward({ ...a, out: { [name]: Tensor.zeros([5]) } }),
      INVALID,
      name,
    );
    // Without gamma: numel must be C (any shape).
    assertAclnnError(
      () => groupNormBackward({ ...a, gamma: undefined, out: { [name]: Tensor.zeros([3]) } }),
      INVALID,
      name,
    );
    const r = groupNormBackward({ ...a, gamma: undefined, out: { [name]: Tensor.zeros([2, 2]) } });
    assert.deepEqual(r[name]?.shape, [2, 2]);
  }
  // gamma of shape [1, 4]: outputs allocated with that shape, and [4] is rejected.
  const g2 = a.gamma.view([1, 4]);
  assert.deepEqual(groupNormBackward({ ...a, gamma: g2 }).gradGamma?.shape, [1, 4]);
  assertAclnnError(
    () => groupNormBackward({ ...a, gamma: g2, out: { gradBeta: Tensor.zeros([4]) } }),
    INVALID,
    "gradBeta",
  );
});

Deno.test("groupNormBackward: group, N, C, HxW and numel rules are 161002", () => {
  const a = problem(2, 4, 3, 2);
  for (const group of [0, -1]) {
    assertAclnnError(() => groupNormBackward({ ...a, group }), INVALID, "group");
  }
  // C % group != 0.
  assertAclnnError(() => groupNormBackward({ ...a, group: 3 }), INVALID, "group");
  // group not an integer / missing.
  assertAclnnError(() => groupNormBackward({ ...a, group: 1.5 }), INVALID, "group");
  assertAclnnError(
    () => groupNormBackward({ ...a, group: undefined as unknown as number }),
    INVALID,
    "group",
  );
  assertAclnnError(
    () => groupNormBackward({ ...a, group: "2" as unknown as number }),
    INVALID,
    "group",
  );
  // N, C, HxW must be integers >= 0.
  for (const name of ["N", "C", "HxW"] as const) {
    assertAclnnError(() => groupNormBackward({ ...a, [name]: -2 }), INVALID, name);
    assertAclnnError(() => groupNormBackward({ ...a, [name]: 2.5 }), INVALID, name);
  }
  // numel(input) != N*C*HxW (explicit HxW that does not fit).
  assertAclnnError(() => groupNormBackward({ ...a, HxW: 4 }), INVALID, "input");
  // numel(gradOut) != N*C*HxW.
  assertAclnnError(
    () => groupNormBackward({ ...a, gradOut: rnd([2, 4, 4], 1) }),
    INVALID,
    "gradOut",
  );
  // mean / rstd numel != N*group.
  assertAclnnError(() => groupNormBackward({ ...a, mean: Tensor.zeros([2, 1]) }), INVALID, "mean");
  assertAclnnError(() => groupNormBackward({ ...a, rstd: Tensor.zeros([5]) }), INVALID, "rstd");
  // gamma present with numel != C.
  assertAclnnError(() => groupNormBackward({ ...a, gamma: Tensor.ones([3]) }), INVALID, "gamma");
  // N/C/HxW cannot be inferred from an input of rank < 2.
  const flat = { ...a, input: a.input.reshape([24]), gradOut: a.gradOut.reshape([24]) };
  assertAclnnError(() => groupNormBackward({ ...flat, C: 4, HxW: 3 }), INVALID, "N");
  assertAclnnError(() => groupNormBackward({ ...flat, N: 2, HxW: 3 }), INVALID, "C");
  assertAclnnError(() => groupNormBackward({ ...flat, N: 2, C: 4 }), INVALID, "HxW");
  const scalar = { ...a, input: Tensor.fromArray([1], []), gradOut: Tensor.fromArray([1], []) };
  assertAclnnError(() => groupNormBackward(scalar), INVALID, "N");
});

Deno.test("groupNormBackward: a rank-9 tensor in any argument is refused with 161002 naming it", () => {
  // Tensors go up to rank 64 (issue 10); the operator allows ranks 0-8, as CANN does. The call
  // is made (not just the tensor built), once per argument, the others staying valid.
  const a = problem(2, 4, 3, 2);
  const nine = (t: Tensor) => t.reshape([...t.shape, ...new Array(9 - t.rank).fill(1)]);
  assert.equal(nine(a.gradOut).rank, 9);
  for (const name of ["gradOut", "input", "mean", "rstd", "gamma"] as const) {
    const e = assertAclnnError(
      () => groupNormBackward({ ...a, [name]: nine(a[name]) }),
      INVALID,
      name,
    );
    assert.match(e.message, /rank 9/, e.message);
  }
  for (const name of ["gradInput", "gradGamma", "gradBeta"] as const) {
    const shape = name === "gradInput" ? a.input.shape : a.gamma.shape;
    const out = { [name]: nine(Tensor.zeros(shape)) };
    assertAclnnError(() => groupNormBackward({ ...a, out }), INVALID, name);
  }
});

Deno.test("groupNormBackward: the Atlas A2/A3 limits (C <= 240000, C/group <= 8000) are not imposed", () => {
  const run = (C: number) => {
    const x = Tensor.zeros([1, C, 1]);
    return groupNormBackward({
      gradOut: Tensor.ones([1, C, 1]),
      input: x,
      mean: Tensor.zeros([1]),
      rstd: Tensor.ones([1]),
      group: 1,
      outputMask: [false, false, true],
    });
  };
  assert.equal(run(8001).gradBeta?.numel, 8001);
  const r = run(240001);
  assert.equal(r.gradBeta?.numel, 240001);
  assert.equal(r.gradBeta?.toFloat64Array()[240000], 1);
});
