/**
 * Cache blocks for the calls that read their data twice (a reduction over every element,
 * then a write that reads the same elements again: batchNorm in training mode,
 * batchNormBackward's gradInput in training mode, groupNorm, groupNormBackward's gradInput).
 * When the data such a call reads is larger than {@linkcode BLOCKED_FROM_BYTES}, it runs
 * block by block of about {@linkcode BLOCK_BYTES}, each block's two passes back to back, so
 * that the write pass finds in the cache what the reduction just read instead of reading it
 * from memory again (PyTorch's CPU kernels run both passes channel by channel, or group by
 * group, for the same reason). BatchNorm blocks are channels, GroupNorm blocks samples.
 * BatchNorm rows taken in memory order (kernels/layout_types.ts rowsInMemoryOrder: runs of
 * 1024 elements or more) run whole: their passes are linear sweeps, which a block of channels
 * would cut into strided runs again ([32,64,56,56] float32, 2 threads: batchNorm 2.16 ms
 * blocked, 1.74 whole; batchNormBackward 3.17, 2.79; one thread alike).
 *
 * A block is the same call on views of the tensors. For a `rows` layout (each (n, c) one
 * contiguous run) a BatchNorm channel's items, partials and merge depend only on N and the
 * inner size (kernels/layout_types.ts rowsPerItem, channels/merge.ts), and GroupNorm's partials
 * are per (n, c) row, merged per (n, g): the blocks give the bits of one call (GroupNorm's
 * gradGamma and gradBeta sums continue from block to block in the same order). Other layouts
 * run whole: a channel view of a channels-last tensor is no longer dense and would be staged.
 * The policy's `cacheBlocks` (../policy.ts) turns blocks off, for tests that compare the bits.
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

/**
 * The sample ranges [n0, n1) to run a GroupNorm call of `N` samples in, or undefined to run
 * it whole: `reads` the data tensors both passes read, `data` every data tensor and
 * `perSample` the per-(n, g) tensors (every one must have N along dim 0, or be flat with a
 * multiple of N elements, for its views to be the block's).
 */
export function sampleBlocks(
  N: number,
  reads: readonly Tensor[],
  data: readonly (Tensor | undefined)[],
  perSample: readonly (Tensor | undefined)[],
): [number, number][] | undefined {
  const bytes = reads.reduce((sum, t) => sum + t.numel * dtypeByteSize(t.dtype), 0);
  if (!cpuPolicy().cacheBlocks || bytes < BLOCKED_FROM_BYTES || N < 2) return undefined;
  if (!data.every((t) => t === undefined || t.shape[0] === N)) return undefined;
  if (!perSample.every((t) => t === undefined || sampleView(t, N, 0, 1) !== undefined)) {
    return undefined;
  }
  const perBlock = Math.max(1, Math.floor(BLOCK_BYTES / (bytes / N)));
  const blocks: [number, number][] = [];
  for (let n0 = 0; n0 < N; n0 += perBlock) blocks.push([n0, Math.min(N, n0 + perBlock)]);
  return blocks.length > 1 ? blocks : undefined;
}

/**
 * Samples [n0, n1) of a tensor of `N` samples: along dim 0 when it has N there, else (rank 1,
 * a multiple of N elements) its n0 * k .. n1 * k elements; undefined otherwise.
 */
export function sampleView(t: Tensor, N: number, n0: number, n1: number): Tensor | undefined {
  if (t.rank >= 1 && t.shape[0] === N) return t.slice(0, n0, n1);
  if (t.rank === 1 && t.numel % N === 0) {
    const k = t.numel / N;
    return t.slice(0, n0 * k, n1 * k);
  }
  return undefined;
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
