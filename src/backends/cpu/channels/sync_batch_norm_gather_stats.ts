/**
 * aclnnSyncBatchNormGatherStats on the CPU: O(devices · C) work, one plain loop per channel in
 * float32 arithmetic, step for step as the kernel of hicann/ops-nn e5c3fa9
 * `norm/sync_batch_norm_gather_stats/op_kernel/arch35/sync_batch_norm_gather_stats_n_full_load.h`
 * computes (NFullLoadBatchNormVF, :200-238; the operator's main definition registers this
 * kernel, `op_host/sync_batch_norm_gather_stats_def.cpp:78`):
 *
 * - n = Σ sampleCount in int64 (each count cast to int32 by the op_api: truncated here; the
 *   rounding mode of l0op::Cast to INT32 is not in these sources), nf = float(n);
 * - r = 1/nf, k = nf / (nf - 1) · momentum, om = 1 - momentum, each a float32 scalar;
 * - S, Q = the float32 sums over the devices of totalSum and totalSquareSum (16-bit widened);
 * - batchMean = S·r; v = Q·r - batchMean²; batchInvstd = 1/sqrt(v + eps);
 * - mean ← mean·om + batchMean·momentum; variance ← v·k + variance·om.
 *
 * No guard for n ≤ 1 (n = 1 makes k infinite, as on the chip). The outputs are stored in
 * totalSum's dtype, then cast to batchMean's / batchInvstd's (aclnn_sync_batch_norm_gather_stats.cpp
 * :230-249): two roundings where those differ. The Atlas A2 kernel of experimental/ (with a guard
 * for n ≤ 1) is the simulator's concern (tests/sim/sim_ops_sync_batch_norm_gather_stats.c).
 *
 * @module
 */

import type { SyncBatchNormGatherStatsPlan, SyncBatchNormGatherStatsTensors } from "../../types.ts";
import { roundToDType } from "../../../tensor/dtype.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";
import { channelValues, writeChannelValues } from "../tensors/channel_values.ts";

const f = Math.fround;

/** aclnnSyncBatchNormGatherStats (module doc); C = 0 writes nothing. */
export function syncBatchNormGatherStats(
  plan: SyncBatchNormGatherStatsPlan,
  t: SyncBatchNormGatherStatsTensors,
): void {
  const { channels: C, devices: D } = plan;
  if (C === 0) return;
  const counts = channelValues(t.sampleCount);
  let n = 0;
  for (let d = 0; d < D; d++) n += Math.trunc(counts[d]);
  const momentum = f(plan.momentum);
  const eps = f(plan.eps);
  const nf = f(n);
  const r = f(1 / nf);
  const k = f(f(nf / f(nf - 1)) * momentum);
  const om = f(1 - momentum);
  const sum = channelValues(t.totalSum);
  const square = channelValues(t.totalSquareSum);
  const mean = channelValues(t.mean);
  const variance = channelValues(t.variance);
  const T = t.totalSum.dtype;
  const batchMean = temporaryFloat64(C);
  const batchInvstd = temporaryFloat64(C);
  for (let c = 0; c < C; c++) {
    let s = 0;
    let q = 0;
    for (let d = 0; d < D; d++) {
      s = f(s + sum[d * C + c]);
      q = f(q + square[d * C + c]);
    }
    const bm = f(s * r);
    const v = f(f(q * r) - f(bm * bm));
    batchMean[c] = roundToDType(bm, T);
    batchInvstd[c] = roundToDType(f(1 / f(Math.sqrt(f(v + eps)))), T);
    mean[c] = f(f(mean[c] * om) + f(bm * momentum));
    variance[c] = f(f(v * k) + f(variance[c] * om));
  }
  writeChannelValues(t.batchMean, batchMean);
  writeChannelValues(t.batchInvstd, batchInvstd);
  writeChannelValues(t.mean, mean);
  writeChannelValues(t.variance, variance);
}
