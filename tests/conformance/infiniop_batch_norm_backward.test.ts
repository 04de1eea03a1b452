/**
 * Conformance of the InfiniOp-shaped BatchNorm backward (createBatchNormBackwardDescriptor)
 * with InfiniCore's test cases: (N, C, L) contiguous data, F32/F16/BF16, out-of-place and
 * in-place (grad_input is grad_output), strided grad_weight/grad_bias, a workspace of the
 * reported size.
 *
 * Semantics checked (seed infiniop-BatchNormBackward.md, DESIGN.md): running_mean/running_var
 * are the batch's E[x] and biased Var[x] over dims 0 and 2, and the gradient is BatchNorm's
 * training-mode gradient at invstd = 1/sqrt(running_var + eps), eps defaulting to 0. This is
 * what qinyiqun/InfiniCore's test computes (torch BatchNorm1d, momentum 1, eps 0, train mode,
 * running stats = batch stats). Other InfiniCore test variants compute an eval-mode gradient
 * with random running statistics; their shapes are kept here, their semantics are not (the
 * last test pins what this package does with such statistics).
 *
 * @module
 */

import assert from "node:assert/strict";
import { createBatchNormBackwardDescriptor, type DType, Tensor } from "../../mod.ts";
import type { Device } from "../../src/tensor/device.ts";
import { forEachBackend } from "../helpers/backends.ts";
import { batchStats64, infiniopBatchNormBackward64 } from "../oracle/mod.ts";
import { capShape, expectClose, f64, fromValues, on, runAll, uniform } from "./common.ts";

interface InfiniCase {
  source: string;
  shape: [number, number, number];
  gradWeightStride?: number;
  gradBiasStride?: number;
  eps?: number;
}

const QINYIQUN = "qinyiqun/InfiniCore test/infiniop/batch_norm_backward.py";
const INFINITENSOR = "InfiniTensor/InfiniCore test/infiniop/batch_norm_backward.py@4ef721a";
const WAWAHEJUN = "wawahejun/InfiniCore-Reference test/infiniop/batch_norm_backward.py";

const CASES: InfiniCase[] = [
  // (shape, grad_weight_strides, grad_bias_strides); tolerances there: f16 1e-1, f32 5e-2,
  // bf16 2e-1 (ours are tighter: tests/helpers/tolerance.ts).
  { source: QINYIQUN, shape: [5, 4, 3], gradWeightStride: 2 },
  { source: QINYIQUN, shape: [6, 10, 5], gradBiasStride: 3 },
  { source: QINYIQUN, shape: [15, 9, 4], gradWeightStride: 1, gradBiasStride: 1 },
  // Shapes of the upstream test (its eval-mode reference is not reused); (1,512,1024) and
  // (8,128,256) capped near 3e5 elements.
  { source: INFINITENSOR, shape: [2, 16, 32] },
  { source: INFINITENSOR, shape: [4, 64, 128] },
  { source: INFINITENSOR, shape: capShape([8, 128, 256]) as [number, number, number] },
  { source: INFINITENSOR, shape: capShape([1, 512, 1024]) as [number, number, number] },
  { source: INFINITENSOR, shape: [16, 32, 64] },
  // Shapes of the third variant (its create call passes eps = 1e-5, used here: with eps 0 the
  // M = 1 shapes have Var = 0 and an infinite invstd).
  ...([
    [1, 1, 1],
    [1, 1, 2],
    [1, 2, 1],
    [2, 1, 1],
    [2, 2, 4],
    [13, 2, 4],
    [3, 5, 7],
    [8, 3, 16],
    [32, 4, 32],
    [4, 1, 64],
    [4, 128, 64],
    [4, 8, 1],
    [4, 8, 1024],
    [16, 4, 2816],
    [4, 8, 5632],
    [100, 1, 10],
    [10, 100, 10],
    [1, 256, 256],
    [256, 1, 256],
    [256, 256, 1],
    [1, 1, 10000],
    [1, 1000, 10],
    [1000, 1, 10],
    [64, 64, 64],
  ] as [number, number, number][]).map((shape) => ({ source: WAWAHEJUN, shape, eps: 1e-5 })),
];

const DTYPES: DType[] = ["float32", "float16", "bfloat16"];

/** A (C) tensor whose elements are `stride` apart (InfiniCore TestTensor with strides [s]). */
function perChannel(C: number, dtype: DType, stride = 1): Tensor {
  return Tensor.zeros([C * stride], dtype).slice(0, 0, C * stride, stride);
}

