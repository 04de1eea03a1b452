/**
 * Which heap tensors a synchronous loop has dropped: a liveness signal that works inside one
 * job, where the host heap's FinalizationRegistry cannot (its callbacks run between tasks).
 *
 * The contract it rests on (ECMA-262, WeakRef and the kept list, "AddToKeptObjects" and
 * "ClearKeptObjects"): a WeakRef's target is kept alive to the end of the job that made the
 * WeakRef or last called `deref()` on it; after that the collector may clear it as soon as
 * nothing else reaches it, and `deref()` then returns undefined, in any later job, also in the
 * middle of a loop that never awaits. So:
 *
 * - tokens (empty objects) and their WeakRefs are made ahead into a supply (token_supply.ts):
 *   tokens made in the running job would be kept to its end. The first supply is made while
 *   that module loads, followed by a task boundary before its importers (this module among
 *   them) run, so that a script whose whole training loop is its first job can use it; later
 *   refills run in a task of their own (an unreferenced timer) once the loop yields;
 * - blocks are watched in groups of {@linkcode MIN_BLOCKS_PER_GROUP} to
 *   {@linkcode MAX_BLOCKS_PER_GROUP} allocated one after another (larger while groups come back
 *   at their first question, smaller while many are still alive at their second);
 *   each owner in a group (the typed array of a tensor's storage, the object the heap's
 *   FinalizationRegistry watches) holds the group's {@linkcode TOKENS_PER_GROUP} tokens
 *   through a WeakMap, an ephemeron: held while an owner lives, and only then. Nothing else
 *   holds them once the group is closed;
 * - `deref()` of a group's token returning undefined is proof that all its owners were
 *   collected: only then are its blocks given back. A token found alive is kept to the job's
 *   end by that very `deref()`, so the group's next token answers the next question; a group
 *   that answered "alive" with every token leaves the watch (the FinalizationRegistry frees its
 *   blocks between tasks);
 * - a job has the supply it started with (bench:step's float32 model, 15 watched allocations a
 *   step, ran 4000 steps with it and had used a quarter; any await refills it): past it, new
 *   blocks go unwatched and come back through the FinalizationRegistry alone, as before this
 *   module.
 *
 * The groups are asked only after a collection: a nudge drops a set of {@linkcode CANARIES}
 * supply tokens that nothing holds (when fewer are left in the sets), and a cleared canary of
 * the oldest set says that a collection ran after it was dropped. A reclaim then asks every
 * closed group once and drops a new set (a fence): the next reclaim waits for a collection
 * after this one, since asking again after the same collection would only use up the tokens
 * of groups dropped since it began (bench:step's dropped loop lost 837 of 3088 blocks that
 * way before the fence). The oldest set's canary is asked at a nudge or when the heap has no
 * freed block for a request, at most every {@linkcode ASK_FIRST_MS} ms, and only when V8's old
 * space is found smaller than at the last look (a full collection swept it: {@linkcode
 * oldSpaceBytes}) or the set's age has grown by half since its last "not yet"
 * ({@linkcode ASK_BACKOFF}): a set then lasts about a second, and answers within a few ms of
 * the collection that clears it.
 *
 * The collector is nudged as the heap's bytes in use grow (see {@linkcode DropWatch.allocating}):
 * a loop whose tensors live in the WebAssembly heap allocates too little else to prompt V8,
 * and the tokens, old objects, are cleared by full collections only. A nudge grows a memory of
 * its own by {@linkcode NUDGE_REPORT_BYTES}, never touched (its pages are reserved, not
 * faulted in). When V8 collects is its choice (on the development VM, with both cores
 * computing, a full collection every 50-150 ms): this module guarantees that a block is never
 * given back while its owner can be reached, not how soon a dropped one comes back
 * (bench/RESULTS.md has the figures).
 *
 * @module
 */

import v8 from "node:v8";
import { holdTokens, scheduleRefill, suppliedTokens, takeTokens } from "./token_supply.ts";

