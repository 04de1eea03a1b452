/**
 * `deno bench bench/memo.bench.ts`: the validation memo as users write calls. A small
 * batchNormBackward ([4,16,8,8], float32, CPU) with its `outputMask` written as a literal
 * (a new array per call), with one array kept across calls (the baseline), and without a
 * mask: the memo compares arrays by their elements, so the three take the same time (a call
 * that missed the memo would validate again: about a quarter more per call at this size).
 *
 * @module
 */

import { batchNormBackward, Tensor } from "../mod.ts";

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
