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
import {
  REDUCE_CASES,
  REDUCE_DOC_EXPECTED,
  type ReduceCase,
  reduceDocExample,
  reduceInputs,
  reduceSeed,
  TORCH_NPU_EXPECTED,
  torchNpuInputs,
} from "../fixtures/conformance/batch_norm_reduce_backward.ts";
import { forEachBackend } from "../helpers/backends.ts";
import { TOLERANCE, toleranceFor } from "../helpers/tolerance.ts";
import { batchNormReduceBackward64 } from "../oracle/mod.ts";
import { expectClose, f64, on, onOpt, runAll } from "./common.ts";
import { NumpyRandomState } from "./numpy_random.ts";

// ---------------------------------------------------------------------------------------------
// Known answers

// The CANN documentation example (tests/fixtures/conformance/batch_norm_reduce_backward.ts).
forEachBackend("reduce: CANN doc example [4,2] known answer", ({ device: target }) => {
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    const i = reduceDocExample(dtype);
    const r = batchNormReduceBackward({
      gradOut: on(i.gradOut, target),
      input: on(i.input, target),
      mean: on(i.mean, target),
      invstd: on(i.invstd, target),
      weight: onOpt(i.weight, target),
      inputG: i.inputG,
      weightG: i.weightG,
      biasG: i.biasG,
    });
    for (const k of ["sumDy", "sumDyXmu", "gradWeight", "gradBias"] as const) {
      expectClose(r[k], REDUCE_DOC_EXPECTED[k], `${dtype} ${k}`);
    }
  }
});

// torch_npu test_batch_norm_backward_reduce (its inputs and expected arrays live in the fixture).
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
      weight: onOpt(i.weight, target),
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
        weight: onOpt(i.weight, target),
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

// The cases (sources cited with each) live in tests/fixtures/conformance/.

function runCase(c: ReduceCase, target: Device, seed: number): void {
  const statsDType = c.statsDType ?? c.dtype;
  const { gradOut, input, mean, invstd, weight, inputG, weightG, biasG } = reduceInputs(c, seed);
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
  runAll(REDUCE_CASES, (c, k) => runCase(c, target, reduceSeed(k)));
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
