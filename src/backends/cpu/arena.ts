/**
 * A call's float64 temporaries from one block reused call after call: a bump allocator whose
 * allocations all die when the next call starts ({@linkcode Float64Arena.reset}). A call's
 * temporaries then cost a fill of memory the last call warmed, where arrays of their own cost
 * an allocation each (a zeroed buffer, and external memory that prompts V8's collector):
 * a float32 groupNormBackward [8,64,32,32] on one thread took 5-7 us of its 200 in them
 * (bench/RESULTS.md, eleventh session).
 *
 * The contract its users keep: a temporary never outlives the call that took it (nothing
 * stores one, returns one to a caller or keeps one across an await), and calls never overlap
 * on one thread (the CPU backend's calls are synchronous).
 *
 * @module
 */

import { CACHE_LINE_BYTES } from "../../tensor/host_heap.ts";

/** Float64 entries each allocation is rounded up to (a cache line apart). */
const ALIGN = CACHE_LINE_BYTES / Float64Array.BYTES_PER_ELEMENT;

/** A block of float64 temporaries, taken from `source` at the first call that finds one. */
export class Float64Arena {
  readonly #source: () => Float64Array | undefined;
  #block: Float64Array | undefined;
  /** Entries of the block the current call has taken. */
  #used = 0;

  /** An arena whose block comes from `source` (undefined: none yet, ask at the next call). */
  constructor(source: () => Float64Array | undefined) {
    this.#source = source;
  }

  /** Starts a call: every earlier allocation is dead. */
  reset(): void {
    this.#used = 0;
    this.#block ??= this.#source();
  }

  /** `length` zeroed entries for the current call, or undefined when the block has no room. */
  take(length: number): Float64Array | undefined {
    const block = this.#block;
    const at = this.#used;
    if (!block || at + length > block.length) return undefined;
    this.#used = at + Math.ceil(length / ALIGN) * ALIGN;
    return block.subarray(at, at + length).fill(0);
  }
}
