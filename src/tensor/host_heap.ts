/**
 * The host heap: one shared `WebAssembly.Memory` that holds the storage of large host
 * tensors, so that the CPU backend's WebAssembly kernels read and write them in place
 * (every thread's kernel instance imports this memory) instead of copying each block in
 * and out of their own memory (bench/RESULTS.md, "Why the constants are what they are", has
 * the figures).
 *
 * The heap is a caching allocator (host_blocks.ts): blocks are rounded to size classes, and a
 * block given back by `Tensor.dispose()` (also through `using` and `tidy()`) or, between
 * tasks, by the garbage collector (a FinalizationRegistry) is cached for the next tensor of its
 * class. A synchronous loop that drops its results without disposing them gets their blocks
 * back too, once the collector has cleared them (liveness.ts, which prompts V8 to collect);
 * until then new tensors take memory never used, and once the heap is full, storage falls
 * back to a SharedArrayBuffer of its own (the kernels then stage it through the heap). Tensors
 * take up to {@linkcode hostHeapMaxBytes} of it (host_heap_size.ts; 0 keeps every tensor out
 * of the heap). Scratch blocks that a kernel needs for the
 * duration of one call ({@linkcode heapScratch}) may take the heap past that maximum, up to 4
 * GiB: with tensors held to 3 GiB, a call whose scratch fits the last GiB never fails for want
 * of room to stage its tensors.
 *
 * The memory is 4 GiB from the start and never grows, or where the system refuses that much
 * address space a growable one (host_heap_size.ts `heapMemory`); what the heap's blocks have
 * reached, `hostHeapUsage().bytesReserved`, is what it can have touched.
 *
 * @module
 */

import { BlockPool, sizeClass, type TakenBlock, zeroCounters } from "./host_blocks.ts";
import { DropWatch } from "./liveness.ts";
import { collectGarbage } from "./collect_garbage.ts";
import {
  heapMemory,
  HOST_HEAP_LIMIT_BYTES,
  hostHeapMaxBytes,
  PAGE_BYTES,
} from "./host_heap_size.ts";

/**
 * The first page holds no tensor: the kernels keep their vector constants there (their data
 * segment, written by every instantiation) and address 0 means "none".
 */
export const HOST_HEAP_RESERVED_BYTES = PAGE_BYTES;

/**
 * A cache line's bytes: what the heap's blocks, the row norms' arrays (rows/wasm_rows.ts) and
 * the calls' float64 temporaries (cpu/arena.ts) align to, so that no vector straddles two
 * lines and no two threads' writes share one.
 */
export const CACHE_LINE_BYTES = 64;

/** Blocks start on cache lines (vectors never straddle two blocks). */
const BLOCK_ALIGN = CACHE_LINE_BYTES;

/**
 * Bytes after each block that kernels may read (never write): a vector that starts in the
 * block's last element stays inside the block, so a read never leaves the memory.
 */
export const HOST_HEAP_SLACK_BYTES = 64;

/** {@linkcode HOST_HEAP_SLACK_BYTES} rounded up to whole {@linkcode BLOCK_ALIGN} units. */
const SLACK_BLOCK_BYTES = Math.ceil(HOST_HEAP_SLACK_BYTES / BLOCK_ALIGN) * BLOCK_ALIGN;

/** How a heap hands out blocks (fixed when it is created: {@linkcode startHostHeap}). */
export interface HostHeapPolicy {
  /**
   * Fill a reused block handed out without zero-filling with 0xff bytes (NaN in float32,
   * float16 and bfloat16) instead of leaving its old bytes, so that an output element a
   * kernel forgets to write shows up as NaN (tests). Default false.
   */
  readonly poisonReused: boolean;
  /**
   * Make the memory growable from 16 pages at once, as the heap does where a memory of
   * `HOST_HEAP_PAGES` (host_heap_size.ts) cannot be had (tests of that fallback). Default false.
   */
  readonly growable?: boolean;
}

/** The heap's state (one per process; workers only receive its memory). */
interface HostHeap {
  readonly policy: HostHeapPolicy;
  readonly memory: WebAssembly.Memory;
  /** Every buffer object the memory has handed out (one per size after each grow). */
  readonly buffers: WeakSet<SharedArrayBuffer>;
  /** The blocks: size classes, cached blocks, free ranges, the top. */
  readonly pool: BlockPool;
  readonly registry: FinalizationRegistry<Block>;
  /** Requests of heap size that got a buffer of their own (heap full or off). */
  fallbacks: number;
  /** Tensors' blocks, given back once a synchronous loop dropped them (liveness.ts). */
  readonly watch: DropWatch<Block>;
}

/**
 * A block [at, at + bytes), live until it is freed, once: by `dispose()`, its owner's
 * collection, or tests.
 */
interface Block {
  readonly at: number;
  readonly bytes: number;
  live: boolean;
}

