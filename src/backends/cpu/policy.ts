/**
 * The CPU backend's policy: which kernels its threads may choose and whether a call that
 * may run on the worker pool must. Every choice gives the same bits (the kernels agree bit
 * for bit, and a call's split into items is its shape's), so a policy changes speed only.
 * Calls run under {@linkcode DEFAULT_CPU_POLICY}; tests and benchmarks that compare the
 * kernels, or check the pooled runs themselves, pass another one to `withCpuPolicy`
 * (pool/pool.ts) for the calls they make.
 *
 * @module
 */

/**
 * Whether a call that may run on the pool does: when the pool's governor measured it faster
 * (pool/governor.ts), or always.
 */
export type PoolPolicy = "measured" | "always";

/** Which kernels a thread may choose (see kernels/stages.ts). */
export interface KernelPolicy {
  /**
   * Whether GroupNorm's stages may run their WebAssembly kernels rather than their TypeScript
   * twins (the row norms and the BatchNorm family have only WebAssembly kernels).
   */
  readonly wasm: boolean;
  /**
   * Run the staged WebAssembly kernels for every dtype, not only where they were measured
   * faster (stages.ts's `wasmWins`), so that each can be compared with its twin.
   */
  readonly wasmEverywhere: boolean;
  /** Run stages whose tensors are all in the host heap in place (wasm_kernels.ts). */
  readonly inPlace: boolean;
}

/** The CPU backend's policy (module doc). */
export interface CpuPolicy extends KernelPolicy {
  /** Whether a call that may run on the pool does (see {@linkcode PoolPolicy}). */
  readonly pool: PoolPolicy;
  /**
   * Whether a large call that reads its data twice runs in cache blocks (fast/cache_blocks.ts),
   * or whole: the same bits either way.
   */
  readonly cacheBlocks: boolean;
}

/** The policy of every call outside `withCpuPolicy`: the fastest kernels, measured pooling. */
export const DEFAULT_CPU_POLICY: CpuPolicy = Object.freeze({
  wasm: true,
  wasmEverywhere: false,
  inPlace: true,
  pool: "measured",
  cacheBlocks: true,
});
