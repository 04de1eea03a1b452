/**
 * A caching device-memory allocator, as PyTorch's CUDA caching allocator does it: freed blocks
 * are kept per size class and handed out again, so a loop that allocates its results and frees
 * them costs no aclrtMalloc/aclrtFree per call and holds flat device memory.
 *
 * - Size classes: requests up to 1 MiB are rounded up to a multiple of 512 bytes, larger ones to
 *   a multiple of 2 MiB (PyTorch's kMinBlockSize / kRoundLarge). A block is reused only for its
 *   own class.
 * - The cache is capped (`maxCachedBytes`): a block released into a full cache is freed.
 * - Out of memory: when aclrtMalloc fails, or the request would pass `memoryLimit`, the cache is
 *   emptied and the allocation tried once more; after that the error names the request and the
 *   allocator's figures, instead of a bare 207001.
 *
 * Blocks in use by queued work are not this module's concern: the device defers their release
 * until the stream has been synchronised.
 *
 * @module
 */

import { AclError } from "../errors.ts";

/** One block of device memory. */
export interface Block {
  /** Unique per allocator (never reused). */
  readonly id: number;
  /** Device address (never NULL: 0-byte requests get no block). */
  readonly pointer: Deno.PointerObject;
  /** The block's size class in bytes (what aclrtMalloc was given). */
  readonly size: number;
}

/** What the allocator needs from the runtime. */
export interface NativeMemory {
  /** aclrtMalloc: the address, or a thrown AclError (its code tells out-of-memory). */
  malloc(bytes: number): Deno.PointerObject;
  /** aclrtFree. */
  free(pointer: Deno.PointerObject, bytes: number): void;
  /**
   * Called before giving up on an allocation: give back what can be given back now (memory
   * of dead buffers, releases waiting for the stream), so that emptying the cache helps.
   */
  reclaim?(): void;
}

/** Figures of {@linkcode CachingAllocator.stats}, in bytes and block counts. */
export interface AllocatorStats {
  /** Blocks handed out and not yet released. */
  readonly blocksInUse: number;
  /** Bytes of those blocks (size classes). */
  readonly bytesInUse: number;
  /** Blocks kept for reuse. */
  readonly blocksCached: number;
  /** Bytes kept for reuse. */
  readonly bytesCached: number;
  /** The largest `bytesInUse` since the device opened (or since the peak was reset). */
  readonly peakBytesInUse: number;
  /** Native allocations alive: in use plus cached. */
  readonly nativeAllocations: number;
  /** aclrtMalloc calls made so far (a flat number in a loop means the cache works). */
  readonly nativeMallocCalls: number;
  /** The limit the allocator enforces (Infinity: none). */
  readonly memoryLimit: number;
}

/** Options of a {@linkcode CachingAllocator}. */
export interface AllocatorOptions {
  /** Bytes the device may hold in use plus cached; beyond it allocation fails. Default none. */
  memoryLimit?: number;
  /** Bytes kept in the cache at most. Default 1 GiB. */
  maxCachedBytes?: number;
}

const SMALL_LIMIT = 1 << 20;
const SMALL_ROUND = 512;
const LARGE_ROUND = 2 << 20;

/** The size class of a request (> 0). */
export function sizeClass(bytes: number): number {
  const round = bytes <= SMALL_LIMIT ? SMALL_ROUND : LARGE_ROUND;
  return Math.ceil(bytes / round) * round;
}

/** ACL runtime codes that mean "the device is out of memory". */
const OUT_OF_MEMORY_CODES = new Set([207001, 200000, 207018]);

function formatBytes(n: number): string {
  if (!Number.isFinite(n)) return "none";
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1 << 30) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  return `${(n / (1 << 30)).toFixed(2)} GiB`;
}

/** The caching allocator of one device. */
export class CachingAllocator {
  readonly #native: NativeMemory;
  readonly #name: string;
  readonly #free = new Map<number, Block[]>();
  readonly #maxCached: number;
  #limit: number;
  #nextId = 1;
  #blocksInUse = 0;
  #bytesInUse = 0;
  #blocksCached = 0;
  #bytesCached = 0;
  #peak = 0;
  #mallocCalls = 0;

  /** An allocator for the device called `name` (for messages). */
  constructor(native: NativeMemory, name: string, options: AllocatorOptions = {}) {
    this.#native = native;
    this.#name = name;
    this.#limit = options.memoryLimit ?? Infinity;
    this.#maxCached = options.maxCachedBytes ?? 1 << 30;
  }

