/**
 * aclnnBatchNormGatherStatsWithCounts (src/ops/batch_norm_gather_stats_with_counts.ts, PyTorch
 * batch_norm_gather_stats_with_counts): per channel, with n_w = counts[w],
 * var_w = 1 / invstd_w^2 - eps and n = sum(n_w):
 *
 * ```
 * mean   = sum(n_w * mean_w) / n
 * var    = sum(n_w * (var_w + (mean_w - mean)^2)) / n
 * invstd = 1 / sqrt(var + eps)
 * runningMean <- (1 - momentum) * runningMean + momentum * mean
 * runningVar  <- (1 - momentum) * runningVar  + momentum * var * n / (n - 1)
 * ```
 *
 * With no rank at all (W = 0): mean 0, invstd NaN, running statistics untouched (README).
 *
 * @module
 */

/** Arguments: the per-rank statistics in logical row-major order. */
export interface GatherStatsArgs {
  /** Per-rank means, [W, C]. */
  mean: ArrayLike<number>;
  /** Per-rank invstd, [W, C]. */
  invstd: ArrayLike<number>;
  /** Elements per channel on each rank, [W]. */
  counts: ArrayLike<number>;
  /** Channels. */
  C: number;
  runningMean?: ArrayLike<number>;
  runningVar?: ArrayLike<number>;
  momentum: number;
  eps: number;
}

/** The global statistics and the updated running statistics (absent when not given). */
export interface GatherStats64 {
  mean: Float64Array;
  invstd: Float64Array;
  runningMean?: Float64Array;
  runningVar?: Float64Array;
}

/** batchNormGatherStatsWithCounts. */
export function batchNormGatherStatsWithCounts64(a: GatherStatsArgs): GatherStats64 {
  const W = a.counts.length;
  const { C, momentum, eps } = a;
  const runningMean = a.runningMean ? Float64Array.from(a.runningMean) : undefined;
  const runningVar = a.runningVar ? Float64Array.from(a.runningVar) : undefined;
  if (W === 0) {
    return {
      mean: new Float64Array(C),
      invstd: new Float64Array(C).fill(NaN),
      runningMean,
      runningVar,
    };
  }
  let n = 0;
  for (let w = 0; w < W; w++) n += a.counts[w];
  const mean = new Float64Array(C);
  const invstd = new Float64Array(C);
  for (let c = 0; c < C; c++) {
    let weighted = 0;
    for (let w = 0; w < W; w++) weighted += a.counts[w] * a.mean[w * C + c];
    const m = weighted / n;
    let spread = 0;
    for (let w = 0; w < W; w++) {
      const varW = 1 / a.invstd[w * C + c] ** 2 - eps;
      spread += a.counts[w] * (varW + (a.mean[w * C + c] - m) ** 2);
    }
    const variance = spread / n;
    mean[c] = m;
    invstd[c] = 1 / Math.sqrt(variance + eps);
    if (runningMean) runningMean[c] = (1 - momentum) * runningMean[c] + momentum * m;
    if (runningVar) {
      runningVar[c] = (1 - momentum) * runningVar[c] + momentum * variance * n / (n - 1);
    }
  }
  return { mean, invstd, runningMean, runningVar };
}
