/**
 * aclnnBatchNormElemtBackward (src/ops/batch_norm_elemt_backward.ts), the element-wise half of
 * SyncBatchNorm backward, with M = sum(counter) the global element count per channel:
 *
 * ```
 * gradInput = weight * invstd * (dy - sumDy / M - (x - mean) * invstd^2 * sumDyXmu / M)
 * ```
 *
 * @module
 */

import { channelSplit, eachElement } from "./geometry.ts";

/** Arguments, in logical row-major order. */
export interface ElemtBackwardArgs {
  dy: ArrayLike<number>;
  x: ArrayLike<number>;
  shape: readonly number[];
  mean: ArrayLike<number>;
  invstd: ArrayLike<number>;
  weight?: ArrayLike<number>;
  sumDy: ArrayLike<number>;
  sumDyXmu: ArrayLike<number>;
  /** Element counts (e.g. one per rank), summed to M. */
  counter: ArrayLike<number>;
}

/** batchNormElemtBackward's gradInput. */
export function batchNormElemtBackward64(a: ElemtBackwardArgs): Float64Array {
  const s = channelSplit(a.shape);
  let M = 0;
  for (let i = 0; i < a.counter.length; i++) M += a.counter[i];
  const gradInput = new Float64Array(a.dy.length);
  eachElement(s, (i, c) => {
    const is = a.invstd[c];
    const w = a.weight ? a.weight[c] : 1;
    gradInput[i] = w * is *
      (a.dy[i] - a.sumDy[c] / M - (a.x[i] - a.mean[c]) * is * is * a.sumDyXmu[c] / M);
  });
  return gradInput;
}