let heap: HostHeap | null | undefined;

/** What {@linkcode states} holds for host storage outside the heap that `dispose()` released. */
const RELEASED: Block = { at: -1, bytes: 0, live: false };

/**
 * Each host storage's state, one map for both kinds (one lookup a call, not one per kind): a
 * heap block's owner (the typed array made over it) maps to its block, live until freed; other
 * host storage maps to {@linkcode RELEASED} once `dispose()` released it, and is absent before.
 */
const states = new WeakMap<object, Block>();

/**
 * A block handed out ({@linkcode heapAllocate}, {@linkcode heapScratch}): its memory, and
 * `adopt`, which ties its life to an owner's.
 */
export class HeapGrant {
  /** The heap's buffer when the block was taken. */
  readonly buffer: SharedArrayBuffer;
  /** The block's byte offset in the heap. */
  readonly at: number;
  /** The block (for {@linkcode releaseForTests}). */
  readonly block: Block;
  /** Whether the block holds a tensor (watched for drops: liveness.ts), not scratch. */
  readonly watched: boolean;

  constructor(buffer: SharedArrayBuffer, block: Block, watched: boolean) {
    this.buffer = buffer;
    this.at = block.at;
    this.block = block;
    this.watched = watched;
  }

  /** Frees the block once `owner` is collected, or by {@linkcode heapFree} of `owner`. */
  adopt(owner: object): void {
    states.set(owner, this.block);
    heap?.registry.register(owner, this.block, this.block);
    if (this.watched) heap?.watch.watch(owner, this.block);
  }
}

/**
 * Lets the heap's blocks reach `end` bytes within `limit` (the memory has them all already,
 * unless it is the growable fallback, which grows to them); false past `limit`, or when the
 * fallback cannot grow.
 */
function reach(memory: WebAssembly.Memory, end: number, limit = hostHeapMaxBytes()): boolean {
  if (end > limit) return false;
  const have = memory.buffer.byteLength;
  if (end > have) {
    try {
      memory.grow(Math.ceil((end - have) / PAGE_BYTES));
    } catch {
      return false;
    }
  }
  return true;
}

/**
 * Creates the heap now under `policy` (tests: the heap is otherwise created on first use,
 * under the default policy). Nothing to do when it exists under the same policy; a
 * RangeError when it exists under another one (it was used before the policy was given).
 */
export function startHostHeap(policy: HostHeapPolicy): void {
  if (heap === undefined) {
    createHeap(policy);
  } else if (
    heap !== null &&
    (heap.policy.poisonReused !== policy.poisonReused ||
      (heap.policy.growable ?? false) !== (policy.growable ?? false))
  ) {
    throw new RangeError("startHostHeap: the host heap is in use under another policy");
  }
}

/** The heap, created on first use; null where shared WebAssembly memories are unavailable. */
function theHeap(): HostHeap | null {
  return heap !== undefined ? heap : createHeap({ poisonReused: false });
}

/** Creates the heap under `policy` (null where shared WebAssembly memories are unavailable). */
function createHeap(policy: HostHeapPolicy): HostHeap | null {
  hostHeapMaxBytes(); // a bad ACLNN_NORM_HOST_HEAP_MB is refused before anything is allocated
  try {
    const memory = heapMemory(policy.growable ?? false);
    const pool = new BlockPool(HOST_HEAP_RESERVED_BYTES, (end) => reach(memory, end));
    heap = {
      policy: Object.freeze({ ...policy }),
      memory,
      buffers: new WeakSet(),
      pool,
      registry: new FinalizationRegistry(release),
      fallbacks: 0,
      watch: new DropWatch(giveBack, (block) => block.live, () => pool.counters.bytesInUse),
    };
  } catch {
    heap = null;
  }
  return heap;
}

/** The heap's memory (created on first use), or null where it is unavailable. */
export function hostHeapMemory(): WebAssembly.Memory | null {
  return theHeap()?.memory ?? null;
}

/** The memory's current buffer, remembered as one of the heap's. */
function currentBuffer(h: HostHeap): SharedArrayBuffer {
  const buffer = h.memory.buffer as unknown as SharedArrayBuffer;
  h.buffers.add(buffer);
  return buffer;
}

/** Returns `block` to its size class's free list (cached for the next request). */
function release(block: Block): void {
  const h = heap;
  if (!h || !block.live) return;
  block.live = false;
  h.pool.give(block.at, block.bytes);
}

/**
 * A block of at least `bytes` bytes in the heap: [buffer, byteOffset], with the block freed
 * once `owner` (the typed array made over it) is collected. Zero-filled unless `zeroed` is
 * false (storage that a kernel overwrites whole: a reused block then keeps old bytes).
 * Undefined when the heap is unavailable or full (counted as a fallback).
 */
