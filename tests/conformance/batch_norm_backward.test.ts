/**
 * Conformance of batchNormBackward (aclnnBatchNormBackward, aten native_batch_norm_backward)
 * with peers' cases, training and evaluation mode, against the float64 oracle (tests/oracle/,
 * itself checked against finite differences of a float64 forward), on every backend.
 *
 * @module
 */

import assert from "node:assert/strict";
import { batchNormBackward, type DType, Tensor } from "../../mod.ts";
import type { Device } from "../../src/tensor/device.ts";
import { forEachBackend } from "../helpers/backends.ts";
import { invariantTolerance } from "../helpers/tolerance.ts";
import {
  batchNormBackward64,
  batchNormBackwardAt64,
  batchStats64,
  invstdOf,
} from "../oracle/mod.ts";
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

interface BnCase {
  source: string;
  shape: number[];
  dtype: DType;
  /** dtype of weight/runningMean/runningVar (default dtype). */
  paramDType?: DType;
  /** dtype of saveMean/saveInvstd (default paramDType). */
  saveDType?: DType;
  training: boolean;
  eps?: number;
  weight?: boolean;
  /** Storage order: "channels-last" (NHWC/NDHWC) or a strided (non-contiguous) view. */
  layout?: "channels-last" | "strided";
  mask?: [boolean, boolean, boolean];
  /** Data range of x (dy is in [-1, 1]). */
  range?: [number, number];
}