function runCase(c: InfiniCase, dtype: DType, inPlace: boolean, target: Device, seed: number) {
  const [N, C, L] = c.shape;
  const shape = [N, C, L];
  // InfiniCore TestTensor "random" data; the batch statistics in the data dtype.
  const input = uniform(shape, dtype, seed, -1, 1);
  const gradOutputHost = uniform(shape, dtype, seed + 1, -1, 1);
  const weight = uniform([C], dtype, seed + 2, 0.5, 1.5);
  const st = batchStats64(f64(input), shape);
  const runningMean = fromValues(st.mean, [C], dtype);
  const runningVar = fromValues(st.variance, [C], dtype);
  const eps = c.eps ?? 0;
  const expected = infiniopBatchNormBackward64({
    dy: f64(gradOutputHost),
    x: f64(input),
    shape,
    weight: f64(weight),
    runningMean: f64(runningMean),
    runningVar: f64(runningVar),
    eps,
  });

  const gradOutput = on(gradOutputHost, target);
  const gradInput = inPlace ? gradOutput : on(Tensor.zeros(shape, dtype), target);
  const gradWeight = on(perChannel(C, dtype, c.gradWeightStride), target);
  const gradBias = on(perChannel(C, dtype, c.gradBiasStride), target);
  const args = {
    gradInput,
    gradWeight,
    gradBias,
    input: on(input, target),
    gradOutput,
    weight: on(weight, target),
    runningMean: on(runningMean, target),
    runningVar: on(runningVar, target),
  };
  using desc = createBatchNormBackwardDescriptor({
    ...args,
    ...(c.eps === undefined ? {} : { eps }),
  });
  assert.equal(desc.dtype, dtype);
  assert.deepEqual([desc.N, desc.C, desc.L], shape);
  desc.compute({ ...args, workspace: new Uint8Array(desc.workspaceSize) });
  const label = `${c.source} ${JSON.stringify(shape)} ${dtype} ${
    inPlace ? "in-place" : "out-of-place"
  }`;
  expectClose(gradInput, expected.gradInput, `${label} grad_input`);
  expectClose(gradWeight, expected.gradWeight, `${label} grad_weight`);
  expectClose(gradBias, expected.gradBias, `${label} grad_bias`);
}

forEachBackend(
  "infiniop: InfiniCore (N, C, L) cases, out-of-place and in-place",
  ({ device: target }) => {
    const runs = CASES.flatMap((c) =>
      DTYPES.flatMap((dtype) => [false, true].map((inPlace) => ({ c, dtype, inPlace })))
    );
    runAll(runs, (r, k) => runCase(r.c, r.dtype, r.inPlace, target, 3000 + 7 * k));
  },
);

// InfiniCore's upstream variant feeds "running" statistics that are NOT the batch's (random
// mean, var in [0.5, 1)). With this package's documented semantics the result is the
// training-mode gradient at those statistics (not PyTorch's eval-mode gradient); grad_weight
// and grad_bias agree in both readings. Pinned here so a change of semantics is noticed.
forEachBackend(
  "infiniop: non-batch running statistics use the training-mode formula",
  ({ device: target }) => {
    const shape = [4, 8, 16];
    const input = uniform(shape, "float32", 41, -1, 1);
    const gradOutput = uniform(shape, "float32", 42, -1, 1);
    const weight = uniform([8], "float32", 43, 0.5, 1.5);
    const runningMean = uniform([8], "float32", 44, -0.25, 0.25);
    const runningVar = uniform([8], "float32", 45, 0.5, 1);
    const eps = 1e-5;
    const gradInput = on(Tensor.zeros(shape), target);
    const gradWeight = on(Tensor.zeros([8]), target);
    const gradBias = on(Tensor.zeros([8]), target);
    const args = {
      gradInput,
      gradWeight,
      gradBias,
      input: on(input, target),
      gradOutput: on(gradOutput, target),
      weight: on(weight, target),
      runningMean: on(runningMean, target),
      runningVar: on(runningVar, target),
    };
    using desc = createBatchNormBackwardDescriptor({ ...args, eps });
    desc.compute(args);
    const reading = (training: boolean) =>
      infiniopBatchNormBackward64({
        dy: f64(gradOutput),
        x: f64(input),
        shape,
        weight: f64(weight),
        runningMean: f64(runningMean),
        runningVar: f64(runningVar),
        eps,
        training,
      });
    const train = reading(true);
    const evalMode = reading(false);
    expectClose(gradInput, train.gradInput, "grad_input (training formula)");
    expectClose(gradWeight, evalMode.gradWeight, "grad_weight (same in both readings)");
    expectClose(gradBias, evalMode.gradBias, "grad_bias (same in both readings)");
  },
);
