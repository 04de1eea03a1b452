/**
 * `deno bench bench/memo.bench.ts`: the validation memo as users write calls. A small
 * batchNormBackward ([4,16,8,8], float32, CPU) with its `outputMask` written as a literal
 * (a new array per call), with one array kept across calls (the baseline), and without a
 * mask: the memo compares arrays by their elements, so the three take the same time. The last
 * row alternates two argument sets, so every call misses the memo (it holds the last call)
 * and validates again: what the memo saves. A hit still checks that every host tensor's
 * storage holds its view (not detached, not shrunk, not disposed), and every call refuses an
 * unknown field: the "lookup" group times those two checks alone.
 *
 * @module
 */

import { batchNormBackward, Tensor } from "../mod.ts";
import { checkKnownNames } from "../src/ops/known_names.ts";
import { ValidationMemo } from "../src/ops/memo.ts";

const shape = [4, 16, 8, 8];
const C = shape[1];
const args = {
  gradOut: Tensor.random(shape, { seed: 1 }),
  input: Tensor.random(shape, { seed: 2 }),
  weight: Tensor.random([C], { seed: 3 }),
  saveMean: Tensor.random([C], { seed: 4, low: -0.1, high: 0.1 }),
  saveInvstd: Tensor.random([C], { seed: 5, low: 0.5, high: 2 }),
  training: true,
  eps: 1e-5,
};
const kept: [boolean, boolean, boolean] = [true, true, true];
const other = { ...args, input: Tensor.random(shape, { seed: 6 }) };
let flip = false;

Deno.bench({
  name: "outputMask: one array kept across calls",
  group: "memo",
  baseline: true,
  fn() {
    using _ = batchNormBackward({ ...args, outputMask: kept });
  },
});

Deno.bench({
  name: "outputMask: a literal per call",
  group: "memo",
  fn() {
    using _ = batchNormBackward({ ...args, outputMask: [true, true, true] });
  },
});

Deno.bench({
  name: "no outputMask (the default)",
  group: "memo",
  fn() {
    using _ = batchNormBackward(args);
  },
});

Deno.bench({
  name: "memo missed: two argument sets alternating",
  group: "memo",
  fn() {
    flip = !flip;
    using _ = batchNormBackward(flip ? args : other);
  },
});

// The memo's lookup alone, with the keys batchNormBackward makes for `args` and a literal mask:
// a hit compares 17 keys and checks the storage of the 5 tensors among them.
const memo = new ValidationMemo<number>();
const keys = [
  args.gradOut,
  args.input,
  args.weight,
  undefined,
  undefined,
  args.saveMean,
  args.saveInvstd,
  true,
  1e-5,
  Array,
  3,
  true,
  true,
  true,
  undefined,
  undefined,
  undefined,
];
memo.set(keys, 1);

Deno.bench({
  name: "ValidationMemo.get: a hit (17 keys, 5 host tensors)",
  group: "lookup",
  fn() {
    if (memo.get(keys) !== 1) throw new Error("the memo missed");
  },
});

// The unknown-name check every call makes (src/ops/known_names.ts), on the same call's fields.
const names: ReadonlySet<string> = new Set([
  "gradOut",
  "input",
  "weight",
  "runningMean",
  "runningVar",
  "saveMean",
  "saveInvstd",
  "training",
  "eps",
  "outputMask",
  "out",
]);
const call = { ...args, outputMask: kept };

Deno.bench({
  name: "checkKnownNames: the call's 8 fields",
  group: "lookup",
  fn() {
    checkKnownNames("aclnnBatchNormBackward", call, names);
  },
});
