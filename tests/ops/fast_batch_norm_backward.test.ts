/**
 * fastBatchNormBackward (aclnnFastBatchNormBackward) on the CPU and on the software CANN playing
 * an Atlas A2 (its only product): gradients against the float64 oracle in both modes and every
 * dtype (per-channel tensors of any float dtype, as CANN casts them to float); the masks; the
 * empty path (success before every other check); the codes in CANN's check order; the refusal on
 * Ascend 950 and Atlas A3 naming the SoC.
 *
 * @module
 */

import assert from "node:assert/strict";
import { batchNormBackward } from "../../src/ops/batch_norm_backward.ts";
import { fastBatchNormBackward } from "../../src/ops/fast_batch_norm_backward.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, type BackendContext, forEachBackend, on } from "../helpers/backends.ts";
import { looser, toleranceFor } from "../helpers/tolerance.ts";
import { expected, problem } from "../fixtures/batch_norm_backward_problem.ts";
import { rnd } from "../helpers/op_inputs.ts";

const NULLPTR = 161001;
const INVALID = 161002;
const INNER_NULLPTR = 561103;
const A2 = { socs: ["Ascend910B4"] };

type Problem = ReturnType<typeof problem>;

function onDevice(p: Problem, ctx: BackendContext): Problem {
  const d = ctx.device;
  return Object.fromEntries(Object.entries(p).map(([k, t]) => [k, on(t, d)])) as Problem;
}

const CASES: { shape: number[]; dtype: DType; stat?: DType }[] = [
  { shape: [4, 3, 5], dtype: "float32" },
  { shape: [6, 2], dtype: "float32" },
  { shape: [2, 3, 2, 2, 2, 2], dtype: "float32" }, // rank 6: CANN reshapes to 5-D
  { shape: [3, 4, 3, 3], dtype: "float16" },
  { shape: [3, 4, 3, 3], dtype: "bfloat16" },
  { shape: [2, 3, 4], dtype: "float16", stat: "bfloat16" },
  { shape: [2, 3, 4], dtype: "bfloat16", stat: "float32" },
];

forEachBackend("fastBatchNormBackward: gradients against the float64 oracle", (ctx) => {
  for (const c of CASES) {
    const p = problem(c.shape, c.dtype, c.stat);
    for (const training of [true, false]) {
      const what = `${ctx.label} ${c.dtype}/${c.stat ?? c.dtype} [${c.shape}] training=${training}`;
      const r = fastBatchNormBackward({ ...onDevice(p, ctx), training, version: 1 });
      const e = expected(p, training);
      const tol = looser(toleranceFor(c.dtype), toleranceFor(c.stat ?? c.dtype));
      assert.equal(r.gradInput!.dtype, c.dtype, what);
      assert.equal(r.gradWeight!.dtype, c.stat ?? c.dtype, what);
      assertClose(r.gradInput!, e.gi, tol, `${what} gradInput`);
      assertClose(r.gradWeight!, e.gw, tol, `${what} gradWeight`);
      assertClose(r.gradBias!, e.gb, tol, `${what} gradBias`);
      r[Symbol.dispose]();
    }
  }
}, A2);

Deno.test("fastBatchNormBackward: the CPU computes batchNormBackward's bits", () => {
  for (const c of CASES.filter((c) => !c.stat)) {
    const p = problem(c.shape, c.dtype);
    for (const training of [true, false]) {
      const fast = fastBatchNormBackward({ ...p, training });
      const slow = batchNormBackward({ ...p, training });
      for (const k of ["gradInput", "gradWeight", "gradBias"] as const) {
        assert.deepEqual(fast[k]!.toArray(), slow[k]!.toArray(), `${c.dtype} ${k} ${training}`);
      }
    }
  }
});

forEachBackend("fastBatchNormBackward: masks, defaults and given outputs", (ctx) => {
  const d = ctx.device;
  const p = onDevice(problem([3, 2, 4], "float32"), ctx);
  const only = fastBatchNormBackward({ ...p, training: true, outputMask: [false, true, false] });
  assert.equal(only.gradInput, null);
  assert.equal(only.gradBias, null);
  assertClose(only.gradWeight!, expected(problem([3, 2, 4], "float32"), true).gw);
  // Entries beyond the third are not read (CANN reads (*outputMask)[0..2]).
  const four = fastBatchNormBackward({
    ...p,
    training: false,
    outputMask: [true, true, true, false],
  });
  assert.ok(four.gradInput && four.gradWeight && four.gradBias);
  // Absent statistics: weight 1, runningMean 0, runningVar 1 (FastBatchNormBackwardPrepare).
  const x = Tensor.fromArray([1, 2, 3, 4, 5, 6, 7, 8], [2, 2, 2]);
  const r = fastBatchNormBackward({
    gradOut: on(Tensor.ones([2, 2, 2]), d),
    input: on(x, d),
    training: false,
  });
  assert.deepEqual(r.gradBias!.toArray(), [4, 4]);
  const inv = 1 / Math.sqrt(1 + 1e-5);
  assertClose(r.gradInput!, new Array(8).fill(inv));
  // Given outputs (float16 gradWeight for float32 data: CANN casts to the output's dtype).
  const gradWeight = on(Tensor.full([2], 9, "float16"), d);
  const gradBias = on(Tensor.full([2], 9), d);
  const g = fastBatchNormBackward({ ...p, training: true, out: { gradWeight, gradBias } });
  assert.equal(g.gradWeight, gradWeight);
  const e = expected(problem([3, 2, 4], "float32"), true);
  assertClose(gradWeight, e.gw, toleranceFor("float16"));
  assertClose(gradBias, e.gb);
}, A2);