/** Tokens each group of watched blocks holds: how many "alive" answers it may give in a job. */
export const TOKENS_PER_GROUP = 3;

/**
 * The fewest blocks allocated one after another that share one group of tokens (the group
 * comes back when all of their owners are collected): a group's size starts here, and comes
 * back here while many groups are still alive at their second question (a loop that keeps some
 * results among those it drops: a block still held keeps its group's others from coming back
 * before the job ends; see {@linkcode KEPT_SHARE}).
 */
export const MIN_BLOCKS_PER_GROUP = 4;

/**
 * The most blocks that share one group of tokens, reached while groups come back at their first
 * question (a training step's results die together): the supply then lasts that many times as
 * long as with a group per block (a job's supply is all it has). bench:step's float32 model used
 * it up after about 600 steps with a group per block and 2700 with groups of 4, its heap then
 * filling (5 GiB of RSS, 10 ms a step against 6); with groups of 16 it ran 4000 steps at
 * 5.6-6.6 ms with a quarter of the supply. A loop of layerNormBackward [64,1024] calls, results
 * dropped (three blocks a call): 206 us a call with groups of 4 (the supply spent, the heap
 * full), 110 with 8, 86 with 16, where disposing them takes 40-48 (bench/RESULTS.md, seventh
 * session).
 */
export const MAX_BLOCKS_PER_GROUP = 16;

/**
 * How a reclaim sizes the next groups, from the groups it asked for the first and the second
 * time (at least 8 of a kind for a decision): a group still alive at its second question most
 * likely holds a result the loop keeps (a dropped one is at most a collection late), so above
 * this share of those the next groups are half as large (down to
 * {@linkcode MIN_BLOCKS_PER_GROUP}); at or below it of those asked first, or an eighth of those
 * asked again, twice as large (up to {@linkcode MAX_BLOCKS_PER_GROUP}). Groups made after the
 * collection began are alive at their first question in a loop that drops everything too.
 */
export const KEPT_SHARE = 1 / 4;

/**
 * Allocations after the last sign of dropped results (a request that found no freed block, or
 * a reclaim that gave blocks back) during which new blocks are still watched: a loop that
 * disposes its results stops using up the supply once its allocations all reuse blocks.
 */
export const WATCH_WINDOW = 4096;

/**
 * Canaries dropped together: questions the set can answer "not yet". With
 * {@linkcode ASK_FIRST_MS} and {@linkcode ASK_BACKOFF}, the last is asked about 1.2 s after the
 * set was dropped.
 */
export const CANARIES = 16;

/**
 * The age of a set of canaries at its first question (ms), and the least time between two
 * questions to it. The oldest set, the likeliest to have been dropped before the collection
 * under way began, is asked first.
 */
export const ASK_FIRST_MS = 2;

/**
 * Without a sign of a collection ({@linkcode oldSpaceBytes}), a set's next question after a
 * "not yet" waits this share of its age (at least {@linkcode ASK_FIRST_MS}). Each "not yet"
 * uses a canary, and V8 finishes a full collection 20-40 ms after it begins marking
 * (`--trace-gc`, "walltime since start of marking"), later on a busy machine. Asked every 2 ms
 * without a sign, a set of 8 was used up in 16 ms, before the collection it waited for, and the
 * next set came only with the next nudge, 64 MiB of growth later, again too early: a loop of
 * layerNorm [64,1024] calls with results dropped, on one thread, got no block back in 3000
 * calls (787 MiB of new memory, each call's output in pages faulted then: 0.85 ms a call
 * against 0.03 disposed; bench/RESULTS.md, twenty-first session).
 */
export const ASK_BACKOFF = 0.5;

/**
 * V8's old-space bytes in use (`node:v8` getHeapSpaceStatistics, about 9 us a look), or 0
 * where the statistics are unavailable. Only a full collection makes it smaller (it sweeps the
 * old space; a scavenge only adds to it, promoting), and the tokens, old objects, are cleared
 * by full collections only: a look that finds it smaller than the last is the sign that asks a
 * canary.
 */
