/**
 * The validation memo of `defineOperator` (src/ops/spec.ts): a call with the same argument
 * values skips validation; arrays count by their elements (a mask written as a literal is a
 * new array per call), so an equal array hits and a changed element misses; a disposed host
 * tensor always misses (validation then refuses it).
 */
import assert from "node:assert/strict";
import { batchNormBackward } from "../../src/ops/batch_norm_backward.ts";
import { defineOperator, type ValidatedCall } from "../../src/ops/spec.ts";
import { cpuBackend } from "../../src/backends/cpu/mod.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError } from "../helpers/assert.ts";

interface Args {
  readonly x: Tensor;
  readonly mask: boolean[];
  readonly eps: number;
}

/** An operator whose validation counts its runs; it allocates and computes nothing. */
function countingOperator(): { call: (a: Args) => unknown; runs: () => number } {
  let runs = 0;
  const call = defineOperator<Args, "y", ValidatedCall<"y">>({
    op: "aclnnMemoProbe",
    args: ["x", "mask", "eps"],
    outputs: { y: () => undefined },
    validate: (a) => {
      runs++;
      return { device: a.x.device, backend: cpuBackend, given: {} };
    },
    run: () => {},
  });
  return { call, runs: () => runs };
}

Deno.test("validation memo: an equal array written anew each call meets the memo", () => {
  const { call, runs } = countingOperator();
  const x = Tensor.zeros([2, 3]);
  for (let i = 0; i < 5; i++) call({ x, mask: [true, false, true], eps: 1e-5 });
  assert.equal(runs(), 1);
});

Deno.test("validation memo: a changed element, scalar or tensor validates again", () => {
  const { call, runs } = countingOperator();
  const x = Tensor.zeros([2, 3]);
  const mask = [true, false, true];
  call({ x, mask, eps: 1e-5 });
  mask[1] = true; // the same array, changed in place
  call({ x, mask, eps: 1e-5 });
  assert.equal(runs(), 2);
  call({ x, mask: [true, true], eps: 1e-5 }); // a shorter array
  assert.equal(runs(), 3);
  call({ x, mask: [true, true], eps: 1e-3 });
  assert.equal(runs(), 4);
  call({ x: Tensor.zeros([2, 3]), mask: [true, true], eps: 1e-3 });
  assert.equal(runs(), 5);
});

Deno.test("validation memo: a disposed input misses the memo and is refused", () => {
  const shape = [2, 3, 4];
  const gradOut = Tensor.random(shape, { seed: 1 });
  const input = Tensor.random(shape, { seed: 2 });
  const saveMean = Tensor.zeros([3]);
  const saveInvstd = Tensor.ones([3]);
  const args = () => ({
    gradOut,
    input,
    saveMean,
    saveInvstd,
    training: true,
    eps: 1e-5,
    outputMask: [true, true, true],
  });
  using first = batchNormBackward(args());
  using second = batchNormBackward(args());
  assert.deepEqual(second.gradInput!.toArray(), first.gradInput!.toArray());
  input.dispose();
  assertAclnnError(() => batchNormBackward(args()), 161002, "input");
});