export function heapAllocate(
  bytes: number,
  zeroed = true,
): HeapGrant | undefined {
  return takeBlock(bytes, zeroed, undefined);
}

/**
 * A block of at least `bytes` bytes for kernel scratch (a call's staging, a thread's region,
 * the pool's arena), as {@linkcode heapAllocate} gives (zero-filled only when `zeroed`),
 * except that it may take blocks past {@linkcode hostHeapMaxBytes} up to 4 GiB: the
 * kernels' own memory does not count against the room for tensors. Free a call's scratch with
 * {@linkcode heapFree} of its owner when the call ends. Undefined where the heap is
 * unavailable or 4 GiB cannot hold it.
 */
export function heapScratch(
  bytes: number,
  zeroed = false,
): HeapGrant | undefined {
  const h = theHeap();
  return h
    ? takeBlock(bytes, zeroed, (end) => reach(h.memory, end, HOST_HEAP_LIMIT_BYTES))
    : undefined;
}

/**
 * The bytes of the block a request of `bytes` takes: its size class
 * (host_blocks.ts `sizeClass`) when that leaves {@linkcode HOST_HEAP_SLACK_BYTES} after the
 * request, else the class and the slack rounded up to whole {@linkcode BLOCK_ALIGN} units. A
 * tensor of a power of two bytes (or 1.25, 1.5, 1.75 times one), the usual case, is a class of
 * its own: rounding the request and its slack up to a class together put a [2048,768] float32
 * tensor (6 MiB) in a 7 MiB block and a [16,64,32,32] one (4 MiB) in 5 MiB, so that a loop
 * that drops its results reserved a sixth to a quarter more heap (bench/RESULTS.md, twelfth
 * session). A request of one size always takes blocks of one size, so tensors of one shape
 * still reuse each other's blocks; no block is larger than the old rule's.
 */
export function blockBytes(bytes: number): number {
  const size = sizeClass(Math.ceil(bytes / BLOCK_ALIGN) * BLOCK_ALIGN);
  return size - bytes >= HOST_HEAP_SLACK_BYTES ? size : size + SLACK_BLOCK_BYTES;
}

function takeBlock(
  bytes: number,
  zeroed: boolean,
  grow: ((end: number) => boolean) | undefined,
): HeapGrant | undefined {
  const h = theHeap();
  if (!h) return undefined;
  const size = blockBytes(bytes);
  const taken = grow ? h.pool.take(size, grow) : takeForTensor(h, size);
  if (taken && !grow && taken.at + size > hostHeapMaxBytes()) {
    // A block scratch took past the maximum, cached since: tensors stay below the maximum (a
    // loop that drops its results would otherwise fill it and make scratch grow again), so
    // the heap's size stays bounded by the maximum plus one call's scratch.
    h.pool.give(taken.at, size);
    h.fallbacks++;
    return undefined;
  }
  if (!taken) {
    if (!grow) h.fallbacks++;
    return undefined;
  }
  const { at } = taken;
  const buffer = currentBuffer(h);
  if (taken.dirty) {
    const view = new Uint8Array(buffer, at, size);
    if (zeroed) view.fill(0);
    else if (h.policy.poisonReused) view.fill(0xff); // NaN in every float dtype
  }
  return new HeapGrant(buffer, { at, bytes: size, live: true }, grow === undefined);
}

const refuseGrowth = () => false;

/**
 * A tensor's block: a freed one if any; else one of a tensor that a synchronous loop dropped
 * and the collector cleared (liveness.ts); only then memory never used, whose pages cost
 * faults on first use (about 0.34 ms per MiB on the development VM); and when the heap is at
 * its maximum, a dropped one that a full collection of our own finds (liveness.ts
 * COLLECT_WHEN_FULL_BYTES), before the caller falls back to a buffer of its own.
 */
function takeForTensor(h: HostHeap, size: number): TakenBlock | undefined {
  h.watch.allocating();
  const reused = h.pool.take(size, refuseGrowth) ??
    (h.watch.reclaimIfCollected() ? h.pool.take(size, refuseGrowth) : undefined);
  if (reused) return reused;
  const grown = h.pool.take(size);
  // A sign of dropped results: memory never used, or none left. A block cut again below the
  // top's highest mark is not one: a loop that disposes tensors of varying sizes frees such
  // blocks, and counting them nudged it into a full collection every few milliseconds.
  if (grown === undefined || !grown.dirty) h.watch.missed(size);
  if (grown || !h.watch.full(size, hostHeapMaxBytes())) return grown;
  // Full: a collection of our own finds the dropped blocks V8 has not collected yet.
  if (!collectGarbage() || !h.watch.reclaimAfterCollection()) return undefined;
  return h.pool.take(size, refuseGrowth);
}

/** Gives back a block whose owner was collected (liveness.ts' proof), now. */
function giveBack(block: Block): void {
  heap?.registry.unregister(block);
  release(block);
}

