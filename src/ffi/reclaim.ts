/**
 * Which device buffers are still referenced, and reclaiming the memory of those nobody
 * references any more, without keeping anything per call alive in a loop that never yields.
 *
 * V8 cannot see device memory: a loop that forgets large results may fill the device long
 * before the JavaScript heap asks for a garbage collection. So a device tracks its buffers
 * ({@linkcode BufferTracker}), by the slot of their allocation:
 *
 * - A buffer made in the current job is held by its slot until it is released or the next
 *   turn of the event loop comes, whichever is first. Released, it leaves nothing behind.
 * - At that turn, each buffer still unreleased gets a WeakRef in its slot, and a
 *   FinalizationRegistry (the backstop, holding the slot number) watches it: the backstop
 *   gives its allocation back once V8 finds it dead, and `reclaim()` finds the dead ones
 *   synchronously through their WeakRefs (before an allocation fails) instead of waiting for
 *   the backstop's callbacks, which V8 runs as a task of their own. Released, such a buffer
 *   is unregistered at once.
 *   No WeakRef is made in the job that made the buffer: V8 keeps a WeakRef's target alive
 *   until the job that made the WeakRef ends (ECMA-262 AddToKeptObjects, "KeepDuringJob"),
 *   so a loop that never yields, making one per buffer, would hold every buffer it ever made.
 * - After allocating {@linkcode RECLAIM_AFTER_BYTES} bytes (or a quarter of the device's
 *   memory limit, whichever is less), the next turn of the event loop runs a collection
 *   (`collectGarbage`) and releases the buffers it found dead.
 * - Inside a job that has not yielded: once the buffers made in it and still unreleased hold
 *   that many bytes (a loop that forgets its results), and before an allocation fails, each
 *   of them stops being held by its slot and is watched through liveness tokens instead
 *   (src/tensor/liveness.ts: tokens made in an earlier job, held by the buffer alone, whose
 *   WeakRefs the current job may ask), and the backstop watches it too; a collection then
 *   runs at once and every buffer whose token it cleared is released. A token found alive
 *   is kept to the job's end, so each buffer has {@linkcode TOKENS_PER_BUFFER} questions in
 *   a job; past them (or when the job's supply of tokens is spent) the backstop frees it
 *   once the loop yields. A reclaim that released less than half of what it watched doubles
 *   the bytes to the next one in the same job: a job that builds live tensors (a model's
 *   weights, a step's activations) pays a collection (10-20 ms) at 256 MiB, 768, 1792 and so
 *   on, not every 256 MiB.
 *
 * A synchronous loop that disposes its results (or uses `tidy`) therefore leaves nothing
 * behind per call, and one that forgets them runs on with its forgotten buffers freed every
 * {@linkcode RECLAIM_AFTER_BYTES} (or quarter of the memory limit) instead of failing when
 * the device is full. Without `gc` (below) the collections are V8's to schedule; an
 * allocation that finds no memory then fails with an out-of-memory error that gives its
 * figures.
 *
 * The collection uses V8's `gc` function (src/tensor/collect_garbage.ts). Where that is
 * unavailable, reclaiming falls back to V8's own schedule.
 *
 * @module
 */

import { collectGarbage } from "../tensor/collect_garbage.ts";
import { livenessTokens } from "../tensor/token_supply.ts";

/** Bytes a device may allocate between two collections it asks for (at most). */
export const RECLAIM_AFTER_BYTES = 256 * 1024 * 1024;

/**
 * Questions each buffer watched through liveness tokens may be asked in one job (each answer
 * "alive" keeps its token to the job's end).
 */
export const TOKENS_PER_BUFFER = 3;

/**
 * A buffer that the current job made and forgot, watched through liveness tokens: held by
 * nothing here (the tokens' WeakRefs, asked in order, answer for it).
 */
class TokenWatch {
  /** The WeakRefs of the tokens the buffer holds. */
  readonly refs: WeakRef<object>[];
  /** The next token to ask. */
  next = 0;

  constructor(refs: WeakRef<object>[]) {
    this.refs = refs;
  }

  /**
   * Whether the last collection found the buffer dead (false once its questions for this job
   * are spent: the backstop then answers).
   */
  collected(): boolean {
    if (this.next >= this.refs.length) return false;
    if (this.refs[this.next].deref() === undefined) return true;
    this.next++;
    return false;
  }
}

/** Runs `fn` on the next turn of the event loop without keeping the process alive for it. */
export function onNextTurn(fn: () => void): void {
  const id = setTimeout(fn, 0);
  Deno.unrefTimer(id);
}