  /** A block of at least `bytes` (> 0) bytes. */
  allocate(bytes: number): Block {
    const size = sizeClass(bytes);
    const cached = this.#free.get(size)?.pop();
    if (cached !== undefined) {
      this.#blocksCached--;
      this.#bytesCached -= size;
      return this.#use(cached);
    }
    if (this.#bytesInUse + this.#bytesCached + size > this.#limit) {
      this.#native.reclaim?.();
      this.emptyCache();
    }
    if (this.#bytesInUse + size > this.#limit) {
      throw this.#outOfMemory(bytes, size, `it would pass the memory limit`);
    }
    let pointer: Deno.PointerObject;
    try {
      pointer = this.#malloc(size);
    } catch (e) {
      if (!(e instanceof AclError) || !OUT_OF_MEMORY_CODES.has(e.code)) throw e;
      // Reclaim what is dead or waiting, give the cache back to the device, try once more.
      this.#native.reclaim?.();
      this.emptyCache();
      try {
        pointer = this.#malloc(size);
      } catch (again) {
        if (again instanceof AclError && OUT_OF_MEMORY_CODES.has(again.code)) {
          throw this.#outOfMemory(bytes, size, `aclrtMalloc failed: ${again.message}`, again);
        }
        throw again;
      }
    }
    return this.#use({ id: this.#nextId++, pointer, size });
  }

  /** Returns a block: kept for reuse, or freed when the cache is full. */
  release(block: Block): void {
    this.#blocksInUse--;
    this.#bytesInUse -= block.size;
    if (this.#bytesCached + block.size > this.#maxCached) {
      this.#native.free(block.pointer, block.size);
      return;
    }
    let list = this.#free.get(block.size);
    if (list === undefined) this.#free.set(block.size, list = []);
    list.push(block);
    this.#blocksCached++;
    this.#bytesCached += block.size;
  }

  /** Frees every cached block (call only when no queued work can use them: they are free). */
  emptyCache(): void {
    for (const list of this.#free.values()) {
      for (const block of list.splice(0)) this.#native.free(block.pointer, block.size);
    }
    this.#free.clear();
    this.#blocksCached = 0;
    this.#bytesCached = 0;
  }

  /** The limit (bytes; Infinity for none). */
  get memoryLimit(): number {
    return this.#limit;
  }

  /** Sets the limit (bytes; Infinity for none). */
  setMemoryLimit(bytes: number): void {
    this.#limit = bytes;
  }

  /** Makes the peak the current in-use figure. */
  resetPeak(): void {
    this.#peak = this.#bytesInUse;
  }

  /** The allocator's figures. */
  stats(): AllocatorStats {
    return {
      blocksInUse: this.#blocksInUse,
      bytesInUse: this.#bytesInUse,
      blocksCached: this.#blocksCached,
      bytesCached: this.#bytesCached,
      peakBytesInUse: this.#peak,
      nativeAllocations: this.#blocksInUse + this.#blocksCached,
      nativeMallocCalls: this.#mallocCalls,
      memoryLimit: this.#limit,
    };
  }

  #malloc(size: number): Deno.PointerObject {
    this.#mallocCalls++;
    return this.#native.malloc(size);
  }

  #use(block: Block): Block {
    this.#blocksInUse++;
    this.#bytesInUse += block.size;
    if (this.#bytesInUse > this.#peak) this.#peak = this.#bytesInUse;
    return block;
  }

  #outOfMemory(bytes: number, size: number, why: string, cause?: AclError): AclError {
    const s = this.stats();
    return new AclError(
      cause?.code ?? 207001,
      `out of device memory on ${this.#name}: cannot allocate ${formatBytes(bytes)} ` +
        `(block of ${formatBytes(size)}): ${why}. In use: ${formatBytes(s.bytesInUse)} in ` +
        `${s.blocksInUse} blocks; cached: ${formatBytes(s.bytesCached)} (emptied); peak: ` +
        `${formatBytes(s.peakBytesInUse)}; limit: ${formatBytes(s.memoryLimit)}. Dispose ` +
        "results you no longer need (dispose(), using, tidy()) or pass preallocated `out` tensors.",
      { cause, nativeMessage: cause?.nativeMessage },
    );
  }
}