/**
 * Releases host storage `owner` (a typed array of a tensor's storage) now: a heap block goes
 * back to the allocator's cache; any other storage is only marked. Every view of it must no
 * longer be used ({@linkcode heapFreed} then says so). False when `owner` owned no live heap
 * block (not in the heap, or freed already).
 */
export function heapFree(owner: object): boolean {
  const block = states.get(owner);
  if (block === undefined) {
    states.set(owner, RELEASED);
    return false;
  }
  if (!block.live) return false;
  heap?.registry.unregister(block);
  release(block);
  return true;
}

/** Whether {@linkcode heapFree} released `owner` (a tensor's host storage). */
export function heapFreed(owner: object): boolean {
  return states.get(owner)?.live === false;
}

/** Counts a request of heap size that got a buffer of its own without asking the heap. */
export function countFallback(): void {
  const h = theHeap();
  if (h) h.fallbacks++;
}

/**
 * The heap byte address of element 0 of `view`, or -1 when `view` is not in the heap
 * (its buffer is another, or this thread did not allocate it).
 */
export function heapAddress(view: ArrayBufferView | undefined): number {
  if (!view || !heap) return -1;
  return heap.buffers.has(view.buffer as SharedArrayBuffer) ? view.byteOffset : -1;
}

/** What the host heap holds (see {@linkcode hostHeapUsage}). */
export interface HostHeapUsage {
  /**
   * Bytes of the heap its blocks have reached, in whole pages (it never shrinks): the most of
   * it that can have been written, so the most memory it can take.
   */
  readonly bytesReserved: number;
  /** Bytes in live blocks (rounding to size classes and slack included). */
  readonly bytesInUse: number;
  /** Bytes of freed blocks kept for reuse (and free ranges below the top). */
  readonly bytesCached: number;
  /** The highest `bytesInUse` so far. */
  readonly peakBytesInUse: number;
  /** Live blocks. */
  readonly blocks: number;
  /** Blocks handed out so far. */
  readonly allocations: number;
  /** Of those, how many reused a cached block of their size class. */
  readonly cacheHits: number;
  /** Storage of heap size that got a buffer of its own (the heap was full or off). */
  readonly fallbacks: number;
  /**
   * Blocks of dropped tensors given back inside a job, before their finalizers could run (a
   * synchronous loop that drops its results: liveness.ts).
   */
  readonly droppedReclaimed: number;
  /** Bytes of the heap tensors may take ({@linkcode hostHeapMaxBytes}). */
  readonly bytesLimit: number;
}

/**
 * What the host caching allocator holds now: the shared memory where host tensors of 4 KiB
 * and up live, so that the CPU backend's WebAssembly kernels work on them in place. Blocks are
 * rounded to size classes; `dispose()`, `using`, `tidy()` and, between tasks, the garbage
 * collector give a block back to its class's free list, and the next tensor of that class
 * reuses it (`cacheHits`). All zero before the heap is first used; `bytesReserved` never
 * shrinks. A synchronous loop that drops its results without disposing them gets their blocks
 * back once the collector has cleared them (`droppedReclaimed`; the collector's callbacks
 * would wait for the loop to end); until then new tensors take memory never used, and once the
 * heap is full, storage gets a buffer of its own (`fallbacks`), which costs more.
 *
 * @example
 * ```ts
 * import { hostHeapUsage, Tensor } from "@aclnn/norm";
 * const x = Tensor.zeros([64, 1024]); // 256 KiB: in the heap
 * const before = hostHeapUsage();
 * x.dispose(); // its block is cached for reuse
 * const y = Tensor.zeros([64, 1024]); // takes it back
 * console.log(hostHeapUsage().cacheHits === before.cacheHits + 1, y.shape); // true [64, 1024]
 * ```
 */
export function hostHeapUsage(): HostHeapUsage {
  const h = heap;
  const limit = hostHeapMaxBytes();
  const c = h ? h.pool.counters : zeroCounters();
  return {
    // The pool's `clean` mark: the end of the highest block it has handed out (never lower).
    bytesReserved: h ? Math.ceil(h.pool.clean / PAGE_BYTES) * PAGE_BYTES : 0,
    bytesInUse: c.bytesInUse,
    bytesCached: c.bytesCached,
    peakBytesInUse: c.peakBytesInUse,
    blocks: c.blocks,
    allocations: c.allocations,
    cacheHits: c.cacheHits,
    fallbacks: h ? h.fallbacks : 0,
    droppedReclaimed: h ? h.watch.reclaimed : 0,
    bytesLimit: limit,
  };
}

/** Tests: frees a block handed out now, as the registry does once its owner is collected. */
export function releaseForTests(grant: { readonly at: number }): void {
  if (grant instanceof HeapGrant) release(grant.block);
}
