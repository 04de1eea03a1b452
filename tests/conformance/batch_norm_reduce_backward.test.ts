/**
 * Conformance of batchNormReduceBackward (aclnnBatchNormReduceBackward,
 * torch.batch_norm_backward_reduce) with peers' cases: known answers where the peer states
 * them, the float64 oracle (tests/oracle/) otherwise. Every case runs on every backend.
 *
 * @module
 */

import assert from "node:assert/strict";
import { batchNormReduceBackward, type DType, Tensor } from "../../mod.ts";
import type { Device } from "../../src/tensor/device.ts";
import { forEachBackend } from "../helpers/backends.ts";
import { TOLERANCE, toleranceFor } from "../helpers/tolerance.ts";
import { batchNormReduceBackward64, batchStats64 } from "../oracle/mod.ts";
import {
  capShape,
  channelsLast,
  expectClose,
  f64,
  fromValues,
  on,
  onOpt,
  runAll,
  strided,
  uniform,
} from "./common.ts";
import { NumpyRandomState } from "./numpy_random.ts";

// ---------------------------------------------------------------------------------------------
// Known answers

// hicann/ops-nn norm/sync_batch_norm_backward_reduce/docs/aclnnBatchNormReduceBackward.md
// (= /work/shared/seeds/aclnnBatchNormReduceBackward.md), "调用示例": gradOut [4, 2]
// {1,1,1,2,2,2,3,3}, input 0..7, mean {1,1}, invstd {1,1}, weight {1,1}, all masks true.
// Answer by hand: channel 0 dy {1,1,2,3}, x-mean {-1,1,3,5}; channel 1 dy {1,2,2,3},
// x-mean {0,2,4,6}.
forEachBackend("reduce: CANN doc example [4,2] known answer", ({ device: target }) => {
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    const r = batchNormReduceBackward({
      gradOut: on(fromValues([1, 1, 1, 2, 2, 2, 3, 3], [4, 2], dtype), target),
      input: on(fromValues([0, 1, 2, 3, 4, 5, 6, 7], [4, 2], dtype), target),
      mean: on(fromValues([1, 1], [2], dtype), target),
      invstd: on(fromValues([1, 1], [2], dtype), target),
      weight: on(fromValues([1, 1], [2], dtype), target),
      inputG: true,
      weightG: true,
      biasG: true,
    });
    expectClose(r.sumDy, [7, 8], `${dtype} sumDy`);
    expectClose(r.sumDyXmu, [21, 30], `${dtype} sumDyXmu`);
    expectClose(r.gradWeight, [21, 30], `${dtype} gradWeight`);
    expectClose(r.gradBias, [7, 8], `${dtype} gradBias`);
  }
});

// Ascend/pytorch test/test_network_ops/test_batch_norm_backward_reduce.py
// (TestBatchNormBackwardReduce.test_batch_norm_backward_reduce): np.random.seed(1234), then
// create_common_tensor (= np.random.uniform(1, 10, shape).astype(float32)) for gradOut
// [1,3,9,9], input [1,3,9,9], mean [3], invstd [3], weight [3]; masks all true; expected
// arrays copied as numbers (facts) from the test, compared there with assertRtolEqual (1e-4).
const TORCH_NPU_EXPECTED = {
  sumDy: [449.18185, 464.78906, 471.87485],
  sumDyXmu: [831.08484, 2112.0908, 259.91568],
  gradWeight: [6091.88, 3367.45, 1824.8948],
  gradBias: [449.18185, 464.78906, 471.87485],
};

function torchNpuInputs(dtype: DType) {
  const rng = new NumpyRandomState(1234);
  const shape = [1, 3, 9, 9];
  const draw = (s: number[]) => Tensor.fromArray(rng.uniform(1, 10, s.reduce((a, b) => a * b)), s);
  const gradOut = draw(shape);
  const input = draw(shape);
  const mean = draw([3]);
  const invstd = draw([3]);
  const weight = draw([3]);
  // The mixed-precision variant casts the fp32 data to fp16 and keeps fp32 statistics.
  const cast = (t: Tensor) => Tensor.fromArray(t.toFloat64Array(), t.shape, dtype);
  return { gradOut: cast(gradOut), input: cast(input), mean, invstd, weight };
}

Deno.test("reduce: numpy MT19937 replay is faithful (np.random.seed(0) known draws)", () => {
  // numpy facts: np.random.seed(0); np.random.random_sample(2) -> 0.5488135039273248,
  // 0.7151893663724195.
  const rng = new NumpyRandomState(0);
  assert.equal(rng.randomSample(), 0.5488135039273248);
  assert.equal(rng.randomSample(), 0.7151893663724195);
});

