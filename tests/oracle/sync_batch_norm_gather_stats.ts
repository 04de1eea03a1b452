/**
 * aclnnSyncBatchNormGatherStats (src/ops/sync_batch_norm_gather_stats.ts) in float64: per channel,
 * with n = Σ sampleCount (each count truncated to an integer) and m = momentum,
 * batchMean = Σ totalSum / n, batchVar = Σ totalSquareSum / n - batchMean²,
 * batchInvstd = 1 / sqrt(batchVar + eps), mean' = mean·(1 - m) + batchMean·m,
 * variance' = variance·(1 - m) + batchVar·n/(n - 1)·m.
 *
 * @module
 */

/** Inputs of {@linkcode syncBatchNormGatherStats64} (logical row-major values). */
export interface SyncGatherStatsArgs {
  /** `[devices, C]`. */
  totalSum: ArrayLike<number>;
  /** `[devices, C]`. */
  totalSquareSum: ArrayLike<number>;
  /** `[devices]`. */
  sampleCount: ArrayLike<number>;
  /** Running mean `[C]`. */
  mean: ArrayLike<number>;
  /** Running variance `[C]`. */
  variance: ArrayLike<number>;
  /** C. */
  channels: number;
  /** Weight of the batch statistics. */
  momentum: number;
  /** Added to the batch variance. */
  eps: number;
}

/** What syncBatchNormGatherStats computes: its outputs and the updated running statistics. */
export interface SyncGatherStats64 {
  batchMean: Float64Array;
  batchInvstd: Float64Array;
  mean: Float64Array;
  variance: Float64Array;
}

/** syncBatchNormGatherStats in float64. */
export function syncBatchNormGatherStats64(a: SyncGatherStatsArgs): SyncGatherStats64 {
  const C = a.channels;
  const D = a.sampleCount.length;
  let n = 0;
  for (let d = 0; d < D; d++) n += Math.trunc(a.sampleCount[d]);
  const out: SyncGatherStats64 = {
    batchMean: new Float64Array(C),
    batchInvstd: new Float64Array(C),
    mean: new Float64Array(C),
    variance: new Float64Array(C),
  };
  const m = a.momentum;
  for (let c = 0; c < C; c++) {
    let s = 0;
    let q = 0;
    for (let d = 0; d < D; d++) {
      s += a.totalSum[d * C + c];
      q += a.totalSquareSum[d * C + c];
    }
    const bm = s / n;
    const v = q / n - bm * bm;
    out.batchMean[c] = bm;
    out.batchInvstd[c] = 1 / Math.sqrt(v + a.eps);
    out.mean[c] = a.mean[c] * (1 - m) + bm * m;
    out.variance[c] = a.variance[c] * (1 - m) + v * n / (n - 1) * m;
  }
  return out;
}
