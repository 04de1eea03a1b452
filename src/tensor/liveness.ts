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
 * - tokens (empty objects) and their WeakRefs are made ahead into a supply: tokens made in the
 *   running job would be kept to its end. The first supply is made while this module loads,
 *   followed by a task boundary before its importers run (a top-level await), so that a
 *   script whose whole training loop is its first job can use it; later refills run in a task
 *   of their own (an unreferenced timer) once the loop yields;
 * - each watched block's owner (the typed array of a tensor's storage, the object the heap's
 *   FinalizationRegistry watches) holds {@linkcode TOKENS_PER_BLOCK} tokens through a
 *   WeakMap, an ephemeron: held while the owner lives, and only then. Nothing else holds them;
 * - `deref()` of a block's token returning undefined is proof that the owner was collected:
 *   only then is the block given back. A token found alive is kept to the job's end by that
 *   very `deref()`, so the block's next token answers the next question; a block that answered
 *   "alive" with every token leaves the watch (the FinalizationRegistry frees it between tasks).
 *
 * The blocks are asked only after a collection: each nudge drops a set of {@linkcode CANARIES}
 * supply tokens that nothing holds, and a cleared canary of the oldest set says that a
 * collection ran after it was dropped. A reclaim then asks every block once and drops a new
 * set (a fence): the next reclaim waits for a collection after this one, since asking again
 * after the same collection would only use up the tokens of blocks dropped since it began
 * (bench:step's dropped loop lost 837 of 3088 blocks that way before the fence). Canaries are
 * asked at most every {@linkcode ASK_EVERY_MS} ms, at a nudge or when the heap has no freed
 * block for a request.
 *
 * Every {@linkcode NUDGE_EVERY_BYTES} of growth of the heap's bytes in use, when results are
 * being dropped (a reclaim gave blocks back, or a request found no freed block, since the last
 * nudge: a loop that disposes its results at the end of each step grows by all of them first,
 * and nudging it cost the fused bench:step model 3.8% of its time in the collector where 1.4%
 * is its own), the collector is told that memory is short, as a large ArrayBuffer tells it
 * ({@linkcode NUDGE_REPORT_BYTES}, never touched, so no page is faulted in): a loop whose
 * tensors live in the WebAssembly heap allocates too little else to prompt V8. When V8
 * collects is its choice (on the development VM, with both cores computing, a full collection
 * every 50-100 ms): this module guarantees that a block is never given back while its owner
 * can be reached, not how soon a dropped one comes back (bench/RESULTS.md has the figures).
 *
 * @module
 */

/** Tokens each watched block holds: how many "alive" answers it may give in one job. */
export const TOKENS_PER_BLOCK = 3;

/** Canaries dropped together at each nudge: questions the set can answer "not yet". */
export const CANARIES = 8;

/**
 * Time between two questions to the canaries: each "not yet" uses one, and the oldest sets,
 * the likeliest to have been dropped before the collection under way began, are asked first.
 */
const ASK_EVERY_MS = 2;

/** Sets of canaries kept (the oldest is asked first; a set older than these is let go). */
const CANARY_SETS = 16;

/** Watched allocation between two nudges. */
export const NUDGE_EVERY_BYTES = 64 * 2 ** 20;

/** The external memory one nudge reports (an ArrayBuffer of this size, never touched). */
export const NUDGE_REPORT_BYTES = 256 * 2 ** 20;

/** Tokens a refill makes (about 1.5 MiB of objects; each watched block takes three). */
const SUPPLY_TOKENS = 1 << 15;

/** The tokens made ahead and their WeakRefs, index for index. */
const supplyTokens: object[] = [];
const supplyRefs: WeakRef<object>[] = [];
let refillPending = false;

/** Each watched owner's tokens, held while the owner lives (never read: they only exist). */
const tokensOf = new WeakMap<object, object[]>();

/** Makes tokens for the jobs after this one. */
function refill(): void {
  refillPending = false;
  while (supplyTokens.length < SUPPLY_TOKENS) {
    const token = {};
    supplyTokens.push(token);
    supplyRefs.push(new WeakRef(token));
  }
}

/** Schedules a refill in a task of its own (a timer that does not keep the process alive). */
function scheduleRefill(): void {
  if (refillPending) return;
  refillPending = true;
  Deno.unrefTimer(setTimeout(refill, 0));
}

/**
 * Takes up to `n` tokens' WeakRefs from the supply, and the tokens into `held` (or drops
 * them: canaries).
 */
function takeTokens(n: number, held?: object[]): WeakRef<object>[] {
  if (supplyTokens.length < SUPPLY_TOKENS / 2) scheduleRefill();
  const from = Math.max(0, supplyTokens.length - n); // fewer when the supply is short
  const taken = supplyTokens.splice(from);
  held?.push(...taken);
  return supplyRefs.splice(from);
}

/** Nudges made (the bytes of each ArrayBuffer are read, so that it is made). */
let nudges = 0;

/** Reports {@linkcode NUDGE_REPORT_BYTES} of external memory, at once dropped. */
function nudgeCollector(): void {
  try {
    nudges += new ArrayBuffer(NUDGE_REPORT_BYTES).byteLength / NUDGE_REPORT_BYTES;
  } catch {
    // No address space for it: the collector goes unprompted.
  }
}

/** A watched block: its owner's tokens' WeakRefs, the next one to ask, the block. */
interface Watched<B> {
  readonly refs: WeakRef<object>[];
  next: number;
  readonly block: B;
}

/**
 * The heap blocks of tensors a synchronous loop may drop, oldest first, and the blocks given
 * back once their owners are collected (through `give`, called only then).
 */
export class DropWatch<B> {
  readonly #give: (block: B) => void;
  readonly #held: (block: B) => boolean;
  #queue: Watched<B>[] = [];
  /** Sets of canaries, oldest first, one dropped at each nudge. */
  readonly #canarySets: WeakRef<object>[][] = [];
  /** The lowest bytes in use seen since the last nudge. */
  #lowInUse = 0;
  /** Whether a reclaim gave blocks back or a request missed since the last nudge. */
  #dropping = false;
  /** Queue length at which entries of blocks freed otherwise are dropped (see watch). */
  #compactAt = 1024;
  /** When the canaries were last asked (performance.now()). */
  #asked = -Infinity;
  /** Blocks given back before their owners' finalizers ran. */
  reclaimed = 0;

  /**
   * `give` takes back a block whose owner was collected; `held` says whether a block is still
   * held (false once `dispose()` or a finalizer freed it: its entry is then dropped unasked).
   */
  constructor(give: (block: B) => void, held: (block: B) => boolean) {
    this.#give = give;
    this.#held = held;
  }

  /** Watches `block`, owned by `owner` (unwatched when the supply is short). */
  watch(owner: object, block: B): void {
    if (supplyTokens.length < TOKENS_PER_BLOCK) {
      scheduleRefill();
      return;
    }
    const tokens: object[] = [];
    this.#queue.push({ refs: takeTokens(TOKENS_PER_BLOCK, tokens), next: 0, block });
    tokensOf.set(owner, tokens);
    if (this.#queue.length >= this.#compactAt) {
      // A loop that disposes its results leaves entries of freed blocks, and may never
      // collect: they go here, so that the queue stays within twice the blocks held.
      this.#queue = this.#queue.filter((entry) => this.#held(entry.block));
      this.#compactAt = Math.max(1024, 2 * this.#queue.length);
    }
  }

  /** Blocks watched now. */
  get size(): number {
    return this.#queue.length;
  }

  /**
   * Called before each watched allocation with the bytes the heap's live blocks hold: once
   * they have grown by {@linkcode NUDGE_EVERY_BYTES} from their lowest since the last nudge,
   * gives back the dropped blocks if the collector ran and, when results are being dropped
   * (see {@linkcode DropWatch.missed}), drops a set of canaries and nudges the collector.
   */
  allocating(bytesInUse: number): void {
    if (bytesInUse < this.#lowInUse) this.#lowInUse = bytesInUse;
    if (bytesInUse - this.#lowInUse < NUDGE_EVERY_BYTES || this.#queue.length === 0) return;
    this.#lowInUse = bytesInUse;
    this.reclaimIfCollected();
    // Growth alone is no sign of dropped results (a step that disposes its results at its end
    // grows by all of them first): a nudge also needs a reclaim that gave blocks back, or a
    // request that found no freed block, since the last one.
    if (!this.#dropping) return;
    this.#dropping = false;
    if (this.#canarySets.length === CANARY_SETS) this.#canarySets.shift();
    this.#canarySets.push(takeTokens(CANARIES));
    nudgeCollector();
  }

  /** Tells the watch that a request found no freed block (it took memory never used). */
  missed(): void {
    this.#dropping = true;
  }

  /**
   * Gives back every watched block whose owner was collected, if the collector has run since
   * the oldest set of canaries was dropped; true when a block came back. A question that finds
   * the collector not yet run uses one of that set's canaries (kept to the job's end).
   */
  reclaimIfCollected(): boolean {
    const now = performance.now();
    if (now - this.#asked < ASK_EVERY_MS) return false;
    this.#asked = now;
    const sets = this.#canarySets;
    while (sets.length > 0 && sets[0].length === 0) sets.shift();
    if (sets.length === 0 || sets[0].pop()!.deref() !== undefined) return false;
    // The next reclaim waits for a collection after this one (a fence of new canaries): the
    // younger sets may have been cleared by the same collection, and asking every block again
    // without a new one would only use up the tokens of those dropped since it began.
    sets.length = 0;
    sets.push(takeTokens(CANARIES));
    return this.#reclaim() > 0;
  }

  /** Asks every watched block once, oldest first; gives back those collected. */
  #reclaim(): number {
    let given = 0;
    const kept: Watched<B>[] = [];
    for (const entry of this.#queue) {
      if (!this.#held(entry.block)) continue; // freed by dispose() or a finalizer
      if (entry.refs[entry.next].deref() === undefined) {
        this.#give(entry.block);
        given++;
      } else if (++entry.next < entry.refs.length) kept.push(entry);
    }
    this.#queue = kept;
    this.reclaimed += given;
    if (given > 0) this.#dropping = true;
    return given;
  }
}

// The first supply, made while this module loads, and a task boundary before the modules that
// import this one run: a script's first job (its whole top-level loop, when the loop never
// awaits) then finds tokens it can ask. It costs the import a few ms, once per process.
refill();
await new Promise((resolve) => setTimeout(resolve, 0));
