/**
 * The backward operators on every backend (the CPU backend, and the NPU code path on the
 * software CANN as Ascend 950 and as Atlas A2 when it has been built) equal the float64 oracle
 * on the same inputs: BatchNorm backward (training and eval, masks, layouts, mixed dtypes),
 * GroupNorm backward, the InfiniOp descriptor (including in place and its eval reading).
 * On Atlas A2 the training-mode BatchNorm backward goes through the library's conversion of
 * saveInvstd into the variance the chip reads.
 *
 * @module
 */

import assert from "node:assert/strict";
import { batchNormBackward } from "../../src/ops/batch_norm_backward.ts";
import { groupNormBackward } from "../../src/ops/group_norm_backward.ts";
import { createBatchNormBackwardDescriptor } from "../../src/ops/infiniop_batch_norm_backward.ts";
import type { Device } from "../../src/tensor/device.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { assertChipRefuses, chipAccepts, forEachBackend, on, onOpt } from "../helpers/backends.ts";
import {
  batchNormBackward64,
  batchStats64,
  groupNormBackward64,
  infiniopBatchNormBackward64,
} from "../oracle/mod.ts";

type Tensors = Record<string, Tensor | undefined>;

function toDevice<T extends Tensors>(xs: T, device: Device): T {
  return Object.fromEntries(Object.entries(xs).map(([k, v]) => [k, onOpt(v, device)])) as T;
}

function values(t: Tensor | undefined): Float64Array | undefined {
  return t?.toFloat64Array();
}

/** Each output on the backend's device, in its dtype and shape, equal to the oracle's. */
function expectOutputs(
  actual: Record<string, Tensor | null>,
  expected: Record<string, { values: ArrayLike<number>; dtype: DType; shape: readonly number[] }>,
  device: Device,
  what: string,
): void {
  for (const [key, e] of Object.entries(expected)) {
    const a = actual[key];
    assert.ok(a, `${what} ${key} is computed`);
    assert.equal(a.device, device, `${what} ${key} device`);
    assert.equal(a.dtype, e.dtype, `${what} ${key} dtype`);
    assert.deepEqual(a.shape, e.shape, `${what} ${key} shape`);
    assertClose(a, e.values, undefined, `${what} ${key}`);
  }
}

const channelsLast = (t: Tensor) => t.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2]);

forEachBackend("backward ops: batchNormBackward equals the oracle", ({ device }) => {
  const cases: {
    name: string;
    shape: number[];
    dtype: DType;
    stats: DType;
    training: boolean;
    mask?: [boolean, boolean, boolean];
    layout?: (t: Tensor) => Tensor;
    noWeight?: boolean;
  }[] = [
    { name: "train fp32", shape: [4, 3, 5], dtype: "float32", stats: "float32", training: true },
    { name: "eval fp32", shape: [4, 3, 5], dtype: "float32", stats: "float32", training: false },
    {
      name: "train channels-last",
      shape: [2, 3, 4, 5],
      dtype: "float32",
      stats: "float32",
      training: true,
      layout: channelsLast,
    },
    {
      name: "train fp16/fp32",
      shape: [3, 4, 6],
      dtype: "float16",
      stats: "float32",
      training: true,
    },
    {
      name: "eval bf16",
      shape: [3, 2, 2, 3],
      dtype: "bfloat16",
      stats: "bfloat16",
      training: false,
    },
    {
      name: "mask [1,0,1], no weight",
      shape: [5, 2],
      dtype: "float32",
      stats: "float32",
      training: true,
      mask: [true, false, true],
      noWeight: true,
    },
  ];
  for (const c of cases) {
    const C = c.shape[1];
    const layout = c.layout ?? ((t: Tensor) => t);
    const host = {
      gradOut: layout(Tensor.random(c.shape, { seed: 1, dtype: c.dtype })),
      input: layout(Tensor.random(c.shape, { seed: 2, dtype: c.dtype })),
      weight: c.noWeight ? undefined : Tensor.random([C], { seed: 3, dtype: c.stats }),
      runningMean: Tensor.random([C], { seed: 4, dtype: c.stats }),
      runningVar: Tensor.random([C], { seed: 5, dtype: c.stats, low: 0.5, high: 2 }),
      saveMean: Tensor.random([C], { seed: 6, dtype: c.stats }),
      saveInvstd: Tensor.random([C], { seed: 7, dtype: c.stats, low: 0.5, high: 2 }),
    };
    const dev = toDevice(host, device);
    if (c.layout) assert.deepEqual(dev.input.strides, host.input.strides, "layout kept");
    const mask = c.mask ?? [true, true, true];
    const r = batchNormBackward({ ...dev, training: c.training, eps: 1e-3, outputMask: mask });
    const e = batchNormBackward64({
      dy: host.gradOut.toFloat64Array(),
      x: host.input.toFloat64Array(),
      shape: c.shape,
      weight: values(host.weight),
      runningMean: values(host.runningMean),
      runningVar: values(host.runningVar),
      saveMean: values(host.saveMean),
      saveInvstd: values(host.saveInvstd),
      training: c.training,
      eps: 1e-3,
    });
    const gradDType = host.weight?.dtype ?? c.dtype;
    const outputs = {
      gradInput: { values: e.gradInput, dtype: c.dtype, shape: c.shape },
      gradWeight: { values: e.gradWeight, dtype: gradDType, shape: [C] },
      gradBias: { values: e.gradBias, dtype: gradDType, shape: [C] },
    };
    const wanted = Object.fromEntries(Object.entries(outputs).filter((_, i) => mask[i]));
    expectOutputs({ ...r }, wanted, device, `batchNormBackward ${c.name}`);
    if (!mask[1]) assert.equal(r.gradWeight, null);
  }
});

