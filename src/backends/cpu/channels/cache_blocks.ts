/**
 * Cache blocks for BatchNorm's calls that read their data twice (a reduction over every
 * element, then a write that reads the same elements again: batchNorm in training mode,
 * batchNormBackward's gradInput in training mode). When the data such a call reads is larger
 * than {@linkcode BLOCKED_FROM_BYTES}, it runs block by block of about {@linkcode BLOCK_BYTES}
 * of channels, each block's two passes back to back, so that the write pass finds in the cache
 * what the reduction just read instead of reading it from memory again (PyTorch's CPU kernels
 * run both passes channel by channel for the same reason). BatchNorm rows taken in memory order
 * (kernels/layout_types.ts rowsInMemoryOrder: runs of 64 elements or more) run whole: their
 * passes are linear sweeps, which a block of channels would cut into strided runs again
 * ([32,64,56,56] float32, 2 threads: batchNorm 2.16 ms blocked, 1.74 whole; batchNormBackward
 * 3.17, 2.79; one thread alike). Rows of fewer elements (channel order) run blocked: measured
 * on [128,64,28,28] float32 while its runs of 784 were taken channel by channel (before the
 * twentieth session), blocked / whole: batchNormBackward 4.46 / 5.06 ms on 2 threads, 7.76 /
 * 10.28 on one; batchNorm 2.89 / 2.71 and 4.67 / 5.52. That shape now runs in memory order,
 * whole: batchNorm 2.12 ms and batchNormBackward 2.87 on 2 threads.
 *
 * GroupNorm's calls run whole: blocks of samples gave no gain on one thread and lost on two
 * (contiguous [32,64,56,56] float32, blocked / whole, 2 threads: groupNorm 1.78 / 1.58 ms,
 * groupNormBackward 2.32 / 2.07, groupNormSwishGrad 7.44 / 7.36; tried on channels-last, which
 * ran whole already: 2.03 / 1.89 and 2.99 / 2.66; bench/RESULTS.md, seventh session): their
 * reduction is per (n, c) row, in the cache already, and a block per sample range only added
 * calls. Since the thirteenth session their work items are whole samples, each reduced and
 * written back to back (kernels/group_norm_samples.ts), which is what a block would give.
 *
 * A block is the same call on views of the tensors. For a `rows` layout (each (n, c) one
 * contiguous run) a BatchNorm channel's items, partials and merge depend only on N and the
 * inner size (kernels/layout_types.ts rowsPerItem, channels/merge.ts): the blocks give the bits
 * of one call. Other layouts run whole: a channel view of a channels-last tensor is no longer
 * dense and would be staged. The policy's `cacheBlocks` (../policy.ts) turns blocks off, for
 * tests that compare the bits.
 *
 * @module
 */

import type { ChannelGeometry } from "../../types.ts";
import type { Tensor } from "../../../tensor/tensor.ts";
import { dtypeByteSize } from "../../../tensor/dtype.ts";
import { cpuPolicy } from "../pool/pool.ts";

/** Bytes of data (every tensor the passes read) from which a call runs in channel blocks. */
export const BLOCKED_FROM_BYTES = 16 << 20;

/** Bytes of data a block aims for: within the last-level cache of common machines. */
export const BLOCK_BYTES = 4 << 20;

/**
 * The channel ranges [c0, c1) to run `g`'s call in, or undefined to run it whole: `reads` are
 * the data tensors both passes read, `perChannel` the per-channel tensors (all must be rank 1
 * of C elements for their views to be the block's).
 */
export function channelBlocks(
  g: ChannelGeometry,
  reads: readonly Tensor[],
  perChannel: readonly (Tensor | undefined)[],
): [number, number][] | undefined {
  const bytes = reads.reduce((sum, t) => sum + t.numel * dtypeByteSize(t.dtype), 0);
  if (!cpuPolicy().cacheBlocks || bytes < BLOCKED_FROM_BYTES || g.channels < 2) return undefined;
  if (!perChannel.every((t) => t === undefined || (t.rank === 1 && t.shape[0] === g.channels))) {
    return undefined;
  }
  const perBlock = Math.max(1, Math.floor(BLOCK_BYTES / (bytes / g.channels)));
  const blocks: [number, number][] = [];
  for (let c0 = 0; c0 < g.channels; c0 += perBlock) {
    blocks.push([c0, Math.min(g.channels, c0 + perBlock)]);
  }
  // One block would be the call itself (its views would block it again).
  return blocks.length > 1 ? blocks : undefined;
}

/** `g` restricted to `channels` channels. */
export function blockGeometry(g: ChannelGeometry, channels: number): ChannelGeometry {
  return { ...g, channels };
}

/**
 * `t` with each tensor named in `data` viewed at channels [c0, c1) along dim 1 and each named
 * in `perChannel` along dim 0; other fields as they are.
 */
export function channelViews<T extends object>(
  t: T,
  data: readonly (keyof T)[],
  perChannel: readonly (keyof T)[],
  c0: number,
  c1: number,
): T {
  const views = { ...t } as Record<keyof T, unknown>;
  for (const key of data) {
    const v = t[key] as Tensor | undefined;
    if (v) views[key] = v.slice(1, c0, c1);
  }
  for (const key of perChannel) {
    const v = t[key] as Tensor | undefined;
    if (v) views[key] = v.slice(0, c0, c1);
  }
  return views as T;
}
