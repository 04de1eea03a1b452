/**
 * The row kernels' column sums (src/backends/cpu/rows/merge_columns.ts, row_norms.wat
 * rf_merge_cols): the float64 sum of each column's float32 partials in item order, bit for bit
 * what adding them one item after another in JavaScript gives, over an odd column count, padded
 * items, values of every magnitude and sign (negative zeros, subnormals, infinities), and more
 * columns than one chunk of the thread's region holds.
 */

import assert from "node:assert/strict";
import { mergeColumns, mergeColumnsInto } from "../../src/backends/cpu/rows/merge_columns.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { rowNormKernels } from "../../src/backends/cpu/rows/wasm_rows.ts";
import { heapScratchTensor } from "../../src/backends/cpu/heap_scratch.ts";

/** The reference: float64 sums of the partials, item after item. */
function reference(p: Float32Array, items: number, cols: number, stride: number): Float64Array {
  const out = new Float64Array(cols);
  for (let k = 0; k < items; k++) {
    for (let i = 0; i < cols; i++) out[i] += p[k * stride + i];
  }
  return out;
}

/** Partials of `items` items of `cols` columns (stride padded to 4, padding zero) in the heap. */
function partialsInHeap(items: number, cols: number, value: (k: number, i: number) => number) {
  const stride = Math.ceil(cols / 4) * 4;
  const block = heapScratchTensor([items * stride], "float32", "partials");
  const p = (block.storage as Float32Array).fill(0);
  for (let k = 0; k < items; k++) for (let i = 0; i < cols; i++) p[k * stride + i] = value(k, i);
  return { block, p, stride, at: p.byteOffset };
}

Deno.test("mergeColumns: the bits of adding the items' partials in order, in float64", () => {
  rowNormKernels();
  const special = [-0, 2 ** -149, -(2 ** -140), Infinity, 3.4e38, -3.4e38, 1e-8, 1];
  for (const [items, cols] of [[1, 1], [3, 7], [7, 1021], [32, 1024]]) {
    const { block, p, stride, at } = partialsInHeap(
      items,
      cols,
      (k, i) =>
        (k * 31 + i) % 17 === 0
          ? special[(k + i) % special.length]
          : Math.fround(Math.sin(k * 7.1 + i * 0.37) * 10 ** ((i % 9) - 4)),
    );
    try {
      const want = reference(p, items, cols, stride);
      assert.deepEqual(mergeColumns(at, items, cols, stride), want, `${items} x ${cols}`);
    } finally {
      block.dispose();
    }
  }
});

Deno.test("mergeColumns: more columns than the thread's region holds at once", () => {
  const cols = rowNormKernels().f64.length + 37;
  const { block, p, stride, at } = partialsInHeap(2, cols, (k, i) => (i % 1000) - k * 0.5);
  try {
    const got = mergeColumns(at, 2, cols, stride);
    assert.deepEqual(got, reference(p, 2, cols, stride));
    assert.equal(got[cols - 1], (cols - 1) % 1000 * 2 - 0.5);
  } finally {
    block.dispose();
  }
});

Deno.test("mergeColumnsInto: each sum rounded once to the target's dtype, dense or strided", () => {
  const items = 5, cols = 203;
  const { block, p, stride, at } = partialsInHeap(
    items,
    cols,
    (k, i) => Math.fround(Math.cos(k * 3.3 + i * 0.91) * 10 ** ((i % 7) - 3)),
  );
  const want = Array.from(reference(p, items, cols, stride));
  const bf16 = (v: number) => Tensor.fromArray([v], [1], "bfloat16").toArray()[0];
  const cases: [string, Tensor, (v: number) => number][] = [
    ["float32", Tensor.zeros([cols], "float32"), Math.fround],
    ["float16", Tensor.zeros([cols], "float16"), Math.f16round],
    ["bfloat16", Tensor.zeros([cols], "bfloat16"), bf16],
    [
      "float32, every other element",
      Tensor.zeros([cols, 2], "float32").slice(1, 1, 2),
      Math.fround,
    ],
    ["float32 at an offset", Tensor.zeros([cols + 3], "float32").slice(0, 3), Math.fround],
  ];
  try {
    for (const [what, target, round] of cases) {
      mergeColumnsInto(target, at, items, cols, stride);
      assert.deepEqual(target.toArray().flat(), want.map(round), what);
    }
  } finally {
    block.dispose();
  }
});