forEachBackend(
  "reduce: torch_npu test_batch_norm_backward_reduce known answer",
  ({ device: target }) => {
    const i = torchNpuInputs("float32");
    const r = batchNormReduceBackward({
      gradOut: on(i.gradOut, target),
      input: on(i.input, target),
      mean: on(i.mean, target),
      invstd: on(i.invstd, target),
      weight: on(i.weight, target),
      inputG: true,
      weightG: true,
      biasG: true,
    });
    for (const k of ["sumDy", "sumDyXmu", "gradWeight", "gradBias"] as const) {
      expectClose(r[k], TORCH_NPU_EXPECTED[k], `torch_npu ${k}`, TOLERANCE.float32);
    }
  },
);

// Same file, test_batch_norm_backward_reduce_mix_precision: fp16 data with fp32 statistics
// must agree with the fp32 run (assertRtolEqual at fp16 precision, 1e-3).
forEachBackend(
  "reduce: torch_npu mix precision (fp16 data, fp32 stats) equals fp32 run",
  ({ device: target }) => {
    const run = (dtype: DType) => {
      const i = torchNpuInputs(dtype);
      return batchNormReduceBackward({
        gradOut: on(i.gradOut, target),
        input: on(i.input, target),
        mean: on(i.mean, target),
        invstd: on(i.invstd, target),
        weight: on(i.weight, target),
      });
    };
    const r16 = run("float16");
    const r32 = run("float32");
    for (const k of ["sumDy", "sumDyXmu", "gradWeight", "gradBias"] as const) {
      assert.equal(r16[k]?.dtype, "float32", `${k} follows mean's dtype`);
      // The fp16 run's data went through one fp16 rounding: its sums stay within the float16
      // entry of the fp32 run's (torch_npu asserts 1e-3).
      expectClose(r16[k], f64(r32[k]!), `mix ${k}`, toleranceFor("float16"));
    }
  },
);

// ---------------------------------------------------------------------------------------------
// Reference cases

interface ReduceCase {
  source: string;
  shape: number[];
  dtype: DType;
  statsDType?: DType;
  weight?: boolean;
  /** Fixed statistics (else the batch statistics of the input). */
  mean?: number[];
  invstd?: number[];
  range?: [number, number];
  layout?: "channels-last" | "strided";
  masks?: [boolean, boolean, boolean];
}

const CASES: ReduceCase[] = [
  // hicann/ops-nn norm/sync_batch_norm_backward_reduce/tests/ut/op_host/
  // test_aclnn_batchnorm_backward_reduce.cpp case_bn_backward_recude_for_float_type:
  // {2,3,1,4} ValueRange(-8, 8), mean {-2,2,1}, invstd {0.125,0.1,0.3}, weight {3,3,3}.
  {
    source: "ops-nn ut float",
    shape: [2, 3, 1, 4],
    dtype: "float32",
    mean: [-2, 2, 1],
    invstd: [0.125, 0.1, 0.3],
    weight: true,
    range: [-8, 8],
  },
  {
    source: "ops-nn ut float16",
    shape: [2, 3, 1, 4],
    dtype: "float16",
    mean: [-2, 2, 1],
    invstd: [0.125, 0.1, 0.3],
    weight: true,
    range: [-8, 8],
  },
  {
    source: "ops-nn ut bfloat16",
    shape: [2, 3, 1, 4],
    dtype: "bfloat16",
    mean: [-2, 2, 1],
    invstd: [0.125, 0.1, 0.3],
    weight: true,
    range: [-8, 8],
  },
  // pytorch/pytorch torch/testing/_internal/common_methods_invocations.py
  // sample_inputs_batch_norm shapes (S = 5): (S,S,S), (3,2,4), (3,1), (3,2,3,4), (2,1).
  { source: "PyTorch OpInfo (S,S,S)", shape: [5, 5, 5], dtype: "float32", weight: true },
  { source: "PyTorch OpInfo (3,2,4)", shape: [3, 2, 4], dtype: "float16" },
  { source: "PyTorch OpInfo (3,1)", shape: [3, 1], dtype: "float32" },
  { source: "PyTorch OpInfo (3,2,3,4)", shape: [3, 2, 3, 4], dtype: "bfloat16", weight: true },
  { source: "PyTorch OpInfo (2,1)", shape: [2, 1], dtype: "float32" },
  // Ascend/pytorch test_batch_norm_backward_reduce.py shape [1,3,9,9], fp16 with fp32 stats.
  {
    source: "torch_npu mix precision",
    shape: [1, 3, 9, 9],
    dtype: "float16",
    statsDType: "float32",
    weight: true,
    range: [1, 10],
  },
  {
    source: "torch_npu shape, bf16 data + fp32 stats",
    shape: [1, 3, 9, 9],
    dtype: "bfloat16",
    statsDType: "float32",
    weight: true,
    range: [1, 10],
  },
  // Channels-last and non-contiguous views (CANN doc: gradOut/input support non-contiguous
  // tensors; SyncBatchNorm feeds channels_last activations to this op).
  {
    source: "channels-last 4-D",
    shape: [4, 8, 5, 6],
    dtype: "float32",
    layout: "channels-last",
    weight: true,
  },
  {
    source: "channels-last 5-D fp16",
    shape: [2, 4, 3, 5, 6],
    dtype: "float16",
    layout: "channels-last",
  },
  {
    source: "non-contiguous (strided last dim)",
    shape: [3, 4, 7],
    dtype: "float32",
    layout: "strided",
  },
  // Masks (CANN doc: each output optional).
  { source: "masks inputG only", shape: [4, 3, 5], dtype: "float32", masks: [true, false, false] },
  {
    source: "masks weightG+biasG",
    shape: [4, 3, 5],
    dtype: "bfloat16",
    masks: [false, true, true],
  },
  // Synthetic large case (a ResNet layer shape, [64,256,28,28]) capped below 3e5 elements.
  {
    source: "large N*HW (capped)",
    shape: capShape([64, 256, 28, 28]),
    dtype: "float32",
    weight: true,
  },
  // 8-D, the documented maximum rank.
  { source: "rank 8", shape: [2, 3, 2, 1, 2, 1, 2, 3], dtype: "float32" },
];

