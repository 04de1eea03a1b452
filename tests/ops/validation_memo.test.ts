/**
 * The validation memo of `defineOperator` (src/ops/spec.ts): a call with the same argument
 * values skips validation; arrays count by their elements (a mask written as a literal is a
 * new array per call), so an equal array hits and a changed element misses; a disposed host
 * tensor, and one whose buffer was detached (`transfer()`) or shrunk (a resizable
 * ArrayBuffer), always misses, and validation refuses it as on a first call (161002).
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

/** A batchNormBackward problem whose `input` views `data` (24 float32 elements, [2, 3, 4]). */
function problemOver(data: Float32Array) {
  const shape = [2, 3, 4];
  data.set(Tensor.random(shape, { seed: 2 }).toFloat64Array());
  return {
    gradOut: Tensor.random(shape, { seed: 1 }),
    input: Tensor.fromData(data, shape),
    saveMean: Tensor.zeros([3]),
    saveInvstd: Tensor.ones([3]),
    training: true,
  };
}

/** The error a call gives, as a first call (a fresh memo: another operator ran between). */
function refusal(args: ReturnType<typeof problemOver>, holds: number): string {
  const e = assertAclnnError(() => batchNormBackward(args), 161002, "input");
  assert.equal(
    e.message,
    "aclnnBatchNormBackward: input is not usable: its view (shape [2, 3, 4], strides " +
      `[12, 4, 1], offset 0) needs 24 elements but its storage holds ${holds} ` +
      "[ACLNN_ERR_PARAM_INVALID 161002]",
  );
  return e.message;
}

Deno.test("validation memo: a storage detached by transfer() is refused on every call", () => {
  const data = new Float32Array(24);
  const args = problemOver(data);
  using first = batchNormBackward(args);
  assert.ok(first.gradWeight!.toArray().every(Number.isFinite));
  data.buffer.transfer(); // e.g. posted to a Worker
  const message = refusal(args, 0);
  // Every later call too, and a fresh view of the same buffer on a first call alike.
  assert.equal(refusal(args, 0), message);
  assert.throws(() => Tensor.fromData(data, [2, 3, 4]), RangeError, "the constructor refuses it");
});

Deno.test("validation memo: a resizable buffer shrunk under a view is refused on every call", () => {
  for (const tracking of [false, true]) {
    const buffer = new ArrayBuffer(24 * 4, { maxByteLength: 64 * 4 });
    const args = problemOver(tracking ? new Float32Array(buffer) : new Float32Array(buffer, 0, 24));
    using first = batchNormBackward(args);
    const want = first.gradWeight!.toArray();
    assert.ok(want.every(Number.isFinite));
    buffer.resize(2 * 4);
    // A length-tracking view keeps the 2 elements left; a fixed-length one is out of bounds.
    refusal(args, tracking ? 2 : 0);
    refusal(args, tracking ? 2 : 0);
    // Grown back, the view holds its elements again (zero-filled beyond the 2 kept).
    buffer.resize(24 * 4);
    using again = batchNormBackward(args);
    assert.ok(again.gradWeight!.toArray().every(Number.isFinite), `tracking ${tracking}`);
  }
});
