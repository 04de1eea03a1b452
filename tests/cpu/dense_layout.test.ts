/**
 * The channel family's shortcut for dense row-major and channels-last calls
 * (src/backends/cpu/channels/dense_layout.ts) takes only calls that the general path
 * (aliasing.ts `streamable`, heap placement, layout.ts `chooseLayout`, kernels/channel_stages.ts
 * `channelLayoutFits`) would run in place, and gives them the general path's layout and
 * addresses: random [N, C, ...] geometries, contiguous or permuted or sliced, in the heap or
 * not, with outputs that are an input's memory, overlap it, or are apart.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { type DType, Tensor } from "../../mod.ts";
import { denseLayout, type DenseOrder } from "../../src/backends/cpu/channels/dense_layout.ts";
import { channelLayoutFits } from "../../src/backends/cpu/kernels/channel_stages.ts";
import { streamable } from "../../src/backends/cpu/channels/aliasing.ts";
import { batchNormDims, chooseLayout } from "../../src/backends/cpu/channels/layout.ts";
import { hostData } from "../../src/backends/cpu/tensors/tensor_arrays.ts";
import { heapAddress } from "../../src/tensor/host_heap.ts";

/**
 * How a case makes one of its tensors from a fresh [N, C, ...inner] shape: dense in the
 * case's order (from the start of a block of more samples, or one sample in), dense in the
 * other order, or a tensor of its own (in the heap from 4 KiB, else on a slab outside it).
 */
type Making = "dense" | "sliced" | "other" | "small";

/** A dense [N, C, ...inner] view in `order`, `skip` samples into a block of N + 64 samples. */
function dense(shape: number[], order: DenseOrder, skip: number, dtype: DType): Tensor {
  const [n, c, ...inner] = shape;
  const samples = n + 64; // enough elements for the heap
  if (order === "rows") return Tensor.zeros([samples, c, ...inner], dtype).slice(0, skip, skip + n);
  const stored = Tensor.zeros([samples, ...inner, c], dtype).slice(0, skip, skip + n);
  return stored.permute([0, shape.length - 1, ...inner.map((_, i) => i + 1)]);
}

/** A tensor of logical shape `shape` made as `making` says, for a case in `order`. */
function make(shape: number[], making: Making, dtype: DType, order: DenseOrder): Tensor {
  if (making === "small") return Tensor.zeros(shape, dtype);
  const other: DenseOrder = order === "rows" ? "pixels" : "rows";
  return dense(shape, making === "other" ? other : order, making === "sliced" ? 1 : 0, dtype);
}

Deno.test("denseLayout: what it takes the general path runs in place, with the same layout", () => {
  const taken = { rows: 0, pixels: 0 };
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 5 }),
      fc.constantFrom(1, 2, 3, 4, 8, 12),
      fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 0, maxLength: 3 }),
      fc.array(fc.constantFrom<Making>("dense", "dense", "sliced", "other", "small"), {
        minLength: 2,
        maxLength: 3,
      }),
      fc.constantFrom("apart", "same", "shifted"),
      fc.constantFrom<"float32" | "bfloat16">("float32", "bfloat16"),
      fc.constantFrom<DenseOrder>("rows", "pixels"),
      (N, C, innerShape, makings, aliasing, dtype, order) => {
        const shape = [N, C, ...innerShape];
        const inner = innerShape.reduce((a, b) => a * b, 1);
        const inputs = makings.slice(0, -1).map((m) => make(shape, m, dtype, order));
        let output = make(shape, makings[makings.length - 1], dtype, order);
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
        const got = denseLayout(N, C, inner, data, true, order);
        if (!got) return;
        taken[order]++;
        assert.ok(streamable(output, inputs), "the general path streams it");
        assert.ok(data.every((t) => heapAddress(hostData(t)) >= 0), "every tensor in the heap");
        const general = chooseLayout(N, C, shape.slice(2), data.map(batchNormDims));
        assert.deepEqual(got, general);
        assert.ok(general.addresses.every((a) => channelLayoutFits(general.layout, a)), "fits");
      },
    ),
    { numRuns: 800, seed: 37 },
  );
  assert.ok(taken.rows > 50 && taken.pixels > 20, `taken: ${JSON.stringify(taken)}`);
});

Deno.test("denseLayout: refuses outputs that overlap an input other than element for element", () => {
  const x = Tensor.zeros([8, 4, 64]);
  const storage = hostData(x);
  const shifted = new Tensor(storage, "float32", [4, 4, 64], [256, 64, 1], 5);
  const head = x.slice(0, 0, 4);
  assert.equal(denseLayout(4, 4, 64, [head, shifted], true, "rows"), undefined);
  assert.ok(denseLayout(4, 4, 64, [head, head], true, "rows"), "in place: the same elements");
  assert.ok(denseLayout(4, 4, 64, [head, x.slice(0, 4, 8)], true, "rows"), "apart");
  // One element per (n, c), mixed dtypes, a size that differs: left to the general path.
  assert.equal(denseLayout(4, 4, 1, [Tensor.zeros([4, 4, 1])], false, "rows"), undefined);
  assert.equal(
    denseLayout(4, 4, 64, [head, Tensor.zeros([4, 4, 64], "bfloat16")], true, "rows"),
    undefined,
  );
  assert.equal(denseLayout(4, 4, 64, [head, Tensor.zeros([4, 4, 8, 8])], true, "rows"), undefined);
});

Deno.test("denseLayout: channels-last takes C a multiple of 4 only, and not row-major tensors", () => {
  const cl = (shape: number[]) => {
    const [n, c, ...inner] = shape;
    const stored = Tensor.zeros([n, ...inner, c]);
    return stored.permute([0, shape.length - 1, ...inner.map((_, i) => i + 1)]);
  };
  const x = cl([4, 8, 16, 16]);
  const got = denseLayout(4, 8, 256, [x, cl([4, 8, 16, 16])], true, "pixels");
  assert.equal(got?.layout.kind, "pixels");
  assert.deepEqual(got?.addresses[0], {
    base: 0,
    strideN: 2048,
    strideC: 1,
    strideI: 8,
    innerStrides: [8],
  });
  assert.equal(denseLayout(4, 6, 256, [cl([4, 6, 16, 16])], false, "pixels"), undefined);
  assert.equal(denseLayout(4, 8, 256, [Tensor.zeros([4, 8, 16, 16])], false, "pixels"), undefined);
  assert.equal(denseLayout(4, 8, 256, [x], false, "rows"), undefined);
});
