/**
 * The channel family's shortcut for row-major calls (src/backends/cpu/channels/contiguous.ts) takes
 * only calls that the general path (aliasing.ts `streamable`, heap placement, layout.ts
 * `chooseLayout`) would run in place, and gives them the general path's layout and addresses:
 * random [N, C, ...] geometries, contiguous or permuted or sliced, in the heap or not, with
 * outputs that are an input's memory, overlap it, or are apart.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { Tensor } from "../../mod.ts";
import { contiguousRows } from "../../src/backends/cpu/channels/contiguous.ts";
import { streamable } from "../../src/backends/cpu/channels/aliasing.ts";
import { batchNormDims, chooseLayout } from "../../src/backends/cpu/channels/layout.ts";
import { hostData } from "../../src/backends/cpu/tensors/tensor_arrays.ts";
import { heapAddress } from "../../src/tensor/host_heap.ts";

/** How a case makes one of its tensors from a fresh [N, C, ...inner] shape. */
type Making = "contiguous" | "permuted" | "sliced" | "small";

/** A tensor of logical shape `shape` made as `making` says (sizes >= 4 KiB live in the heap). */
function make(shape: number[], making: Making, dtype: "float32" | "bfloat16"): Tensor {
  // A tensor of its own: in the heap from 4 KiB, else on a slab (outside it).
  if (making === "small") return Tensor.zeros(shape, dtype);
  const big = [...shape];
  big[0] = Math.max(big[0], 64); // enough elements for the heap
  if (making === "permuted" && shape.length >= 3) {
    const r = shape.length;
    const stored = Tensor.zeros([shape[0], ...shape.slice(2), shape[1]], dtype);
    const back = [0, r - 1, ...Array.from({ length: r - 2 }, (_, i) => i + 1)];
    return stored.permute(back);
  }
  const whole = Tensor.zeros([big[0] + 1, ...shape.slice(1)], dtype);
  // "sliced" starts one sample in; both are row-major views of `shape` in one block.
  return whole.slice(0, making === "sliced" ? 1 : 0, (making === "sliced" ? 1 : 0) + shape[0]);
}

Deno.test("contiguousRows: what it takes the general path runs in place, with the same layout", () => {
  let taken = 0;
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 5 }),
      fc.integer({ min: 1, max: 6 }),
      fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 0, maxLength: 3 }),
      fc.array(fc.constantFrom<Making>("contiguous", "contiguous", "permuted", "sliced", "small"), {
        minLength: 2,
        maxLength: 3,
      }),
      fc.constantFrom("apart", "same", "shifted"),
      fc.constantFrom<"float32" | "bfloat16">("float32", "bfloat16"),
      (N, C, innerShape, makings, aliasing, dtype) => {
        const shape = [N, C, ...innerShape];
        const inner = innerShape.reduce((a, b) => a * b, 1);
        const inputs = makings.slice(0, -1).map((m) => make(shape, m, dtype));
        let output = make(shape, makings[makings.length - 1], dtype);
        if (aliasing !== "apart" && inputs[0].shape.length === shape.length) {
          const x = inputs[0];
          // The output on the first input's memory: the same elements, or a few elements on.
          const shift = aliasing === "same" ? 0 : 3;
          const storage = hostData(x);
          if (x.offset + shift + x.numel <= storage.length) {
            output = new Tensor(storage, dtype, x.shape, x.strides, x.offset + shift);
          }
        }
        const data = [...inputs, output];
        const got = contiguousRows(N, C, inner, data, true);
        if (!got) return;
        taken++;
        assert.ok(streamable(output, inputs), "the general path streams it");
        assert.ok(data.every((t) => heapAddress(hostData(t)) >= 0), "every tensor in the heap");
        const general = chooseLayout(N, C, shape.slice(2), data.map(batchNormDims));
        assert.deepEqual(got, general);
      },
    ),
    { numRuns: 400, seed: 37 },
  );
  assert.ok(taken > 50, `only ${taken} cases took the shortcut`);
});

Deno.test("contiguousRows: refuses outputs that overlap an input other than element for element", () => {
  const x = Tensor.zeros([8, 4, 64]);
  const storage = hostData(x);
  const shifted = new Tensor(storage, "float32", [4, 4, 64], [256, 64, 1], 5);
  const head = x.slice(0, 0, 4);
  assert.equal(contiguousRows(4, 4, 64, [head, shifted], true), undefined);
  assert.ok(contiguousRows(4, 4, 64, [head, head], true), "in place: the same elements");
  assert.ok(contiguousRows(4, 4, 64, [head, x.slice(0, 4, 8)], true), "apart");
  // One element per (n, c), mixed dtypes, a size that differs: left to the general path.
  assert.equal(contiguousRows(4, 4, 1, [Tensor.zeros([4, 4, 1])], false), undefined);
  assert.equal(
    contiguousRows(4, 4, 64, [head, Tensor.zeros([4, 4, 64], "bfloat16")], true),
    undefined,
  );
  assert.equal(contiguousRows(4, 4, 64, [head, Tensor.zeros([4, 4, 8, 8])], true), undefined);
});