// Notation for CANN ST rows (hicann/ops-nn norm/batch_norm_grad_v3/tests/st/arch35/
// ttk_kernel_batch_norm_grad_v3.csv): shapes are given as stored; NHWC/NDHWC rows are stored
// channels-last, so the logical (N, C, ...) tensor is built and laid out channels-last here.
// Peer shapes above ~3e5 elements are shrunk along their largest non-channel dims (capShape).
// The CSV's value ranges (some give running_var in (-1, 1) with eps 0) are not reused: the
// ranges here keep every variance positive.
const CASES: BnCase[] = [
  // pytorch/pytorch torch/testing/_internal/common_methods_invocations.py
  // sample_inputs_batch_norm (S = 5), with and without weight:
  {
    source: "PyTorch OpInfo (S,S,S) train eps .6",
    shape: [5, 5, 5],
    dtype: "float32",
    training: true,
    eps: 0.6,
    weight: true,
  },
  {
    source: "PyTorch OpInfo (S,S,S) train eps .6 no weight",
    shape: [5, 5, 5],
    dtype: "float32",
    training: true,
    eps: 0.6,
  },
  {
    source: "PyTorch OpInfo (3,2,4) eval",
    shape: [3, 2, 4],
    dtype: "float32",
    training: false,
    weight: true,
  },
  {
    source: "PyTorch OpInfo (3,2,4) eval no weight",
    shape: [3, 2, 4],
    dtype: "float16",
    training: false,
  },
  {
    source: "PyTorch OpInfo (3,1) train",
    shape: [3, 1],
    dtype: "float32",
    training: true,
    weight: true,
  },
  {
    source: "PyTorch OpInfo (3,2,3,4) train eps .5",
    shape: [3, 2, 3, 4],
    dtype: "bfloat16",
    training: true,
    eps: 0.5,
    weight: true,
  },
  {
    source: "PyTorch OpInfo (3,2,3,4) eval eps .5",
    shape: [3, 2, 3, 4],
    dtype: "float32",
    training: false,
    eps: 0.5,
    weight: true,
  },
  {
    source: "PyTorch OpInfo (2,1) default (eval)",
    shape: [2, 1],
    dtype: "float32",
    training: false,
    weight: true,
  },
  // pytorch/pytorch OpInfo nn.functional.batch_norm shapes for BatchNorm1d/2d/3d modules
  // (sample_inputs_batchnorm1d/2d/3d: (5,9), (8,3,5,4), (8,3,4,8,5)).
  {
    source: "PyTorch BatchNorm1d (5,9)",
    shape: [5, 9],
    dtype: "float32",
    training: true,
    weight: true,
  },
  {
    source: "PyTorch BatchNorm2d (8,3,5,4)",
    shape: [8, 3, 5, 4],
    dtype: "float16",
    training: true,
    weight: true,
  },
  {
    source: "PyTorch BatchNorm3d (8,3,4,8,5)",
    shape: [8, 3, 4, 8, 5],
    dtype: "float32",
    training: true,
    weight: true,
  },
  // CANN ST BatchNormGradV3_bfloat16_NCHW_fuzz_000080 (167,3,192,73), bf16 data + bf16
  // weight/running, fp32 save stats, training, eps 3.968e-4 (capped).
  {
    source: "ops-nn ST fuzz_000080",
    shape: capShape([167, 3, 192, 73]),
    dtype: "bfloat16",
    saveDType: "float32",
    training: true,
    eps: 0.0003968018821429506,
    weight: true,
  },
  // fuzz_000107 NHWC (2,839,17,1): N=2, H=839, W=17, C=1; bf16 data, fp32 params.
  {
    source: "ops-nn ST fuzz_000107 NHWC C=1",
    shape: [2, 1, 839, 17],
    dtype: "bfloat16",
    paramDType: "float32",
    training: true,
    eps: 0.0008686412649030296,
    weight: true,
    layout: "channels-last",
  },
  // fuzz_000122 NCHW (101,82,48,1), bf16 data, fp32 params (capped).
  {
    source: "ops-nn ST fuzz_000122",
    shape: capShape([101, 82, 48, 1]),
    dtype: "bfloat16",
    paramDType: "float32",
    training: true,
    eps: 0.0003430689628900672,
    weight: true,
  },
  // fuzz_000143 NCDHW (1,1,1,1,1008): one channel, M = 1008.
  {
    source: "ops-nn ST fuzz_000143",
    shape: [1, 1, 1, 1, 1008],
    dtype: "bfloat16",
    saveDType: "float32",
    training: true,
    eps: 0.0008526239855698757,
    weight: true,
  },
  // fuzz_000167 NDHWC (563,1,7,2,353): N=563, D=1, H=7, W=2, C=353 (capped).
  {
    source: "ops-nn ST fuzz_000167 NDHWC",
    shape: capShape([563, 353, 1, 7, 2]),
    dtype: "bfloat16",
    saveDType: "float32",
    training: true,
    eps: 9.071931467114928e-5,
    weight: true,
    layout: "channels-last",
  },
  // fuzz_000174 NCDHW (73,1,1,1,1): M = 73 over the batch only.
  {
    source: "ops-nn ST fuzz_000174",
    shape: [73, 1, 1, 1, 1],
    dtype: "bfloat16",
    saveDType: "float32",
    training: true,
    eps: 5.874676531501853e-6,
    weight: true,
  },
  // fuzz_000196 NDHWC (1,103,1,1,1): C = 1, M = 103.
  {
    source: "ops-nn ST fuzz_000196 NDHWC",
    shape: [1, 1, 103, 1, 1],
    dtype: "bfloat16",
    saveDType: "float32",
    training: true,
    eps: 0.0007606840441832074,
    weight: true,
    layout: "channels-last",
  },
  // infer_003 NHWC (10,2,3,200): C = 200, eval, eps 0 (1e-12 here: eps <= 0 is refused), bf16 params, fp32 save stats.
  {
    source: "ops-nn ST infer_003 NHWC eval",
    shape: [10, 200, 2, 3],
    dtype: "bfloat16",
    saveDType: "float32",
    training: false,
    eps: 1e-12,
    weight: true,
    layout: "channels-last",
  },
  // infer_010 NCHW (10,2,3,200): C = 2, eval, eps 0 (1e-12 here: eps <= 0 is refused), fp32 params.
  {
    source: "ops-nn ST infer_010 eval",
    shape: [10, 2, 3, 200],
    dtype: "bfloat16",
    paramDType: "float32",
    training: false,
    eps: 1e-12,
    weight: true,
  },
  // infer_019 NCDHW (1,128,1,1,1): eval, M = 1.
  {
    source: "ops-nn ST infer_019 eval M=1",
    shape: [1, 128, 1, 1, 1],
    dtype: "bfloat16",
    saveDType: "float32",
    training: false,
    eps: 0.0004072683633017119,
    weight: true,
  },
  // infer_044 NCHW (1,397,1,577): eval, fp32 params.
  {
    source: "ops-nn ST infer_044 eval",
    shape: [1, 397, 1, 577],
    dtype: "bfloat16",
    paramDType: "float32",
    training: false,
    eps: 0.0008814309963481156,
    weight: true,
  },
  // infer_066 NHWC (1,94,115,137): C = 137, eval, bf16 params (capped).
  {
    source: "ops-nn ST infer_066 NHWC eval",
    shape: capShape([1, 137, 94, 115]),
    dtype: "bfloat16",
    saveDType: "float32",
    training: false,
    eps: 0.0006,
    weight: true,
    layout: "channels-last",
  },
  // fp32/fp16 variants of the CANN ST NHWC rows above (channels-last storage, training and
  // eval); and a non-contiguous view (aclnn documents non-contiguous input support).
  {
    source: "channels-last train fp32",
    shape: [4, 16, 7, 7],
    dtype: "float32",
    training: true,
    weight: true,
    layout: "channels-last",
  },
  {
    source: "channels-last train fp16",
    shape: [4, 16, 7, 7],
    dtype: "float16",
    training: true,
    weight: true,
    layout: "channels-last",
  },
  {
    source: "channels-last eval fp32",
    shape: [4, 16, 7, 7],
    dtype: "float32",
    training: false,
    weight: true,
    layout: "channels-last",
  },
  {
    source: "non-contiguous train",
    shape: [6, 5, 9],
    dtype: "float32",
    training: true,
    weight: true,
    layout: "strided",
  },
  // Masks (aclnn outputMask).
  {
    source: "mask [T,F,F]",
    shape: [4, 3, 5],
    dtype: "float32",
    training: true,
    weight: true,
    mask: [true, false, false],
  },
  {
    source: "mask [F,T,T]",
    shape: [4, 3, 5],
    dtype: "float32",
    training: true,
    weight: true,
    mask: [false, true, true],
  },
  {
    source: "mask [T,F,T] eval",
    shape: [4, 3, 5],
    dtype: "float16",
    training: false,
    weight: true,
    mask: [true, false, true],
  },
  // Large |mean| (x in [1000, 1001]): the two-pass form must not lose the centred sums.
  {
    source: "large mean fp32",
    shape: [8, 4, 32],
    dtype: "float32",
    training: true,
    weight: true,
    range: [1000, 1001],
  },
];