export function oldSpaceBytes(): number {
  try {
    for (const space of v8.getHeapSpaceStatistics()) {
      if (space.space_name === "old_space") return space.space_used_size;
    }
  } catch {
    // no statistics: the questions follow ASK_BACKOFF alone
  }
  return 0;
}

/** Sets of canaries kept (the oldest is asked first; a set older than these is let go). */
const CANARY_SETS = 16;

/** Watched allocation between two nudges. */
export const NUDGE_EVERY_BYTES = 64 * 2 ** 20;

/**
 * Requests that the heap could not serve at its maximum (each then gets a buffer of its own,
 * whose pages fault: 0.35 ms per MiB on the development VM) after which the heap runs a full
 * collection itself (collect_garbage.ts: 14-18 ms in bench:step's process) and takes the
 * dropped blocks it finds: a loop whose heap filled while V8 had not collected (bench:step, one
 * run in about twenty: 359 fallbacks, its dropped step 2.5x its time) instead of falling back
 * until V8 does. The wait after a collection follows what it gave back: twice as long after one
 * that gave nothing (live tensors fill the heap), up to the heap's maximum;
 * {@linkcode COLLECT_SOON_BYTES} after one that gave back {@linkcode COLLECTION_PAYS_BYTES} or
 * more; this many after one that gave back less.
 */
export const COLLECT_WHEN_FULL_BYTES = 128 * 2 ** 20;

/**
 * The wait before the first collection of a full heap, and after one that paid for itself: a
 * collection that gives back B bytes saves B's fallbacks (B x 0.35 ms per MiB of faults, and
 * the staging of their tensors) for one collection's time, so past about 43 MiB (15 ms / 0.35
 * ms per MiB) collecting at once costs less than any wait. bench:step's float32 model, whose
 * heap filled at 2 GiB in one run of four, fell back 50 times (128 MiB) before its first
 * collection, each time it filled; with 16 MiB 3-8 times (bench/RESULTS.md, tenth session).
 */
export const COLLECT_SOON_BYTES = 16 * 2 ** 20;

/**
 * Bytes a collection must give back for the next one to come after
 * {@linkcode COLLECT_SOON_BYTES}.
 */
export const COLLECTION_PAYS_BYTES = 64 * 2 ** 20;

/** The growth of one nudge (of a WebAssembly memory that is never touched). */
export const NUDGE_REPORT_BYTES = 256 * 2 ** 20;

/**
 * The memory whose growth nudges the collector: a WebAssembly memory of its own, never
 * touched (its pages are reserved address space, not memory), replaced by a new one after
 * every collection a reclaim sees, and once it reaches 4 GiB (the old one goes with the next
 * collection). V8 sizes the next collection's limit from the memory alive after the last one,
 * this memory included: kept to 4 GiB, it put that limit 0.6-0.9 GiB above the memory of the
 * moment (`--trace-incremental-marking`: "global allocation limit" 3.2, 3.8, 4.7, 5.3 GiB), and
 * bench:step's float32 dropped loop went 350 ms (16 steps, 56 MiB each into new memory) without
 * a full collection. Replaced at every reclaim: dropped round 1 11.5-14.7 -> 7.9-9.4 ms a step,
 * heap 1.5-2.1 -> 1.1-1.5 GiB (bench/RESULTS.md, tenth session).
 */
let nudgeMemory: WebAssembly.Memory | undefined;

/**
 * Grows {@linkcode nudgeMemory} by {@linkcode NUDGE_REPORT_BYTES}: external memory of an
 * object in V8's old generation, which only a full collection can free. An ArrayBuffer of
 * that size, dropped at once, was young: V8 answered it with a scavenge, which clears no
 * token, and a loop whose heap had reached its maximum (so that the heap's own memory no
 * longer grew) got no block back in 600 steps (bench/RESULTS.md).
 */
