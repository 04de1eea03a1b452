/**
 * Per-device cache of prepared aclnn calls, so that repeating a call with the same shapes,
 * dtypes and scalars costs what the C sequence costs, not a full rebuild.
 *
 * An entry holds, for one call signature (operator, every tensor's dtype/shape/strides/offset/
 * storage size, every scalar and mask):
 * - the aclTensor / aclBoolArray descriptors, created once; before each reuse only the storage
 *   addresses that changed are refreshed;
 * - when CANN allows it, a repeatable executor (aclSetAclOpExecutorRepeatable right after
 *   phase 1), so phase 1 is skipped entirely and phase 2 runs on the same executor, with new
 *   addresses set through aclSetInputTensorAddr / aclSetOutputTensorAddr. CANN refuses to make
 *   some executors repeatable (561000: ops that copy host data to the device, or a phase 1
 *   answered from its own executor cache; opbase acl_op_api.cpp SetRepeatable); such entries
 *   keep their descriptors (refreshed with aclSetRawTensorAddr before phase 1) and run both
 *   phases each time.
 *
 * The cache is bounded (least recently used entries are retired) and emptied when the device
 * closes. A retired entry may still be referenced by work queued on the stream, so its native
 * objects are destroyed after the next synchronisation, executor first (it points at the
 * descriptors), then the descriptors.
 *
 * @module
 */

import type {
  AclBoolArrayDescriptor,
  AclIntArrayDescriptor,
  AclTensorDescriptor,
} from "./acl_tensor.ts";

/** A native argument of an aclnn call. */
export type NativeArg = Deno.PointerValue | boolean | bigint | number;

/** One prepared call signature. */
export interface CachedCall {
  /** The signature the entry was built for. */
  readonly key: string;
  /**
   * The descriptors of the call (tensors, bool and int arrays) and the buffers of its string
   * arguments (whose addresses phase 1 may read again), destroyed with the entry.
   */
  readonly descriptors: readonly (
    | AclTensorDescriptor
    | AclBoolArrayDescriptor
    | AclIntArrayDescriptor
    | { destroy(): void }
  )[];
  /** The phase-1 arguments (handles and scalars), followed by the two out-param slots. */
  readonly native: NativeArg[];
  /**
   * Per tensor argument of the call (by argument position): its descriptor, whether it is an
   * output, its index among the inputs or among the outputs, and the storage address it was
   * last given (compared by identity: DeviceBuffer pointers are stable objects).
   */
  readonly tensors: readonly CachedTensorArg[];
  /** The repeatable executor, or null when CANN would not make it repeatable. */
  readonly executor: Deno.PointerValue;
  /** Phase 1's workspace size for this signature. */
  readonly workspaceSize: bigint;
  /** Use stamp for the least-recently-used order (kept by the cache). */
  lastUse: number;
}

/** One tensor argument of a {@linkcode CachedCall}. */
export interface CachedTensorArg {
  /** Position in the call's argument list. */
  readonly position: number;
  /** The descriptor passed at that position. */
  readonly descriptor: AclTensorDescriptor;
  /** Whether the argument is an output (aclSetOutputTensorAddr) or an input. */
  readonly output: boolean;
  /** Index among the inputs or among the outputs, null slots counted (as CANN counts). */
  readonly index: bigint;
  /** The storage address the descriptor currently holds. */
  address: Deno.PointerValue;
}

/** What the cache needs to free an entry's native objects. */
export interface CallCacheNatives {
  /** `aclDestroyAclOpExecutor`. */
  destroyExecutor(executor: Deno.PointerObject): number;
  /** Reads (and so clears) the native error text after a failed destroy. */
  clearError(): void;
}

/** Entries kept per device before the least recently used one is retired. */
export const CALL_CACHE_CAPACITY = 64;

/** A bounded LRU of {@linkcode CachedCall}s. */
export class CallCache {
  readonly #entries = new Map<string, CachedCall>();
  #clock = 0;
  readonly #retired: CachedCall[] = [];
  readonly #natives: CallCacheNatives;
  readonly #capacity: number;

  /** An empty cache that frees entries through `natives`. */
  constructor(natives: CallCacheNatives, capacity: number = CALL_CACHE_CAPACITY) {
    this.#natives = natives;
    this.#capacity = capacity;
  }

  /** Live entries. */
  get size(): number {
    return this.#entries.size;
  }

  /** Entries retired but not yet destroyed (waiting for a synchronisation). */
  get retiredCount(): number {
    return this.#retired.length;
  }

  /** The entry for `key`, marked most recently used. */
  get(key: string): CachedCall | undefined {
    const entry = this.#entries.get(key);
    // A use stamp instead of re-inserting into the Map: this runs on every call.
    if (entry !== undefined) entry.lastUse = ++this.#clock;
    return entry;
  }

  /** Adds an entry, retiring the least recently used one when the cache is full. */
  add(entry: CachedCall): void {
    this.#entries.set(entry.key, entry);
    entry.lastUse = ++this.#clock;
    if (this.#entries.size > this.#capacity) {
      let oldest: CachedCall | undefined;
      for (const e of this.#entries.values()) {
        if (oldest === undefined || e.lastUse < oldest.lastUse) oldest = e;
      }
      this.retire(oldest!.key);
    }
  }

  /** Takes `key` out of use; its native objects go after the next synchronisation. */
  retire(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#retired.push(entry);
  }

  /**
   * Takes `key` out of use and destroys its native objects now: only for an entry no queued
   * work can use (one whose first launch never happened).
   */
  discard(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#destroy(entry);
  }

  /** Retires every entry. */
  retireAll(): void {
    for (const key of [...this.#entries.keys()]) this.retire(key);
  }

  /** Destroys the retired entries: call only when no queued work can still use them. */
  destroyRetired(): void {
    for (const entry of this.#retired.splice(0)) this.#destroy(entry);
  }

  #destroy(entry: CachedCall): void {
    if (entry.executor !== null && this.#natives.destroyExecutor(entry.executor) !== 0) {
      this.#natives.clearError();
    }
    for (const d of entry.descriptors) d.destroy();
  }
}
