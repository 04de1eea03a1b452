/**
 * aclnnBatchNormElemt (src/ops/batch_norm_elemt.ts): output = (x - mean) * invstd * weight +
 * bias per channel (weight 1, bias 0 when absent); eps is not used.
 *
 * @module
 */

import { channelSplit, eachElement } from "./geometry.ts";

/** Arguments, in logical row-major order. */
export interface BatchNormElemtArgs {
  x: ArrayLike<number>;
  shape: readonly number[];
  mean: ArrayLike<number>;
  invstd: ArrayLike<number>;
  weight?: ArrayLike<number>;
  bias?: ArrayLike<number>;
}

/** batchNormElemt's output. */
export function batchNormElemt64(a: BatchNormElemtArgs): Float64Array {
  const s = channelSplit(a.shape);
  const y = new Float64Array(a.x.length);
  eachElement(s, (i, c) => {
    y[i] = (a.x[i] - a.mean[c]) * a.invstd[c] * (a.weight ? a.weight[c] : 1) +
      (a.bias ? a.bias[c] : 0);
  });
  return y;
}