function nudgeCollector(): void {
  try {
    nudgeMemory ??= new WebAssembly.Memory({ initial: 0, maximum: 65536 });
    nudgeMemory.grow(NUDGE_REPORT_BYTES / 65536);
  } catch {
    nudgeMemory = undefined; // at 4 GiB (or out of address space): a new one next time
  }
}

/** A set of canaries dropped together, and when it may be asked next. */
interface CanarySet {
  readonly refs: WeakRef<object>[];
  /** When it was dropped (performance.now()). */
  readonly dropped: number;
  /** The earliest time of its next question. */
  nextAsk: number;
}

/** A new set of {@linkcode CANARIES} canaries (fewer when the supply is short). */
function dropCanaries(): CanarySet {
  const dropped = performance.now();
  return { refs: takeTokens(CANARIES), dropped, nextAsk: dropped + ASK_FIRST_MS };
}

/**
 * A group of up to {@linkcode MAX_BLOCKS_PER_GROUP} watched blocks, allocated one after another:
 * the WeakRefs of the tokens their owners all hold, the next one to ask, the blocks, and the
 * tokens themselves while the group is still open (held here, so that nothing is asked of it).
 */
interface Watched<B> {
  readonly refs: WeakRef<object>[];
  next: number;
  readonly blocks: B[];
  tokens: object[] | undefined;
}

/**
 * The heap blocks of tensors a synchronous loop may drop, oldest first, and the blocks given
 * back once their owners are collected (through `give`, called only then).
 */
export class DropWatch<B> {
  readonly #give: (block: B) => void;
  readonly #held: (block: B) => boolean;
  readonly #inUse: () => number;
  #queue: Watched<B>[] = [];
  /** The group new blocks join. */
  #open: Watched<B> | undefined;
  /** Watched allocations since the last sign of dropped results. */
  #sinceSign = 0;
  /** Sets of canaries, oldest first. */
  readonly #canarySets: CanarySet[] = [];
  /** The bytes in use at the last nudge or reclaim. */
  #base = 0;
  /** Bytes of requests that found no freed block since the last nudge. */
  #missedBytes = 0;
  /** Bytes of requests the full heap could not serve since its last collection. */
  #fullBytes = 0;
  /** Bytes of those after which the heap collects (see COLLECT_WHEN_FULL_BYTES). */
  #collectAfter = COLLECT_SOON_BYTES;
  /** Queue length at which entries of blocks freed otherwise are dropped (see watch). */
  #compactAt = 1024;
  /** When {@linkcode oldSpaceBytes} was last looked at, and what it said. */
  #looked = -Infinity;
  #oldSeen = 0;
  /** Blocks a new group takes (see {@linkcode MIN_BLOCKS_PER_GROUP}). */
  #groupSize = MIN_BLOCKS_PER_GROUP;
  /** Blocks given back before their owners' finalizers ran. */
  reclaimed = 0;

  /**
   * `give` takes back a block whose owner was collected; `held` says whether a block is still
   * held (false once `dispose()` or a finalizer freed it: its entry is then dropped unasked);
   * `inUse` gives the bytes the heap's live blocks hold.
   */
  constructor(
    give: (block: B) => void,
    held: (block: B) => boolean,
    inUse: () => number,
  ) {
    this.#give = give;
    this.#held = held;
    this.#inUse = inUse;
  }