// On chips whose aclnnBatchNormBackward reads the variance from saveInvstd,
// src/backends/ascend/save_statistics.ts (invstdToSaved) passes Var = 1/invstd^2 - eps in a
// float32 scratch tensor, whatever saveInvstd's dtype: a float16/bfloat16 one would round the
// variance, and the chip's invstd = 1/sqrt(Var + eps) would drift by up to half an ulp of that
// dtype. So every backend uses the caller's invstd exactly, as the CPU backend and Ascend 950 do.
forEachBackend(
  "backward ops: batchNormBackward with 16-bit saves uses the caller's invstd",
  ({ device }) => {
    for (const saveDType of ["float16", "bfloat16"] as const) {
      const shape = [6, 4, 16];
      const C = shape[1];
      const host = {
        gradOut: Tensor.random(shape, { seed: 11, dtype: saveDType }),
        input: Tensor.random(shape, { seed: 12, dtype: saveDType, low: -2, high: 3 }),
        weight: Tensor.random([C], { seed: 13, low: 0.5, high: 1.5 }), // float32: float32 grads
        saveMean: Tensor.random([C], { seed: 14, dtype: saveDType }),
        saveInvstd: Tensor.random([C], { seed: 15, dtype: saveDType, low: 0.5, high: 2 }),
      };
      const r = batchNormBackward({ ...toDevice(host, device), training: true, eps: 1e-5 });
      const e = batchNormBackward64({
        dy: host.gradOut.toFloat64Array(),
        x: host.input.toFloat64Array(),
        shape,
        weight: values(host.weight),
        saveMean: values(host.saveMean),
        saveInvstd: values(host.saveInvstd),
        training: true,
        eps: 1e-5,
      });
      assert.equal(r.gradWeight?.dtype, "float32");
      assertClose(r.gradWeight, e.gradWeight, undefined, `${saveDType} saves: gradWeight`);
      assertClose(r.gradInput, e.gradInput, undefined, `${saveDType} saves: gradInput`);
    }
  },
);

