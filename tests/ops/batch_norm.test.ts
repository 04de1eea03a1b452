/**
 * batchNorm (aclnnBatchNorm): training (output, saveMean/saveInvstd, running statistics) and
 * evaluation (running statistics, empty save tensors, nothing updated) against the float64
 * oracle, float16/bfloat16 data, a channels-last view, an empty batch, NaN confined to its
 * channel, every documented error code on the exact argument; and batchNorm then
 * batchNormBackward against finite differences of the forward.
 *
 * @module
 */

import assert from "node:assert/strict";
import { batchNorm } from "../../src/ops/batch_norm.ts";
import { batchNormBackward } from "../../src/ops/batch_norm_backward.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { TOLERANCE, toleranceFor } from "../helpers/tolerance.ts";
import { batchNorm64, batchNormForward64, dot, numericalGradient } from "../oracle/mod.ts";
import { INVALID, NULLPTR, rnd } from "../helpers/op_inputs.ts";

const F32 = TOLERANCE.float32;

Deno.test("batchNorm training: output, saveMean/saveInvstd and running stats match PyTorch", () => {
  for (const shape of [[2, 3, 4, 5], [8, 64, 8, 8], [6, 5]]) {
    const C = shape[1];
    const x = rnd(shape, 1, "float32", -2, 3);
    const w = rnd([C], 2, "float32", 0.5, 1.5);
    const b = rnd([C], 3);
    const rm0 = rnd([C], 4);
    const rv0 = rnd([C], 5, "float32", 0.5, 2);
    const runningMean = rm0.clone();
    const runningVar = rv0.clone();
    const eps = 1e-4;
    const momentum = 0.2;
    const r = batchNorm({
      input: x,
      weight: w,
      bias: b,
      runningMean,
      runningVar,
      training: true,
      momentum,
      eps,
    });
    const e = batchNorm64({
      x: x.toFloat64Array(),
      shape,
      weight: w.toFloat64Array(),
      bias: b.toFloat64Array(),
      runningMean: rm0.toFloat64Array(),
      runningVar: rv0.toFloat64Array(),
      training: true,
      momentum,
      eps,
    });
    assertClose(r.output, e.output, F32, `${shape} output`);
    assertClose(r.saveMean, e.saveMean, F32, "saveMean");
    assertClose(r.saveInvstd, e.saveInvstd, F32, "saveInvstd");
    assert.equal(r.saveMean.dtype, "float32");
    assertClose(runningMean, e.runningMean!, F32, "runningMean");
    assertClose(runningVar, e.runningVar!, F32, "runningVar");
  }
});

Deno.test("batchNorm eval: running statistics, empty save tensors, nothing updated", () => {
  const shape = [4, 3, 5];
  const x = rnd(shape, 1);
  const rm = rnd([3], 2);
  const rv = rnd([3], 3, "float32", 0.5, 2);
  const rmBefore = rm.toArray();
  const rvBefore = rv.toArray();
  const r = batchNorm({ input: x, runningMean: rm, runningVar: rv, training: false, eps: 1e-5 });
  const e = batchNorm64({
    x: x.toFloat64Array(),
    shape,
    runningMean: rmBefore,
    runningVar: rvBefore,
    training: false,
    momentum: 0.1,
    eps: 1e-5,
  });
  assertClose(r.output, e.output, F32);
  assert.deepEqual(r.saveMean.shape, [0]);
  assert.deepEqual(r.saveInvstd.shape, [0]);
  assert.deepEqual(rm.toArray(), rmBefore);
  assert.deepEqual(rv.toArray(), rvBefore);
  // No running stats: mean 0, var 1.
  const plain = batchNorm({ input: x, training: false, eps: 1e-12 });
  assertClose(plain.output, x, F32);
  // Given save tensors of any size are neither validated nor written in eval mode.
  const sm = Tensor.full([7], 9);
  const kept = batchNorm({ input: x, training: false, out: { saveMean: sm, saveInvstd: null } });
  assert.equal(kept.saveMean, sm);
  assert.deepEqual(sm.toArray(), new Array(7).fill(9));
});

Deno.test("batchNorm: float16/bfloat16 data, channels-last view, empty batch", () => {
  for (const dtype of ["float16", "bfloat16"] as DType[]) {
    const shape = [4, 6, 3, 3];
    const x = rnd(shape, 7, dtype, -1, 2);
    const r = batchNorm({ input: x, training: true, eps: 1e-5 });
    assert.equal(r.output.dtype, dtype);
    const e = batchNorm64({
      x: x.toFloat64Array(),
      shape,
      training: true,
      momentum: 0.1,
      eps: 1e-5,
    });
    assertClose(r.output, e.output, toleranceFor(dtype), dtype);
    assertClose(r.saveInvstd, e.saveInvstd, F32, dtype);
  }
  const base = rnd([2, 4, 4, 3], 8); // NHWC storage
  const x = base.permute([0, 3, 1, 2]); // logical NCHW
  const r = batchNorm({ input: x, training: true });
  const e = batchNorm64({
    x: x.toFloat64Array(),
    shape: x.shape,
    training: true,
    momentum: 0.1,
    eps: 1e-5,
  });
  assertClose(r.output, e.output, F32, "channels-last output");

  const rm = Tensor.full([3], 5);
  const empty = batchNorm({ input: Tensor.zeros([0, 3, 2]), runningMean: rm, training: true });
  assert.deepEqual(empty.output.shape, [0, 3, 2]);
  assert.deepEqual(empty.saveMean.toArray(), [0, 0, 0]);
  assert.deepEqual(empty.saveInvstd.toArray(), [NaN, NaN, NaN]);
  assert.deepEqual(rm.toArray(), [5, 5, 5]);
});

