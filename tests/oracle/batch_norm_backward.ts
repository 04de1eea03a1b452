/**
 * aclnnBatchNormBackward (src/ops/batch_norm_backward.ts). At statistics (mean, invstd), per
 * channel with M = numel / C and xhat = (x - mean) * invstd, training mode differentiates
 * through the batch statistics (Ioffe & Szegedy 2015):
 *
 * ```
 * gradInput  = weight * invstd / M * (M * dy - sum(dy) - xhat * sum(dy * xhat))
 * gradWeight = sum(dy * xhat),   gradBias = sum(dy)
 * ```
 *
 * evaluation mode treats the statistics as constants: gradInput = dy * weight * invstd.
 * The operator takes saveMean/saveInvstd in training and runningMean and
 * 1/sqrt(runningVar + eps) in evaluation; absent tensors mean weight 1, mean 0, var 1,
 * invstd 1. Over an empty batch the per-channel gradients are 0 (README).
 *
 * @module
 */

import { channelSplit, eachElement, orFill } from "./geometry.ts";
import { invstdOf } from "./statistics.ts";

/** BatchNorm gradients: dL/dx, dL/dweight, dL/dbias. */
export interface BatchNormBackward64 {
  gradInput: Float64Array;
  gradWeight: Float64Array;
  gradBias: Float64Array;
}

/** The gradients at given statistics; `weight` undefined means all ones. */
export function batchNormBackwardAt64(
  dy: ArrayLike<number>,
  x: ArrayLike<number>,
  shape: readonly number[],
  weight: ArrayLike<number> | undefined,
  mean: ArrayLike<number>,
  invstd: ArrayLike<number>,
  training: boolean,
): BatchNormBackward64 {
  const s = channelSplit(shape);
  const gradBias = new Float64Array(s.C);
  const gradWeight = new Float64Array(s.C);
  const gradInput = new Float64Array(dy.length);
  if (s.M === 0) return { gradInput, gradWeight, gradBias };
  const xhat = (i: number, c: number) => (x[i] - mean[c]) * invstd[c];
  eachElement(s, (i, c) => {
    gradBias[c] += dy[i];
    gradWeight[c] += dy[i] * xhat(i, c);
  });
  eachElement(s, (i, c) => {
    const w = weight ? weight[c] : 1;
    gradInput[i] = training
      ? w * invstd[c] / s.M * (s.M * dy[i] - gradBias[c] - xhat(i, c) * gradWeight[c])
      : dy[i] * w * invstd[c];
  });
  return { gradInput, gradWeight, gradBias };
}

/** Arguments of the operator, in logical row-major order. */
export interface BatchNormBackwardArgs {
  dy: ArrayLike<number>;
  x: ArrayLike<number>;
  shape: readonly number[];
  weight?: ArrayLike<number>;
  runningMean?: ArrayLike<number>;
  runningVar?: ArrayLike<number>;
  saveMean?: ArrayLike<number>;
  saveInvstd?: ArrayLike<number>;
  training: boolean;
  eps: number;
}

/** batchNormBackward: picks the statistics the mode uses, with the documented defaults. */
export function batchNormBackward64(a: BatchNormBackwardArgs): BatchNormBackward64 {
  const C = channelSplit(a.shape).C;
  const mean = a.training ? orFill(a.saveMean, C, 0) : orFill(a.runningMean, C, 0);
  const invstd = a.training
    ? orFill(a.saveInvstd, C, 1)
    : invstdOf(orFill(a.runningVar, C, 1), a.eps);
  return batchNormBackwardAt64(a.dy, a.x, a.shape, a.weight, mean, invstd, a.training);
}
