/**
 * aclnnBatchNorm (src/ops/batch_norm.ts), per channel with M = numel / C:
 *
 * ```
 * training:  mean, var = the batch's (biased);  saveMean = mean, saveInvstd = 1/sqrt(var + eps)
 *            runningMean <- (1 - momentum) * runningMean + momentum * mean
 *            runningVar  <- (1 - momentum) * runningVar  + momentum * var * M / (M - 1)
 * eval:      mean = runningMean (0 when absent), var = runningVar (1 when absent); no saves
 * output = (x - mean) / sqrt(var + eps) * weight + bias      (weight 1, bias 0 when absent)
 * ```
 *
 * An empty batch (M = 0) in training gives saveMean 0 and saveInvstd NaN and leaves the
 * running statistics untouched (README "What runs where").
 *
 * @module
 */

import { channelSplit, eachElement, orFill } from "./geometry.ts";
import { batchStats64, invstdOf } from "./statistics.ts";

/** Arguments, in logical row-major order. */
export interface BatchNormArgs {
  x: ArrayLike<number>;
  shape: readonly number[];
  weight?: ArrayLike<number>;
  bias?: ArrayLike<number>;
  runningMean?: ArrayLike<number>;
  runningVar?: ArrayLike<number>;
  training: boolean;
  momentum: number;
  eps: number;
}

/**
 * Outputs. saveMean/saveInvstd are empty in evaluation mode (no saves are written); the
 * running statistics are their values after the call (absent when not given).
 */
export interface BatchNorm64 {
  output: Float64Array;
  saveMean: Float64Array;
  saveInvstd: Float64Array;
  runningMean?: Float64Array;
  runningVar?: Float64Array;
}

/** batchNorm. */
export function batchNorm64(a: BatchNormArgs): BatchNorm64 {
  const s = channelSplit(a.shape);
  let runningMean = a.runningMean ? Float64Array.from(a.runningMean) : undefined;
  let runningVar = a.runningVar ? Float64Array.from(a.runningVar) : undefined;
  let mean: Float64Array;
  let invstd: Float64Array;
  let saveMean: Float64Array = new Float64Array(0);
  let saveInvstd: Float64Array = new Float64Array(0);
  if (a.training) {
    const batch = batchStats64(a.x, a.shape);
    mean = batch.mean;
    invstd = invstdOf(batch.variance, a.eps);
    saveMean = mean;
    saveInvstd = invstd;
    if (s.M > 0) {
      const k = a.momentum;
      runningMean = runningMean?.map((v, c) => (1 - k) * v + k * mean[c]);
      runningVar = runningVar?.map((v, c) => (1 - k) * v + k * batch.variance[c] * s.M / (s.M - 1));
    }
  } else {
    mean = orFill(a.runningMean, s.C, 0);
    invstd = invstdOf(orFill(a.runningVar, s.C, 1), a.eps);
  }
  const output = new Float64Array(a.x.length);
  eachElement(s, (i, c) => {
    output[i] = (a.x[i] - mean[c]) * invstd[c] * (a.weight ? a.weight[c] : 1) +
      (a.bias ? a.bias[c] : 0);
  });
  return { output, saveMean, saveInvstd, runningMean, runningVar };
}
