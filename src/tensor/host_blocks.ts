/**
 * The block bookkeeping of the host heap's caching allocator, as address arithmetic only (the
 * memory itself is host_heap.ts'). In the spirit of PyTorch's caching allocators:
 *
 * - a request is rounded up to a size class ({@linkcode sizeClass}: 4 KiB steps up to 64 KiB,
 *   then four classes per power of two), so that a training loop's tensors of one shape reuse
 *   each other's blocks;
 * - a freed block goes to its class's free list at once (a "cached" block), and the next
 *   request of that class takes it back without searching (a "hit");
 * - a miss takes the smallest large-enough free range (ranges are kept sorted and coalesced); when
 *   none is, every cached block is flushed into the ranges (coalescing neighbours, lowering the
 *   top) and the ranges are tried again; only then is the top of the heap bumped (growing the
 *   memory up to the cap).
 *
 * Misses reuse freed memory before the top because memory never touched costs page faults on
 * first use (about 0.4 ms per MiB on the development VM, 25 times a rewrite of touched memory):
 * the first call of a new shape (an epoch's smaller last batch, a new sequence length) would
 * otherwise pay them for each output while the previous shape's blocks sit cached, and so would
 * the previous shape coming back. Coalescing is what lets it come back: its block is the new
 * shape's freed block and the rest of the range it was cut from (glibc's malloc, which PyTorch's
 * CPU tensors use, merges free neighbours the same way). A loop of fixed shapes misses only in
 * its first iteration, and then nothing is cached yet.
 *
 * Memory at and above `clean` was never handed out, so it is still zero: a block taken from
 * there needs no zero-filling.
 *
 * @module
 */

/** A free range [at, at + bytes). */
interface FreeRange {
  at: number;
  bytes: number;
}

/** Counters of a {@linkcode BlockPool} (see hostHeapUsage). */
export interface BlockCounters {
  /** Bytes in live blocks. */
  bytesInUse: number;
  /** Bytes in cached blocks and free ranges below the top. */
  bytesCached: number;
  /** Highest bytesInUse so far. */
  peakBytesInUse: number;
  /** Live blocks. */
  blocks: number;
  /** Blocks handed out. */
  allocations: number;
  /** Blocks handed out from a class's free list. */
  cacheHits: number;
  /** Times every cached block was flushed to make room. */
  flushes: number;
}

/** Counters of a pool that has handed out nothing. */
export function zeroCounters(): BlockCounters {
  return {
    bytesInUse: 0,
    bytesCached: 0,
    peakBytesInUse: 0,
    blocks: 0,
    allocations: 0,
    cacheHits: 0,
    flushes: 0,
  };
}

const KIB = 1024;

/**
 * The size class of a block of `bytes`: a multiple of 4 KiB up to 64 KiB, above that one of
 * four steps per power of two (so at most a quarter of a block is rounding).
 */
export function sizeClass(bytes: number): number {
  if (bytes <= 64 * KIB) return Math.max(4 * KIB, Math.ceil(bytes / (4 * KIB)) * 4 * KIB);
  const step = 2 ** Math.floor(Math.log2(bytes - 1)) / 4;
  return Math.ceil(bytes / step) * step;
}

/** Where a taken block is, and whether its bytes may hold old data. */
export interface TakenBlock {
  /** Byte address. */
  readonly at: number;
  /** Whether the block lies (partly) below `clean`: it may hold a freed block's bytes. */
  readonly dirty: boolean;
}

/** Blocks of one address space: [base, cap), grown by `grow(end)` (false when it cannot). */
export class BlockPool {
  /** End of the highest block handed out or cached. */
  top: number;
  /** Memory at and above this address has never been handed out (still zero). */
  clean: number;
  readonly #cached = new Map<number, number[]>();
  readonly #ranges: FreeRange[] = [];
  readonly #grow: (end: number) => boolean;
  /** The counters, updated in place. */
  readonly counters: BlockCounters = zeroCounters();