forEachBackend("fastBatchNormBackward: an empty input succeeds before any other check", (ctx) => {
  const d = ctx.device;
  const gradWeight = on(Tensor.full([3], 7), d);
  const gradBias = on(Tensor.full([3], 7, "float16"), d);
  const empty = on(Tensor.zeros([0, 3, 4]), d);
  // An empty outputMask (161001 otherwise) and a float16 input: nothing is checked.
  const none = fastBatchNormBackward({
    gradOut: empty,
    input: on(Tensor.zeros([0, 3, 4], "float16"), d),
    training: true,
    outputMask: [],
  });
  assert.deepEqual([none.gradInput, none.gradWeight, none.gradBias], [null, null, null]);
  // A weight of the wrong length: not checked.
  fastBatchNormBackward({
    gradOut: empty,
    input: empty,
    weight: on(Tensor.ones([5]), d),
    training: true,
    out: { gradInput: on(Tensor.zeros([0, 3, 4]), d), gradWeight, gradBias },
  });
  // Reductions over no element: zeros (CANN itself writes nothing).
  assert.deepEqual(gradWeight.toArray(), [0, 0, 0]);
  assert.deepEqual(gradBias.toArray(), [0, 0, 0]);
  const r = fastBatchNormBackward({
    gradOut: on(Tensor.zeros([2, 3, 0]), d),
    input: on(Tensor.zeros([2, 3, 0], "float16"), d),
    training: false,
  });
  assert.deepEqual([r.gradInput!.shape, r.gradWeight!.toArray()], [[2, 3, 0], [0, 0, 0]]);
}, A2);

forEachBackend("fastBatchNormBackward: errors in CANN's check order", (ctx) => {
  const d = ctx.device;
  const p = onDevice(problem([2, 3, 4], "float32"), ctx);
  const f = (a: Partial<Parameters<typeof fastBatchNormBackward>[0]>) => () =>
    fastBatchNormBackward({ ...p, training: true, ...a });
  // CheckInputNotNull.
  assertAclnnError(f({ gradOut: undefined }), NULLPTR, "gradOut");
  assertAclnnError(f({ input: null }), NULLPTR, "input");
  // CheckMaskNotNull (all 161001), before the dtypes: a float64-free wrong dtype comes later.
  const int = on(Tensor.zeros([3], "int32" as DType), d);
  assertAclnnError(f({ outputMask: null as never, weight: int }), NULLPTR, "outputMask");
  assertAclnnError(f({ outputMask: [], weight: int }), NULLPTR, "outputMask");
  assertAclnnError(f({ outputMask: [true, true] }), NULLPTR, "outputMask");
  assertAclnnError(f({ out: { gradBias: null }, weight: int }), NULLPTR, "gradBias");
  // CheckDtypeValid, then the outputs', then the statistics'.
  const half = (shape: number[]) => on(Tensor.zeros(shape, "float16"), d);
  assertAclnnError(f({ input: half([2, 3, 4]) }), INVALID, "input");
  assertAclnnError(f({ out: { gradWeight: int }, weight: int }), INVALID, "gradWeight");
  assertAclnnError(f({ saveInvstd: int }), INVALID, "saveInvstd");
  // CheckShape, then CheckOtherShape.
  assertAclnnError(f({ gradOut: on(rnd([2, 3, 5], 9), d) }), INVALID, "gradOut");
  assertAclnnError(
    f({ input: on(rnd([6], 9), d), gradOut: on(rnd([6], 9), d) }),
    INVALID,
    "input",
  );
  assertAclnnError(f({ out: { gradInput: on(Tensor.zeros([2, 12]), d) } }), INVALID, "gradInput");
  assertAclnnError(f({ runningVar: on(Tensor.ones([1, 3]), d) }), INVALID, "runningVar");
  // Not checked by CANN, read by its kernel in training: C saved statistics.
  assertAclnnError(f({ saveMean: on(Tensor.zeros([2]), d) }), INVALID, "saveMean");
  fastBatchNormBackward({ ...p, saveMean: on(Tensor.zeros([2]), d), training: false }).gradInput!
    .dispose();
  // l0op::ViewCopy of the results: 561103.
  assertAclnnError(f({ out: { gradInput: half([2, 3, 4]) } }), INNER_NULLPTR, "gradInput");
  assertAclnnError(f({ out: { gradBias: on(Tensor.zeros([4]), d) } }), INNER_NULLPTR, "gradBias");
  // version: a C int.
  assertAclnnError(f({ version: 0.5 }), INVALID, "version");
  assertAclnnError(f({ version: 2 ** 31 }), INVALID, "version");
}, A2);

forEachBackend("fastBatchNormBackward: refused off Atlas A2, naming the SoC", (ctx) => {
  const p = onDevice(problem([2, 3, 4], "float32"), ctx);
  const e = assertChipRefuses(ctx, () => fastBatchNormBackward({ ...p, training: true }), "device");
  assert.match(e.message, /aclnnFastBatchNormBackward does not support/);
}, { cpu: false, socs: ["Ascend950PR_9599", "Ascend910_9391"] });