function runCase(c: BnCase, target: Device, seed: number): void {
  const paramDType = c.paramDType ?? c.dtype;
  const saveDType = c.saveDType ?? paramDType;
  const eps = c.eps ?? 1e-5;
  const C = c.shape[1];
  const [lo, hi] = c.range ?? [-2, 2];
  let gradOut = uniform(c.shape, c.dtype, seed, -1, 1);
  let input = uniform(c.shape, c.dtype, seed + 1, lo, hi);
  const weight = c.weight ? uniform([C], paramDType, seed + 2, 0.5, 1.5) : undefined;
  const runningMean = uniform([C], paramDType, seed + 3, -0.5, 0.5);
  const runningVar = uniform([C], paramDType, seed + 4, 0.1, 2);
  const stats = batchStats64(f64(input), c.shape);
  const saveMean = fromValues(stats.mean, [C], saveDType);
  const saveInvstd = fromValues(stats.variance.map((v) => 1 / Math.sqrt(v + eps)), [C], saveDType);
  if (c.layout === "channels-last") {
    gradOut = channelsLast(gradOut);
    input = channelsLast(input);
  } else if (c.layout === "strided") {
    gradOut = strided(gradOut);
    input = strided(input);
  }
  const mask = c.mask ?? [true, true, true];
  const r = batchNormBackward({
    gradOut: on(gradOut, target),
    input: on(input, target),
    weight: onOpt(weight, target),
    runningMean: on(runningMean, target),
    runningVar: on(runningVar, target),
    saveMean: on(saveMean, target),
    saveInvstd: on(saveInvstd, target),
    training: c.training,
    eps,
    outputMask: mask,
  });
  const e = batchNormBackward64({
    dy: f64(gradOut),
    x: f64(input),
    shape: c.shape,
    weight: weight ? f64(weight) : undefined,
    runningMean: f64(runningMean),
    runningVar: f64(runningVar),
    saveMean: f64(saveMean),
    saveInvstd: f64(saveInvstd),
    training: c.training,
    eps,
  });
  const label = `${c.source} ${JSON.stringify(c.shape)} ${c.dtype} training=${c.training}`;
  if (mask[0]) {
    assert.deepEqual(r.gradInput?.shape, c.shape, `${label} gradInput shape`);
    assert.equal(r.gradInput?.dtype, c.dtype, `${label} gradInput dtype`);
    expectClose(r.gradInput, e.gradInput, `${label} gradInput`);
  } else assert.equal(r.gradInput, null);
  if (mask[1]) expectClose(r.gradWeight, e.gradWeight, `${label} gradWeight`);
  else assert.equal(r.gradWeight, null);
  if (mask[2]) expectClose(r.gradBias, e.gradBias, `${label} gradBias`);
  else assert.equal(r.gradBias, null);
}

