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
  /**
   * CANN's roundings when its promoted type is float16 (every input float16, weight given;
   * ops-nn aclnn_batch_norm_elemt_backward.cpp GetPromoteType, MeanByCounter,
   * RunElemtBackwardCore): sumDy / M and sumDyXmu / M are float32 quotients cast to float16,
   * and gradInput is float16 before any cast to its dtype. Default false: float64 throughout.
   */
  promotedFloat16?: boolean;
}

/** batchNormElemtBackward's gradInput. */
export function batchNormElemtBackward64(a: ElemtBackwardArgs): Float64Array {
  const s = channelSplit(a.shape);
  let M = 0;
  for (let i = 0; i < a.counter.length; i++) M += a.counter[i];
  const gradInput = new Float64Array(a.dy.length);
  const half = a.promotedFloat16 === true;
  const meanOf = (sum: number) => half ? Math.f16round(Math.fround(sum / M)) : sum / M;
  eachElement(s, (i, c) => {
    const is = a.invstd[c];
    const w = a.weight ? a.weight[c] : 1;
    const g = w * is *
      (a.dy[i] - meanOf(a.sumDy[c]) - (a.x[i] - a.mean[c]) * is * is * meanOf(a.sumDyXmu[c]));
    gradInput[i] = half ? Math.f16round(g) : g;
  });
  return gradInput;
}
