/**
 * The last parse of each scalar schema (src/ops/scalar_memo.ts, used by `parseScalars`): equal
 * primitive and array values give the last result again without parsing, as a fresh copy;
 * arrays count by their elements and are copied in and out; other values always parse; a
 * failed parse is never remembered. Through an operator: a mask changed in place and an
 * invalid eps after a valid one are seen, with new tensors on every call (the validation
 * memo misses).
 */
import assert from "node:assert/strict";
import { z } from "../../src/ops/zod.ts";
import { ScalarMemo } from "../../src/ops/scalar_memo.ts";
import { parseScalars } from "../../src/ops/validate.ts";
import { batchNormBackward } from "../../src/ops/batch_norm_backward.ts";
import { batchNorm } from "../../src/ops/batch_norm.ts";
import { ACLNN_ERR_PARAM_INVALID } from "../../src/errors.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError } from "../helpers/assert.ts";

/** A schema whose parses are counted (a refinement runs on every parse). */
function countingSchema() {
  let parses = 0;
  const schema = z.object({
    eps: z.number().gt(0).default(1e-5),
    mask: z.array(z.boolean()).default([true, true]),
  }).refine(() => ++parses > 0);
  return { schema, parses: () => parses };
}

Deno.test("scalar memo: equal values parse once; the result is a fresh copy each time", () => {
  const { schema, parses } = countingSchema();
  const first = parseScalars("op", schema, { eps: 0.5, mask: [true, false] });
  const again = parseScalars("op", schema, { eps: 0.5, mask: [true, false] });
  assert.equal(parses(), 1);
  assert.deepEqual(again, { eps: 0.5, mask: [true, false] });
  assert.notEqual(again, first);
  assert.notEqual(again.mask, first.mask);
  // Changing what came back changes nothing remembered.
  again.mask[0] = false;
  assert.deepEqual(parseScalars("op", schema, { eps: 0.5, mask: [true, false] }).mask, [
    true,
    false,
  ]);
  assert.equal(parses(), 1);
});

Deno.test("scalar memo: another value, element, key order or missing key parses again", () => {
  const { schema, parses } = countingSchema();
  parseScalars("op", schema, { eps: 0.5, mask: [true, false] });
  assert.deepEqual(parseScalars("op", schema, { eps: 0.25, mask: [true, false] }).eps, 0.25);
  assert.deepEqual(parseScalars("op", schema, { eps: 0.25, mask: [false, false] }).mask, [
    false,
    false,
  ]);
  assert.deepEqual(parseScalars("op", schema, { mask: [false, false], eps: 0.25 }).eps, 0.25);
  assert.deepEqual(parseScalars("op", schema, { eps: 0.25 }).mask, [true, true]);
  assert.equal(parses(), 5);
});

Deno.test("scalar memo: an array changed in place after the call is a new value", () => {
  const { schema, parses } = countingSchema();
  const mask = [true, false];
  parseScalars("op", schema, { eps: 0.5, mask });
  mask[1] = true;
  assert.deepEqual(parseScalars("op", schema, { eps: 0.5, mask }).mask, [true, true]);
  assert.equal(parses(), 2);
});

Deno.test("scalar memo: a failed parse is thrown every time; only successes are remembered", () => {
  const { schema, parses } = countingSchema();
  parseScalars("op", schema, { eps: 0 + 1, mask: [true] });
  for (let i = 0; i < 2; i++) {
    assertAclnnError(
      () => parseScalars("op", schema, { eps: -0, mask: [true] }),
      ACLNN_ERR_PARAM_INVALID,
      "eps",
    );
    assertAclnnError(
      () => parseScalars("op", schema, { eps: NaN, mask: [true] }),
      ACLNN_ERR_PARAM_INVALID,
      "eps",
    );
  }
  // Only the successful parse was remembered: it still comes back unparsed.
  const before = parses();
  assert.deepEqual(parseScalars("op", schema, { eps: 1, mask: [true] }), { eps: 1, mask: [true] });
  assert.equal(parses(), before);
});

Deno.test("scalar memo: -0 is not 0 and NaN is NaN (Object.is)", () => {
  const memo = new ScalarMemo<object>();
  const schema = {};
  memo.set(schema, { momentum: 0, eps: NaN, mask: [0] }, { momentum: 0, eps: NaN, mask: [0] });
  assert.equal(memo.get(schema, { momentum: -0, eps: NaN, mask: [0] }), undefined);
  assert.equal(memo.get(schema, { momentum: 0, eps: NaN, mask: [-0] }), undefined);
  assert.deepEqual(memo.get(schema, { momentum: 0, eps: NaN, mask: [0] }), {
    momentum: 0,
    eps: NaN,
    mask: [0],
  });
});

Deno.test("scalar memo: values that are objects are never remembered", () => {
  const memo = new ScalarMemo<object>();
  const schema = {};
  memo.set(schema, { eps: 1, options: { a: 1 } }, { eps: 1, options: { a: 1 } });
  assert.equal(memo.get(schema, { eps: 1, options: { a: 1 } }), undefined);
  memo.set(schema, { eps: 1 }, { eps: 1, nested: [[1]] });
  assert.equal(memo.get(schema, { eps: 1 }), undefined);
  memo.set(schema, { eps: 1 }, { eps: 1 });
  assert.deepEqual(memo.get(schema, { eps: 1 }), { eps: 1 });
  assert.equal(memo.get(schema, [1]), undefined);
  assert.equal(memo.get({}, { eps: 1 }), undefined);
});

Deno.test("scalar memo: new tensors each call, and a mask changed in place is seen", () => {
  const shape = [4, 3, 2, 2];
  const outputMask = [true, true, true];
  const call = () => {
    const input = Tensor.random(shape, { seed: 1 });
    const f = batchNorm({ input, training: true, eps: 1e-5 });
    return batchNormBackward({
      gradOut: Tensor.random(shape, { seed: 2 }),
      input,
      weight: Tensor.ones([3]),
      saveMean: f.saveMean,
      saveInvstd: f.saveInvstd,
      training: true,
      eps: 1e-5,
      outputMask,
    });
  };
  const all = call();
  assert.notEqual(all.gradWeight, null);
  outputMask[1] = false;
  const masked = call();
  assert.equal(masked.gradWeight, null);
  assert.notEqual(masked.gradInput, null);
  assert.deepEqual(masked.gradInput!.toArray(), all.gradInput!.toArray());
});

Deno.test("scalar memo: an invalid eps after valid calls is refused (161002) every time", () => {
  const input = Tensor.random([4, 3, 2, 2], { seed: 1 });
  batchNorm({ input, training: true, eps: 1e-5 });
  for (let i = 0; i < 2; i++) {
    const e = assertAclnnError(
      () => batchNorm({ input: Tensor.random([4, 3, 2, 2]), training: true, eps: -1 }),
      ACLNN_ERR_PARAM_INVALID,
      "eps",
    );
    assert.match(e.message, /aclnnBatchNorm: eps must be greater than 0/);
  }
});
