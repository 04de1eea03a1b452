/**
 * `stridesLike` (src/tensor/layout.ts), which gives every operator's output its input's memory
 * layout: its shortcuts for row-major and channels-last strides give what the general rule
 * (dims ordered by stride, then compact strides) gives, on random shapes, size-1 and empty dims
 * included; permuted and sliced layouts keep their order.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { contiguousStrides, sortedStridesLike, stridesLike } from "../../src/tensor/layout.ts";
import { Tensor } from "../../mod.ts";

Deno.test("stridesLike: row-major and channels-last strides give what the general rule gives", () => {
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 5 }),
      (shape) => {
        const rowMajor = contiguousStrides(shape);
        assert.deepEqual(stridesLike(shape, rowMajor), sortedStridesLike(shape, rowMajor));
        if (shape.length >= 3) {
          // The channels-last view of a row-major [N, ...inner, C] tensor.
          const r = shape.length;
          const stored = [shape[0], ...shape.slice(2), shape[1]];
          const s = contiguousStrides(stored);
          const last = [s[0], s[r - 1], ...s.slice(1, r - 1)];
          assert.deepEqual(stridesLike(shape, last), sortedStridesLike(shape, last));
        }
      },
    ),
    { numRuns: 500, seed: 11 },
  );
});

Deno.test("stridesLike: outputs keep a permuted input's order, compact", () => {
  const x = Tensor.zeros([2, 4, 5, 3]).permute([0, 3, 1, 2]); // channels-last [2, 3, 4, 5]
  assert.deepEqual(stridesLike(x.shape, x.strides), [60, 1, 15, 3]);
  const sliced = Tensor.zeros([2, 8, 4, 5]).slice(1, 0, 3);
  assert.deepEqual(stridesLike(sliced.shape, sliced.strides), [60, 20, 5, 1]);
  const t = Tensor.zeros([6, 4]).permute([1, 0]);
  assert.deepEqual(stridesLike(t.shape, t.strides), [1, 4]);
});
