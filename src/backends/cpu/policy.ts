/**
 * The CPU backend's policy: whether a call that may run on the worker pool must, whether a
 * large call runs in cache blocks, and whether groupNormSwishGrad keeps its dYNew between its
 * stages. Every choice gives the same bits (a call's split into items is its shape's, a block's
 * items are the whole call's, and the kept dYNew is the float32 value computed again), so a
 * policy changes speed only. Calls run under {@linkcode DEFAULT_CPU_POLICY}; tests and
 * benchmarks that check the pooled runs, the blocks or the kept dYNew themselves pass another
 * one to `withCpuPolicy` (pool/pool.ts) for the calls they make.
 *
 * @module
 */

/**
 * Whether a call that may run on the pool does: when the pool's governor measured it faster
 * (pool/governor.ts), or always.
 */
export type PoolPolicy = "measured" | "always";

/** The CPU backend's policy (module doc). */
export interface CpuPolicy {
  /** Whether a call that may run on the pool does (see {@linkcode PoolPolicy}). */
  readonly pool: PoolPolicy;
  /**
   * Whether a large call that reads its data twice runs in cache blocks (channels/cache_blocks.ts),
   * or whole: the same bits either way.
   */
  readonly cacheBlocks: boolean;
  /**
   * Whether groupNormSwishGrad's sums stage keeps each element's dYNew in a heap scratch that
   * its write stage reads (channels/group_norm_swish_grad.ts), or the write computes it again: the
   * same bits either way (the tests compare the two).
   */
  readonly swishGradCache: boolean;
}

/**
 * The policy of every call outside `withCpuPolicy`: measured pooling, cache blocks, the kept
 * dYNew.
 */
export const DEFAULT_CPU_POLICY: CpuPolicy = Object.freeze({
  pool: "measured",
  cacheBlocks: true,
  swishGradCache: true,
});
