/**
 * aclnnBatchNormReduceBackward (seed aclnnBatchNormReduceBackward.md): per channel,
 *
 * ```
 * sumDy = sum(dy),   sumDyXmu = sum(dy * (x - mean)),
 * gradWeight = sumDyXmu * invstd,   gradBias = sumDy
 * ```
 *
 * Over an empty batch every sum is 0 (README), whatever invstd holds.
 *
 * @module
 */

import { channelSplit, eachElement } from "./geometry.ts";

/** The four per-channel reductions. */
export interface ReduceBackward64 {
  sumDy: Float64Array;
  sumDyXmu: Float64Array;
  gradWeight: Float64Array;
  gradBias: Float64Array;
}

/** batchNormReduceBackward over logical (N, C, *) data. */
export function batchNormReduceBackward64(
  dy: ArrayLike<number>,
  x: ArrayLike<number>,
  shape: readonly number[],
  mean: ArrayLike<number>,
  invstd: ArrayLike<number>,
): ReduceBackward64 {
  const s = channelSplit(shape);
  const sumDy = new Float64Array(s.C);
  const sumDyXmu = new Float64Array(s.C);
  eachElement(s, (i, c) => {
    sumDy[c] += dy[i];
    sumDyXmu[c] += dy[i] * (x[i] - mean[c]);
  });
  const gradWeight = s.M === 0 ? new Float64Array(s.C) : sumDyXmu.map((v, c) => v * invstd[c]);
  return { sumDy, sumDyXmu, gradWeight, gradBias: sumDy.slice() };
}