forEachBackend("backward ops: groupNormBackward equals the oracle", (ctx) => {
  const cases: {
    name: string;
    shape: number[];
    group: number;
    dtype: DType;
    stats: DType;
    gamma?: boolean;
  }[] = [
    {
      name: "fp32 4-D",
      shape: [2, 6, 3, 2],
      group: 3,
      dtype: "float32",
      stats: "float32",
      gamma: true,
    },
    { name: "fp32 3-D no gamma", shape: [3, 4, 5], group: 2, dtype: "float32", stats: "float32" },
    {
      name: "fp16/fp32",
      shape: [2, 4, 6],
      group: 4,
      dtype: "float16",
      stats: "float32",
      gamma: true,
    },
    { name: "bf16", shape: [2, 4, 3], group: 1, dtype: "bfloat16", stats: "bfloat16", gamma: true },
  ];
  for (const c of cases) {
    const [N, C] = c.shape;
    const HxW = c.shape.slice(2).reduce((a, b) => a * b, 1);
    const host = {
      gradOut: Tensor.random(c.shape, { seed: 1, dtype: c.dtype }),
      input: Tensor.random(c.shape, { seed: 2, dtype: c.dtype }),
      mean: Tensor.random([N, c.group], { seed: 3, dtype: c.stats }),
      rstd: Tensor.random([N, c.group], { seed: 4, dtype: c.stats, low: 0.5, high: 2 }),
      gamma: c.gamma ? Tensor.random([C], { seed: 5, dtype: c.stats }) : undefined,
    };
    const call = () => groupNormBackward({ ...toDevice(host, ctx.device), group: c.group });
    const mixed = c.stats !== c.dtype;
    if (!chipAccepts(ctx.soc, "aclnnGroupNormBackward", [c.dtype], { mixedPrecision: mixed })) {
      assertChipRefuses(ctx, call, "mean");
      continue;
    }
    const e = groupNormBackward64(
      host.gradOut.toFloat64Array(),
      host.input.toFloat64Array(),
      host.mean.toFloat64Array(),
      host.rstd.toFloat64Array(),
      values(host.gamma),
      N,
      C,
      HxW,
      c.group,
    );
    expectOutputs(
      { ...call() },
      {
        gradInput: { values: e.gradInput, dtype: c.dtype, shape: c.shape },
        gradGamma: { values: e.gradGamma, dtype: c.stats, shape: [C] },
        gradBeta: { values: e.gradBeta, dtype: c.stats, shape: [C] },
      },
      ctx.device,
      `groupNormBackward ${c.name}`,
    );
  }
});

forEachBackend(
  "backward ops: the InfiniOp descriptor computes, also in place and in eval",
  ({ device }) => {
    for (const dtype of ["float32", "float16"] as DType[]) {
      const [N, C, L] = [3, 4, 5];
      const shape = [N, C, L];
      const x = Tensor.random(shape, { seed: 1, dtype });
      const dy = Tensor.random(shape, { seed: 2, dtype });
      const w = Tensor.random([C], { seed: 3, dtype });
      const { mean, variance } = batchStats64(x.toFloat64Array(), shape);
      const host = {
        input: x,
        gradOutput: dy,
        weight: w,
        runningMean: Tensor.fromArray(mean, [C], dtype),
        runningVar: Tensor.fromArray(variance, [C], dtype),
      };
      const outs = () => ({
        gradInput: Tensor.zeros(shape, dtype, device),
        gradWeight: Tensor.zeros([C], dtype, device),
        gradBias: Tensor.zeros([C], dtype, device),
      });
      const expected = (eps: number, training: boolean) => {
        const g = infiniopBatchNormBackward64({
          dy: dy.toFloat64Array(),
          x: x.toFloat64Array(),
          shape,
          weight: w.toFloat64Array(),
          runningMean: host.runningMean.toFloat64Array(),
          runningVar: host.runningVar.toFloat64Array(),
          eps,
          training,
        });
        return {
          gradInput: { values: g.gradInput, dtype, shape },
          gradWeight: { values: g.gradWeight, dtype, shape: [C] },
          gradBias: { values: g.gradBias, dtype, shape: [C] },
        };
      };
      const dev = { ...host, ...toDevice(host, device) };
      using desc = createBatchNormBackwardDescriptor({ ...host, ...outs(), eps: 1e-5 });
      const out = outs();
      desc.compute({ ...dev, ...out });
      expectOutputs(out, expected(1e-5, true), device, `descriptor ${dtype}`);
      // In place: gradInput is gradOutput's storage.
      const inPlace = on(dy, device).clone();
      desc.compute({ ...dev, ...outs(), gradOutput: inPlace, gradInput: inPlace });
      const e = expected(1e-5, true);
      expectOutputs(
        { gradInput: inPlace },
        { gradInput: e.gradInput },
        device,
        `in place ${dtype}`,
      );
      // Eval reading (training: false): fixed running statistics, eps added by the kernel.
      using evalDesc = createBatchNormBackwardDescriptor({
        ...host,
        ...outs(),
        eps: 1e-3,
        training: false,
      });
      const evalOut = outs();
      evalDesc.compute({ ...dev, ...evalOut });
      expectOutputs(evalOut, expected(1e-3, false), device, `eval descriptor ${dtype}`);
    }
  },
);