  /**
   * Watches `block`, owned by `owner`, in the open group (a new one every
   * {@linkcode MIN_BLOCKS_PER_GROUP} to {@linkcode MAX_BLOCKS_PER_GROUP} blocks); unwatched when
   * the supply is short, or when no sign of dropped results came in the last
   * {@linkcode WATCH_WINDOW} allocations.
   */
  watch(owner: object, block: B): void {
    if (this.#sinceSign++ > WATCH_WINDOW) return;
    let open = this.#open;
    if (open === undefined || open.blocks.length >= this.#groupSize) {
      if (open !== undefined) open.tokens = undefined; // closed: its owners alone hold them
      if (suppliedTokens() < TOKENS_PER_GROUP) {
        this.#open = undefined;
        scheduleRefill();
        return;
      }
      const tokens: object[] = [];
      open = { refs: takeTokens(TOKENS_PER_GROUP, tokens), next: 0, blocks: [], tokens };
      this.#open = open;
      this.#queue.push(open);
    }
    open.blocks.push(block);
    holdTokens(owner, open.tokens!);
    if (this.#queue.length >= this.#compactAt) {
      // A loop that disposes its results leaves groups of freed blocks, and may never
      // collect: they go here, so that the queue stays within twice the groups held.
      this.#queue = this.#queue.filter((e) => e === open || e.blocks.some(this.#held));
      this.#compactAt = Math.max(1024, 2 * this.#queue.length);
    }
  }

  /** Groups watched now. */
  get size(): number {
    return this.#queue.length;
  }

  /** Blocks a new group takes now. */
  get groupSize(): number {
    return this.#groupSize;
  }

  /**
   * Called before each watched allocation. Every {@linkcode NUDGE_EVERY_BYTES} that the bytes
   * the heap's live blocks hold (`inUse()`) grow past their level at the last nudge or reclaim
   * (a loop that drops its results grows without end until a reclaim; one that disposes them
   * at the end of each step climbs to its step's peak once, and then stays below it), and
   * every {@linkcode NUDGE_EVERY_BYTES} of requests that found no freed block (the heap full:
   * the bytes in use cannot grow), gives back the dropped blocks if the collector ran, drops a
   * set of canaries and nudges the collector.
   */
  allocating(): void {
    const bytesInUse = this.#inUse();
    if (bytesInUse - this.#base < NUDGE_EVERY_BYTES && this.#missedBytes < NUDGE_EVERY_BYTES) {
      return;
    }
    this.#base = bytesInUse;
    this.#missedBytes = 0;
    if (this.#queue.length === 0) return;
    this.reclaimIfCollected();
    // A new set only when the sets are running low: the older a set, the likelier the
    // collection that clears it has begun, and each set costs the job's supply.
    let left = 0;
    for (const set of this.#canarySets) left += set.refs.length;
    if (left < CANARIES) {
      // With no set waiting, nothing looked at the old space since the last set ran out: the
      // new set's first look compares with the old space as it is dropped, so that a collection
      // that ended before it does not count as a sign for it.
      if (left === 0) this.#oldSeen = oldSpaceBytes();
      if (this.#canarySets.length === CANARY_SETS) this.#canarySets.shift();
      this.#canarySets.push(dropCanaries());
    }
    nudgeCollector();
  }

  /**
   * Tells the watch that a request of `bytes` found no freed block (it took memory never used,
   * or none was left): a sign of dropped results.
   */
  missed(bytes: number): void {
    this.#missedBytes += bytes;
    this.#sinceSign = 0;
  }

  /**
   * Tells the watch that the heap, at its maximum (`limit` bytes), could not serve a request of
   * `bytes`; true when the heap should now run a full collection and then
   * {@linkcode reclaimAfterCollection} (see {@linkcode COLLECT_WHEN_FULL_BYTES}).
   */
  full(bytes: number, limit: number): boolean {
    this.#fullBytes += bytes;
    if (this.#fullBytes < Math.min(this.#collectAfter, limit) || this.#queue.length === 0) {
      return false;
    }
    this.#fullBytes = 0;
    return true;
  }

  /**
   * Gives back the blocks of every group whose owners were all collected, the caller having
   * just run a full collection; true when a block came back.
   */
  reclaimAfterCollection(): boolean {
    this.#oldSeen = oldSpaceBytes(); // the next look compares with the heap after this one
    const before = this.#inUse();
    const given = this.#fenceAndReclaim();
    this.#collectAfter = !given
      ? 2 * this.#collectAfter
      : before - this.#inUse() >= COLLECTION_PAYS_BYTES
      ? COLLECT_SOON_BYTES
      : COLLECT_WHEN_FULL_BYTES;
    return given;
  }

  /**
   * Gives back the blocks of every group whose owners were all collected, if the collector ran
   * since the oldest set of canaries was dropped; true when a block came back. A question that
   * finds the collector not yet run uses one of that set's canaries (kept to the job's end),
   * and puts off the set's next question ({@linkcode ASK_BACKOFF}).
   */
  reclaimIfCollected(): boolean {
    const sets = this.#canarySets;
    while (sets.length > 0 && sets[0].refs.length === 0) sets.shift();
    const oldest = sets[0];
    if (oldest === undefined) return false;
    const now = performance.now();
    if (now - this.#looked < ASK_FIRST_MS) return false;
    this.#looked = now;
    const old = oldSpaceBytes();
    const swept = old < this.#oldSeen;
    this.#oldSeen = old;
    if (!swept && now < oldest.nextAsk) return false;
    if (oldest.refs.pop()!.deref() !== undefined) {
      oldest.nextAsk = now + Math.max(ASK_FIRST_MS, (now - oldest.dropped) * ASK_BACKOFF);
      return false;
    }
    return this.#fenceAndReclaim();
  }

  /** After a collection: the fence, then every closed group asked once. */
  #fenceAndReclaim(): boolean {
    // The next reclaim waits for a collection after this one (a fence of new canaries): the
    // younger sets may have been cleared by the same collection, and asking every block again
    // without a new one would only use up the tokens of those dropped since it began.
    const sets = this.#canarySets;
    sets.length = 0;
    sets.push(dropCanaries());
    // A collection ran: the nudges start over on a memory of their own (the grown one goes
    // with the next collection, and V8 no longer counts it in the memory it sizes its next
    // collection's limit from).
    nudgeMemory = undefined;
    const given = this.#reclaim();
    if (given > 0) this.#base = this.#inUse(); // growth counts again from the reclaimed level
    return given > 0;
  }

  /**
   * Asks every closed group once, oldest first; gives back the blocks of those collected, and
   * sizes the next groups by how many of those asked for the first and the second time were
   * still alive ({@linkcode KEPT_SHARE}).
   */
  #reclaim(): number {
    let given = 0;
    // Groups asked for the first (0) and the second (1) time, and how many of them were alive.
    const asked = [0, 0];
    const alive = [0, 0];
    const kept: Watched<B>[] = [];
    for (const entry of this.#queue) {
      if (entry.tokens !== undefined) {
        kept.push(entry); // open: not asked
        continue;
      }
      if (!entry.blocks.some(this.#held)) continue; // freed by dispose() or finalizers
      const lives = entry.refs[entry.next].deref() !== undefined;
      if (entry.next < 2) {
        asked[entry.next]++;
        if (lives) alive[entry.next]++;
      }
      if (!lives) {
        for (const block of entry.blocks) {
          if (!this.#held(block)) continue;
          this.#give(block);
          given++;
        }
      } else if (++entry.next < entry.refs.length) kept.push(entry);
    }
    this.#queue = kept;
    if (asked[1] >= 8 && alive[1] > asked[1] * KEPT_SHARE) {
      this.#groupSize = Math.max(MIN_BLOCKS_PER_GROUP, this.#groupSize / 2);
    } else if (
      (asked[0] >= 8 && alive[0] <= asked[0] * KEPT_SHARE) ||
      (asked[1] >= 8 && alive[1] <= asked[1] * KEPT_SHARE / 2)
    ) {
      this.#groupSize = Math.min(MAX_BLOCKS_PER_GROUP, 2 * this.#groupSize);
    }
    this.reclaimed += given;
    if (given > 0) this.#sinceSign = 0;
    return given;
  }
}