  constructor(base: number, grow: (end: number) => boolean) {
    this.top = base;
    this.clean = base;
    this.#grow = grow;
  }

  /**
   * A block of exactly `size` bytes (a {@linkcode sizeClass}), or undefined when full; `grow`
   * replaces the pool's own growth rule for this request (a larger limit).
   */
  take(size: number, grow: (end: number) => boolean = this.#grow): TakenBlock | undefined {
    const at = this.#takeCached(size) ?? this.#takeRange(size) ??
      (this.flush() ? this.#takeRange(size) : undefined) ?? this.#takeTop(size, grow);
    if (at === undefined) return undefined;
    const c = this.counters;
    c.bytesInUse += size;
    c.peakBytesInUse = Math.max(c.peakBytesInUse, c.bytesInUse);
    c.blocks++;
    c.allocations++;
    const dirty = at < this.clean;
    this.clean = Math.max(this.clean, at + size);
    return { at, dirty };
  }

  /** Caches the block [at, at + size) for the next request of its class. */
  give(at: number, size: number): void {
    let list = this.#cached.get(size);
    if (!list) this.#cached.set(size, list = []);
    list.push(at);
    const c = this.counters;
    c.bytesInUse -= size;
    c.bytesCached += size;
    c.blocks--;
  }

  /** Moves every cached block into the free ranges (coalesced); false when none was cached. */
  flush(): boolean {
    if (this.#cached.size === 0) return false;
    for (const [size, list] of this.#cached) for (const at of list) this.#insertRange(at, size);
    this.#cached.clear();
    this.counters.flushes++;
    // Free space at the top is given back to the bump pointer.
    const last = this.#ranges.at(-1);
    if (last && last.at + last.bytes === this.top) {
      this.top = last.at;
      this.counters.bytesCached -= last.bytes;
      this.#ranges.pop();
    }
    return true;
  }

  #takeCached(size: number): number | undefined {
    const at = this.#cached.get(size)?.pop();
    if (at === undefined) return undefined;
    this.counters.bytesCached -= size;
    this.counters.cacheHits++;
    return at;
  }

  /**
   * The front of the smallest free range that holds `size` (best fit: a first fit cut the low
   * ranges for every small request, and a step's blocks ended up scattered over the heap;
   * bench:step's bfloat16 disposed step after a dropped float32 loop ran 9.5-11.3 ms against
   * 7.0-8.6 ms, and 7.7-8.0 ms with best fit).
   */
  #takeRange(size: number): number | undefined {
    const ranges = this.#ranges;
    let best = -1;
    for (let i = 0; i < ranges.length; i++) {
      const bytes = ranges[i].bytes;
      if (bytes >= size && (best < 0 || bytes < ranges[best].bytes)) best = i;
    }
    if (best < 0) return undefined;
    const range = ranges[best];
    const at = range.at;
    if (range.bytes === size) ranges.splice(best, 1);
    else {
      range.at += size;
      range.bytes -= size;
    }
    this.counters.bytesCached -= size;
    return at;
  }

  #takeTop(size: number, grow: (end: number) => boolean): number | undefined {
    const end = this.top + size;
    if (!grow(end)) return undefined;
    const at = this.top;
    this.top = end;
    return at;
  }

  /** Adds [at, at + bytes) to the sorted ranges, merging with adjacent ones. */
  #insertRange(at: number, bytes: number): void {
    const ranges = this.#ranges;
    let lo = 0;
    let hi = ranges.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ranges[mid].at < at) lo = mid + 1;
      else hi = mid;
    }
    let range: FreeRange = { at, bytes };
    const before = ranges[lo - 1];
    if (before && before.at + before.bytes === at) {
      before.bytes += bytes;
      range = before;
      lo--;
    } else ranges.splice(lo, 0, range);
    const after = ranges[lo + 1];
    if (after && range.at + range.bytes === after.at) {
      range.bytes += after.bytes;
      ranges.splice(lo + 1, 1);
    }
  }
}