/** What a {@linkcode BufferTracker} needs from its device. */
export interface TrackedDevice {
  /** Whether the device is closed (then nothing is released or synchronised any more). */
  isClosed(): boolean;
  /** The device's memory limit in bytes (Infinity: none). */
  memoryLimit(): number;
  /**
   * Gives back the allocation in `slot` (after the next synchronisation when queued work uses
   * it); returns false when the slot holds none.
   */
  releaseSlot(slot: number): boolean;
  /** Whether released allocations are waiting for a synchronisation. */
  hasDeferred(): boolean;
  /** Waits for the stream and frees what waited for it. */
  synchronize(): void;
}

/**
 * The buffers of one device by allocation slot (a small integer its device reuses once the
 * allocation is freed), as described in the module documentation. Arrays indexed by slot,
 * not Maps or Sets: a Map that entries enter and leave on every call reallocates its table
 * now and then, and V8 keeps a link from each table it drops to its successor (for live
 * iterators); such tables outlived their call in a loop that never yields and grew V8's
 * young generation (bench/RESULTS.md, "NPU path: a synchronous loop keeps a flat heap and
 * RSS").
 */
export class BufferTracker<B extends object> {
  readonly #device: TrackedDevice;
  /** Registered with a buffer's WeakRef as the token; holds the buffer's slot. */
  readonly #backstop: FinalizationRegistry<number>;
  /**
   * Per slot: the buffer while its job runs, its WeakRef afterwards, its tokens once its job
   * watched it that way, or undefined.
   */
  readonly #refs: (B | WeakRef<B> | TokenWatch | undefined)[] = [];
  /** Per slot: the bytes of the buffer while its slot holds it (what `#youngBytes` counts). */
  readonly #bytes: number[] = [];
  /** Bytes of the buffers held by their slots (made since the last turn, not released). */
  #youngBytes = 0;
  /** `#youngBytes` after the last reclaim of this job (the next one comes a threshold on). */
  #youngBase = 0;
  /**
   * The young bytes between two reclaims inside this job (0: the threshold): twice as many
   * after a reclaim that released less than half of what it watched (a job that builds live
   * tensors, a model's weights or a step's activations, would otherwise pay a collection of
   * 10-20 ms every threshold for nothing).
   */
  #jobThreshold = 0;
  /** Reclaims this tracker ran inside a job (tests). */
  inJobReclaims = 0;
  #tracked = 0;
  /** The range of slots tracked since the last turn (what aging looks at). */
  #youngLow = Infinity;
  #youngHigh = -1;
  #agingScheduled = false;
  #collectionScheduled = false;
  #settleScheduled = false;
  #bytesSinceCollection = 0;
  /**
   * An error met where nobody waits for it (a release or synchronisation of the backstop or of
   * a turn of the event loop): the device's next synchronisation throws it, so that a failed
   * kernel still surfaces when a result is read.
   */
  #unreported: unknown = undefined;

  /** A tracker releasing through `device`. */
  constructor(device: TrackedDevice) {
    this.#device = device;
    this.#backstop = new FinalizationRegistry((slot) => this.#collected(slot));
  }

  /** Buffers tracked (made and not released yet). */
  get size(): number {
    return this.#tracked;
  }