Deno.test("batchNorm: NaN propagates to its channel only", () => {
  const values = rnd([3, 2, 2], 1).toArray();
  values[0] = Number.NaN; // channel 0
  const r = batchNorm({ input: Tensor.fromArray(values, [3, 2, 2]), training: true });
  const y = r.output.toArray();
  assert.ok(Number.isNaN(r.saveMean.toArray()[0]));
  assert.ok(Number.isFinite(r.saveMean.toArray()[1]));
  assert.ok(y.filter((_, i) => Math.floor(i / 2) % 2 === 0).every(Number.isNaN));
  assert.ok(y.filter((_, i) => Math.floor(i / 2) % 2 === 1).every(Number.isFinite));
});

Deno.test("batchNorm: documented error codes", () => {
  const x = rnd([2, 3, 4], 1);
  assertAclnnError(() => batchNorm({ input: null, training: true }), NULLPTR, "input");
  assertAclnnError(
    () => batchNorm({ input: x, training: true, out: { output: null } }),
    NULLPTR,
    "output",
  );
  assertAclnnError(
    () => batchNorm({ input: x, training: true, out: { saveMean: null } }),
    NULLPTR,
    "saveMean",
  );
  assertAclnnError(
    () => batchNorm({ input: x, training: true, out: { saveInvstd: null } }),
    NULLPTR,
    "saveInvstd",
  );
  assertAclnnError(
    () => batchNorm({ input: x, training: undefined as unknown as boolean }),
    INVALID,
    "training",
  );
  assertAclnnError(
    () => batchNorm({ input: Tensor.zeros([2, 3], "int32"), training: true }),
    INVALID,
    "input",
  );
  assertAclnnError(
    () => batchNorm({ input: x, weight: Tensor.ones([3], "int32"), training: true }),
    INVALID,
    "weight",
  );
  assertAclnnError(
    () =>
      batchNorm({ input: x, training: true, out: { output: Tensor.zeros([2, 3, 4], "float16") } }),
    INVALID,
    "output",
  );
  assertAclnnError(
    () => batchNorm({ input: x, training: true, out: { output: Tensor.zeros([2, 3, 5]) } }),
    INVALID,
    "output",
  );
  assertAclnnError(() => batchNorm({ input: Tensor.zeros([3]), training: true }), INVALID, "input");
  for (const name of ["weight", "bias", "runningMean", "runningVar"] as const) {
    assertAclnnError(
      () => batchNorm({ input: x, [name]: Tensor.ones([4]), training: false }),
      INVALID,
      name,
    );
  }
  assertAclnnError(
    () => batchNorm({ input: x, training: true, out: { saveInvstd: Tensor.zeros([2]) } }),
    INVALID,
    "saveInvstd",
  );
  assertAclnnError(
    () => batchNorm({ input: x, training: true, momentum: Infinity }),
    INVALID,
    "momentum",
  );
});

Deno.test("batchNorm (training) -> batchNormBackward equals finite differences of the forward", () => {
  const shape = [3, 2, 4];
  const C = 2;
  const x = rnd(shape, 1, "float32", -1, 2);
  const w = rnd([C], 2, "float32", 0.5, 1.5);
  const b = rnd([C], 3);
  const dy = rnd(shape, 4);
  const eps = 1e-3;
  const fwd = batchNorm({ input: x, weight: w, bias: b, training: true, eps });
  const grads = batchNormBackward({
    gradOut: dy,
    input: x,
    weight: w,
    saveMean: fwd.saveMean,
    saveInvstd: fwd.saveInvstd,
    training: true,
    eps,
  });
  const dy64 = dy.toFloat64Array();
  const x64 = x.toFloat64Array();
  const w64 = w.toFloat64Array();
  const b64 = b.toFloat64Array();
  const loss = (xv: Float64Array, wv: Float64Array, bv: Float64Array) =>
    dot(dy64, batchNormForward64(xv, shape, wv, bv, eps).y);
  // float32 outputs at float32 statistics vs exact derivatives.
  const tol = F32;
  assertClose(grads.gradInput!, numericalGradient((v) => loss(v, w64, b64), x64), tol, "dx");
  assertClose(grads.gradWeight!, numericalGradient((v) => loss(x64, v, b64), w64), tol, "dw");
  assertClose(grads.gradBias!, numericalGradient((v) => loss(x64, w64, v), b64), tol, "db");
});
