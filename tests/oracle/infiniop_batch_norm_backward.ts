/**
 * The InfiniOp descriptor's gradient (seed infiniop-BatchNormBackward.md, DESIGN.md): the
 * forward is y = (x - E[x]) / sqrt(Var[x]) * gamma + beta over (N, C, L) with E/Var over dims
 * 0 and 2 passed as running_mean/running_var, so the gradient is BatchNorm's training-mode
 * one at mean = runningMean, invstd = 1/sqrt(runningVar + eps) (eps defaults to 0). With
 * `training: false` (the descriptor option) it is the evaluation-mode gradient at the same
 * statistics.
 *
 * @module
 */

import { type BatchNormBackward64, batchNormBackwardAt64 } from "./batch_norm_backward.ts";
import { invstdOf } from "./statistics.ts";

/** Arguments, in logical row-major order. */
export interface InfiniopBackwardArgs {
  dy: ArrayLike<number>;
  x: ArrayLike<number>;
  /** (N, C, L). */
  shape: readonly number[];
  weight: ArrayLike<number>;
  runningMean: ArrayLike<number>;
  runningVar: ArrayLike<number>;
  eps?: number;
  training?: boolean;
}

/** What the descriptor's compute writes into gradInput, gradWeight and gradBias. */
export function infiniopBatchNormBackward64(a: InfiniopBackwardArgs): BatchNormBackward64 {
  const invstd = invstdOf(a.runningVar, a.eps ?? 0);
  return batchNormBackwardAt64(
    a.dy,
    a.x,
    a.shape,
    a.weight,
    a.runningMean,
    invstd,
    a.training ?? true,
  );
}