function runCase(c: ReduceCase, target: Device, seed: number): void {
  const statsDType = c.statsDType ?? c.dtype;
  const [lo, hi] = c.range ?? [-2, 2];
  let gradOut = uniform(c.shape, c.dtype, seed, lo, hi);
  let input = uniform(c.shape, c.dtype, seed + 1, lo, hi);
  const C = c.shape[1];
  const stats = batchStats64(f64(input), c.shape);
  const mean = fromValues(c.mean ?? stats.mean, [C], statsDType);
  const invstd = fromValues(
    c.invstd ?? stats.variance.map((v) => 1 / Math.sqrt(v + 1e-5)),
    [C],
    statsDType,
  );
  const weight = c.weight ? uniform([C], statsDType, seed + 2, 0.5, 1.5) : undefined;
  if (c.layout === "channels-last") {
    gradOut = channelsLast(gradOut);
    input = channelsLast(input);
  } else if (c.layout === "strided") {
    gradOut = strided(gradOut);
    input = strided(input);
  }
  const [inputG, weightG, biasG] = c.masks ?? [true, true, true];
  const r = batchNormReduceBackward({
    gradOut: on(gradOut, target),
    input: on(input, target),
    mean: on(mean, target),
    invstd: on(invstd, target),
    weight: onOpt(weight, target),
    inputG,
    weightG,
    biasG,
  });
  const e = batchNormReduceBackward64(f64(gradOut), f64(input), c.shape, f64(mean), f64(invstd));
  const label = `${c.source} ${JSON.stringify(c.shape)} ${c.dtype}`;
  if (inputG) {
    expectClose(r.sumDy, e.sumDy, `${label} sumDy`);
    expectClose(r.sumDyXmu, e.sumDyXmu, `${label} sumDyXmu`);
  } else {
    assert.equal(r.sumDy, null);
    assert.equal(r.sumDyXmu, null);
  }
  if (weightG) expectClose(r.gradWeight, e.gradWeight, `${label} gradWeight`);
  else assert.equal(r.gradWeight, null);
  if (biasG) expectClose(r.gradBias, e.gradBias, `${label} gradBias`);
  else assert.equal(r.gradBias, null);
  // Output dtypes: per-channel sums in mean's dtype, weight grads in weight's (DESIGN.md).
  if (inputG) assert.equal(r.sumDy?.dtype, statsDType);
}

forEachBackend("reduce: peer shapes vs float64 reference", ({ device: target }) => {
  runAll(CASES, (c, k) => runCase(c, target, 100 + 10 * k));
});

// Empty batch (CANN doc: "支持空Tensor"; "当任一输入的为空Tensor时，输出为空Tensor"): with
// N = 0 the per-channel outputs still have C elements; their sums are 0.
forEachBackend("reduce: empty batch N=0 gives zero per-channel sums", ({ device: target }) => {
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    const r = batchNormReduceBackward({
      gradOut: on(Tensor.zeros([0, 3, 4], dtype), target),
      input: on(Tensor.zeros([0, 3, 4], dtype), target),
      mean: on(Tensor.zeros([3], dtype), target),
      invstd: on(Tensor.ones([3], dtype), target),
    });
    for (const k of ["sumDy", "sumDyXmu", "gradWeight", "gradBias"] as const) {
      expectClose(r[k], [0, 0, 0], `empty ${dtype} ${k}`);
    }
  }
});