  /**
   * Starts tracking `buffer` of `bytes` bytes, whose allocation is in `slot`; reclaims at once
   * when the buffers this job made and did not release reach the threshold (see the module
   * documentation).
   */
  track(buffer: B, slot: number, bytes: number): void {
    this.#refs[slot] = buffer;
    this.#bytes[slot] = bytes;
    this.#youngBytes += bytes;
    this.#tracked++;
    if (slot < this.#youngLow) this.#youngLow = slot;
    if (slot > this.#youngHigh) this.#youngHigh = slot;
    if (!this.#agingScheduled) {
      this.#agingScheduled = true;
      onNextTurn(() => this.#age());
    }
    const threshold = this.#jobThreshold || this.#threshold();
    const watched = this.#youngBytes - this.#youngBase;
    if (watched >= threshold) {
      this.inJobReclaims++;
      if (this.reclaim() < watched / 2) this.#jobThreshold = 2 * threshold;
    }
  }

  /** Stops tracking the buffer in `slot`: it was released. */
  untrack(slot: number): void {
    const ref = this.#refs[slot];
    if (ref === undefined) return;
    if (ref instanceof WeakRef || ref instanceof TokenWatch) this.#backstop.unregister(ref);
    else {
      this.#youngBytes -= this.#bytes[slot];
      this.#youngBase = Math.min(this.#youngBase, this.#youngBytes);
    }
    this.#refs[slot] = undefined;
    this.#tracked--;
  }

  /** Bytes between two collections: {@linkcode RECLAIM_AFTER_BYTES} or a quarter of the limit. */
  #threshold(): number {
    return Math.min(RECLAIM_AFTER_BYTES, this.#device.memoryLimit() / 4);
  }

  /** Counts `bytes` allocated; past the threshold, the next turn runs {@linkcode reclaim}. */
  noteAllocated(bytes: number): void {
    this.#bytesSinceCollection += bytes;
    if (this.#bytesSinceCollection < this.#threshold() || this.#collectionScheduled) return;
    this.#collectionScheduled = true;
    onNextTurn(() => {
      this.#collectionScheduled = false;
      if (this.#device.isClosed()) return;
      if (this.reclaim() > 0) this.#settle();
    });
  }

  /**
   * Watches the buffers this job made through liveness tokens, collects garbage (when V8
   * allows) and releases the buffers that died (after the next synchronisation when queued
   * work still uses them). Returns the bytes released.
   */
  reclaim(): number {
    this.#bytesSinceCollection = 0;
    this.#watchYoung();
    // The next reclaim inside this job comes a threshold of new buffers on.
    this.#youngBase = this.#youngBytes;
    if (!collectGarbage()) return 0;
    let released = 0;
    const refs = this.#refs;
    for (let slot = 0; slot < refs.length; slot++) {
      const ref = refs[slot];
      const dead = ref instanceof WeakRef
        ? ref.deref() === undefined
        : ref instanceof TokenWatch && ref.collected();
      if (!dead) continue;
      this.untrack(slot);
      if (this.#quietly(() => this.#device.releaseSlot(slot))) released += this.#bytes[slot];
    }
    return released;
  }

  /**
   * The buffers made since the last turn and still held by their slots: each watched through
   * {@linkcode TOKENS_PER_BUFFER} liveness tokens and by the backstop instead (one left held
   * when the job's supply of tokens is spent).
   */
  #watchYoung(): void {
    this.#eachYoung((slot, buffer) => {
      const tokens = livenessTokens(buffer, TOKENS_PER_BUFFER);
      if (tokens.length === 0) return false;
      const watch = new TokenWatch(tokens);
      this.#backstop.register(buffer, slot, watch);
      this.#refs[slot] = watch;
      this.#youngBytes -= this.#bytes[slot];
      return true;
    });
  }

  /**
   * Calls `visit` with each slot made since the last turn that its buffer still holds (the
   * range aging looks at), in slot order, until `visit` returns false.
   */
  #eachYoung(visit: (slot: number, buffer: B) => boolean): void {
    const refs = this.#refs;
    const high = Math.min(this.#youngHigh, refs.length - 1);
    for (let slot = this.#youngLow; slot <= high; slot++) {
      const buffer = refs[slot];
      if (buffer === undefined || buffer instanceof WeakRef || buffer instanceof TokenWatch) {
        continue;
      }
      if (!visit(slot, buffer)) return;
    }
  }

  /** The error a release or synchronisation nobody waited for met, taken (once). */
  takeUnreported(): unknown {
    const e = this.#unreported;
    this.#unreported = undefined;
    return e;
  }

  /**
   * Forgets every buffer: the device closed and freed their memory (the backstop's callbacks
   * that may still come do nothing for a closed device).
   */
  clear(): void {
    this.#refs.length = 0;
    this.#tracked = 0;
    this.#youngBytes = 0;
    this.#youngBase = 0;
    this.#youngLow = Infinity;
    this.#youngHigh = -1;
  }

  /**
   * At a turn of the event loop: the buffers made since the last one and still unreleased
   * get their WeakRef, and the backstop watches them.
   */
  #age(): void {
    this.#agingScheduled = false;
    this.#eachYoung((slot, buffer) => {
      const ref = new WeakRef(buffer);
      this.#refs[slot] = ref;
      this.#backstop.register(buffer, slot, ref);
      return true;
    });
    this.#youngLow = Infinity;
    this.#youngHigh = -1;
    this.#youngBytes = 0;
    this.#youngBase = 0;
    this.#jobThreshold = 0;
  }

  /** The backstop's callback: the buffer in `slot` is garbage. */
  #collected(slot: number): void {
    const ref = this.#refs[slot];
    // Every other way out unregisters first; this only guards against a reused slot.
    if (!(ref instanceof TokenWatch) && (!(ref instanceof WeakRef) || ref.deref() !== undefined)) {
      return;
    }
    this.untrack(slot);
    if (this.#device.isClosed()) return;
    if (this.#quietly(() => this.#device.releaseSlot(slot))) this.#settle();
  }

  /**
   * When releases wait for queued work, the next turn synchronises (once for every buffer
   * found dead in one collection): garbage is found in batches, often just under the bounds
   * at which released memory is synchronised anyway, and would otherwise stay held.
   */
  #settle(): void {
    if (this.#settleScheduled || !this.#device.hasDeferred()) return;
    this.#settleScheduled = true;
    onNextTurn(() => {
      this.#settleScheduled = false;
      const device = this.#device;
      if (!device.isClosed() && device.hasDeferred()) this.#quietly(() => device.synchronize());
    });
  }

  #quietly(fn: () => boolean | void): boolean {
    try {
      return fn() !== false;
    } catch (e) {
      this.#unreported ??= e;
      return false;
    }
  }
}
