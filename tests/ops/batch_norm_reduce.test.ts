/**
 * batchNormReduce (aclnnBatchNormReduce) on every backend: per-channel Σx and Σx² against the
 * float64 oracle over dtypes and layouts; float32 outputs; the empty path (zeros before any
 * check); the codes in CANN's check order (161001, then 161002 dtype, format, shape); the chips
 * (Ascend 950, Atlas A2/A3 only, refused elsewhere naming the SoC).
 *
 * @module
 */

import assert from "node:assert/strict";
import { batchNormReduce } from "../../src/ops/batch_norm_reduce.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, forEachBackend, on } from "../helpers/backends.ts";
import { batchNormReduce64 } from "../oracle/batch_norm_reduce.ts";
import { cancellation, F32_ARITHMETIC } from "../helpers/tolerance.ts";

const NULLPTR = 161001;
const INVALID = 161002;

function rnd(shape: number[], seed: number, dtype: DType = "float32") {
  return Tensor.random(shape, { seed, dtype, low: -2, high: 3 });
}

const CASES: { name: string; x: Tensor }[] = [
  { name: "float32 [4,3,5,6]", x: rnd([4, 3, 5, 6], 1) },
  { name: "float16 [2,8,7,7]", x: rnd([2, 8, 7, 7], 2, "float16") },
  { name: "bfloat16 [3,4,9,2]", x: rnd([3, 4, 9, 2], 3, "bfloat16") },
  { name: "channels-last view", x: rnd([2, 5, 6, 8], 4).permute([0, 3, 1, 2]) },
  { name: "one element per channel", x: rnd([1, 6, 1, 1], 5) },
];

forEachBackend("batchNormReduce: sum and squareSum against the float64 oracle", (ctx) => {
  for (const c of CASES) {
    const r = batchNormReduce({ x: on(c.x, ctx.device) });
    const e = batchNormReduce64(c.x.toFloat64Array(), c.x.shape);
    const C = c.x.shape[1];
    assert.deepEqual([r.sum.dtype, r.sum.shape], ["float32", [C]], c.name);
    assert.deepEqual([r.squareSum.dtype, r.squareSum.shape], ["float32", [C]], c.name);
    const terms = c.x.numel / C;
    // Float32 squares and float32 runs on the CPU: the bound grows with the terms summed.
    const tol = cancellation(F32_ARITHMETIC.float32, terms, 1);
    assertClose(r.sum, e.sum, tol, `${ctx.label} ${c.name} sum`);
    assertClose(r.squareSum, e.squareSum, tol, `${ctx.label} ${c.name} squareSum`);
    r[Symbol.dispose]();
  }
});

forEachBackend("batchNormReduce: given outputs are written in place", (ctx) => {
  const x = on(Tensor.fromArray([1, 2, 3, 4, 5, 6, 7, 8], [2, 2, 1, 2]), ctx.device);
  const sum = on(Tensor.full([2], 99), ctx.device);
  const squareSum = on(Tensor.full([2], 99), ctx.device);
  const r = batchNormReduce({ x, out: { sum, squareSum } });
  assert.equal(r.sum, sum);
  assert.deepEqual(sum.toArray(), [14, 22]);
  assert.deepEqual(squareSum.toArray(), [66, 138]);
});

forEachBackend("batchNormReduce: an empty call zero-fills both outputs before any check", (ctx) => {
  const d = ctx.device;
  // N = 0: both outputs zeros.
  const r = batchNormReduce({ x: on(Tensor.zeros([0, 3, 2, 2]), d) });
  assert.deepEqual([r.sum.toArray(), r.squareSum.toArray()], [[0, 0, 0], [0, 0, 0]]);
  // An empty x of rank 2 (not NCHW) and float16 outputs: no check runs.
  const sum = on(Tensor.full([4], 7, "float16"), d);
  const squareSum = on(Tensor.full([4], 7, "float16"), d);
  batchNormReduce({ x: on(Tensor.zeros([0, 4]), d), out: { sum, squareSum } });
  assert.deepEqual([sum.toArray(), squareSum.toArray()], [[0, 0, 0, 0], [0, 0, 0, 0]]);
  // A non-empty x with an empty sum: squareSum is zero-filled, x is not read.
  const sq = on(Tensor.full([3], 7), d);
  batchNormReduce({
    x: on(rnd([2, 3, 2, 2], 6), d),
    out: { sum: on(Tensor.zeros([0]), d), squareSum: sq },
  });
  assert.deepEqual(sq.toArray(), [0, 0, 0]);
});

forEachBackend("batchNormReduce: errors in CANN's check order", (ctx) => {
  const d = ctx.device;
  const x = on(rnd([2, 3, 2, 2], 7), d);
  const f32 = (n: number) => on(Tensor.zeros([n]), d);
  assertAclnnError(() => batchNormReduce({ x: undefined }), NULLPTR, "x");
  assertAclnnError(() => batchNormReduce({ x, out: { sum: null } }), NULLPTR, "sum");
  // dtype before format before shape: a float16 sum of the wrong length is a dtype error.
  assertAclnnError(
    () => batchNormReduce({ x, out: { sum: on(Tensor.zeros([5], "float16"), d) } }),
    INVALID,
    "sum",
  );
  // x of rank 3 is labelled NCL: the format check refuses it, before sum's length.
  const e = assertAclnnError(
    () => batchNormReduce({ x: on(rnd([2, 3, 4], 8), d), out: { sum: f32(5) } }),
    INVALID,
    "x",
  );
  assert.match(e.message, /format must be NCHW or NHWC/);
  assertAclnnError(
    () => batchNormReduce({ x, out: { squareSum: on(Tensor.zeros([1, 3, 1, 1]), d) } }),
    INVALID,
    "squareSum",
  );
  assertAclnnError(
    () => batchNormReduce({ x, out: { sum: on(Tensor.zeros([1, 3]), d) } }),
    INVALID,
    "sum",
  );
  assertAclnnError(() => batchNormReduce({ x, out: { squareSum: f32(4) } }), INVALID, "squareSum");
});

forEachBackend("batchNormReduce: refused on chips its documentation does not list", (ctx) => {
  const e = assertChipRefuses(
    ctx,
    () => batchNormReduce({ x: on(rnd([2, 3, 2, 2], 9), ctx.device) }),
    "device",
  );
  assert.match(e.message, /aclnnBatchNormReduce does not support/);
}, { cpu: false, socs: ["Ascend910A", "Ascend310P3", "Ascend310B1"] });

forEachBackend("batchNormReduce: runs on Atlas A3", (ctx) => {
  const x = rnd([2, 3, 2, 2], 10);
  const r = batchNormReduce({ x: on(x, ctx.device) });
  const e = batchNormReduce64(x.toFloat64Array(), x.shape);
  assertClose(r.squareSum, e.squareSum, F32_ARITHMETIC.float32, `${ctx.label} squareSum`);
}, { cpu: false, socs: ["Ascend910_9391"] });