forEachBackend("bn backward: peer shapes vs float64 reference", ({ device: target }) => {
  runAll(CASES, (c, k) => runCase(c, target, 500 + 10 * k));
});

// A training-mode invariant that holds whatever the data (the gradient wrt x of a BatchNorm
// output is orthogonal to the constants per channel): with weight = 1, sum(dx) = 0.
forEachBackend("bn backward: training gradInput sums to zero per channel", ({ device: target }) => {
  const shape = [6, 3, 10];
  const x = uniform(shape, "float32", 7, -3, 3);
  const dy = uniform(shape, "float32", 8);
  const st = batchStats64(f64(x), shape);
  const r = batchNormBackward({
    gradOut: on(dy, target),
    input: on(x, target),
    saveMean: on(fromValues(st.mean, [3], "float32"), target),
    saveInvstd: on(fromValues(invstdOf(st.variance, 1e-5), [3], "float32"), target),
    training: true,
  });
  const dx = f64(r.gradInput!);
  const tol = invariantTolerance(60);
  for (let c = 0; c < 3; c++) {
    let s = 0;
    let abs = 0;
    for (let n = 0; n < 6; n++) {
      for (let j = 0; j < 10; j++) {
        s += dx[(n * 3 + c) * 10 + j];
        abs += Math.abs(dx[(n * 3 + c) * 10 + j]);
      }
    }
    assert.ok(Math.abs(s) <= tol.atol + tol.rtol * abs, `channel ${c}: sum(dx) = ${s}`);
  }
});

// Empty batch: PyTorch OpInfo has empty-input batch_norm samples ((0,) shapes; here in the
// rank >= 2 form aclnn accepts, N = 0): gradInput is empty, gradWeight/gradBias are zeros.
forEachBackend("bn backward: empty batch N=0, training and eval", ({ device: target }) => {
  for (const training of [true, false]) {
    for (const dtype of ["float32", "float16", "bfloat16"] as const) {
      const r = batchNormBackward({
        gradOut: on(Tensor.zeros([0, 3, 4], dtype), target),
        input: on(Tensor.zeros([0, 3, 4], dtype), target),
        weight: on(Tensor.ones([3], dtype), target),
        runningMean: on(Tensor.zeros([3], dtype), target),
        runningVar: on(Tensor.ones([3], dtype), target),
        saveMean: on(Tensor.zeros([3], dtype), target),
        saveInvstd: on(Tensor.ones([3], dtype), target),
        training,
      });
      assert.deepEqual(r.gradInput?.shape, [0, 3, 4]);
      expectClose(r.gradWeight, [0, 0, 0], `empty ${dtype} t=${training} gradWeight`);
      expectClose(r.gradBias, [0, 0, 0], `empty ${dtype} t=${training} gradBias`);
    }
  }
});

// Affine-less evaluation without running stats: runningMean/runningVar/weight are optional in
// aclnnBatchNormBackward (hicann/ops-nn norm/batch_norm_grad_v3/docs/aclnnBatchNormBackward.md);
// the library contract (src/ops/batch_norm_backward.ts) reads absent ones as 0 / 1 / 1.
forEachBackend(
  "bn backward: eval without running stats uses mean 0, var 1",
  ({ device: target }) => {
    const shape = [2, 3, 4];
    const x = uniform(shape, "float32", 11);
    const dy = uniform(shape, "float32", 12);
    const r = batchNormBackward({ gradOut: on(dy, target), input: on(x, target), training: false });
    const e = batchNormBackwardAt64(
      f64(dy),
      f64(x),
      shape,
      undefined,
      new Float64Array(3),
      new Float64Array(3).fill(1 / Math.sqrt(1 + 1e-5)),
      false,
    );
    expectClose(r.gradInput, e.gradInput, "gradInput");
    expectClose(r.gradWeight, e.gradWeight, "gradWeight");
    expectClose(r.gradBias, e.gradBias, "gradBias");
  },
);
