/**
 * What an open Ascend device owns, and its device memory: the DeviceState behind an
 * AscendDevice (libraries, context, stream, the caching allocator, allocations by slot,
 * in-flight and deferred frees, the workspace, prepared calls, the calls queued and their
 * deadlines). DeviceBuffer, one allocation of device memory, and the Allocation behind it are in
 * device_buffer.ts, which reaches this state only through its BufferHome interface.
 *
 * Lifetimes: a {@linkcode DeviceBuffer} is freed by `release()` (idempotent), by its device's
 * `close()`, or, as a backstop only, once it is garbage (reclaim.ts). Work that runAclnn
 * queued on the stream records every buffer it uses; releasing such a buffer before the
 * stream is synchronised defers the aclrtFree until after the next synchronisation, so the
 * device never reads freed memory.
 *
 * @module
 */

import { ACL_SUCCESS, AclrtMemMallocPolicy } from "./constants.ts";
import { CachingAllocator } from "./allocator.ts";
import { CallCache } from "./call_cache.ts";
import { BufferTracker } from "./reclaim.ts";
import { AclError, recentErrorMessage, unwrapAcl } from "../errors.ts";
import { deviceFailureMessage, LaunchLog } from "./launch_log.ts";
import { StreamWatch } from "./stream_watch.ts";
import type { WaiterSymbols, WaitOutcome } from "./stream_waiter.ts";
import { runtimeSymbols } from "./symbols/runtime.ts";
import {
  type Allocation,
  allocationOf,
  type BufferHome,
  DeviceBuffer,
  internalToken,
} from "./device_buffer.ts";

export {
  checkOwn,
  checkRange,
  DeviceBuffer,
  internalToken,
  registerDevice,
  rememberedGeometry,
  rememberGeometry,
} from "./device_buffer.ts";
import type { CannLibraries } from "./library.ts";

type Runtime = CannLibraries["runtime"];

/** The device whose context is current on this thread (null: unknown, set it again). */
let activeState: DeviceState | null = null;

/** Records that `state`'s context is current on this thread (null: unknown). */
export function setActiveState(state: DeviceState | null): void {
  activeState = state;
}

/** Forgets the current context if it is `state`'s or its device's (the device closed). */
export function forgetActiveState(state: DeviceState): void {
  if (activeState === state || activeState?.deviceId === state.deviceId) activeState = null;
}

/** Deferred frees that trigger a synchronisation (bounds memory held by released buffers). */
const MAX_DEFERRED_FREES = 256;
const MAX_DEFERRED_BYTES = 256 * 1024 * 1024;
/**
 * Launches queued since the last synchronisation that trigger one. A loop that never reads a
 * result would otherwise grow the stream's queue, and the set of buffers kept alive for it
 * (which the garbage-collection backstop cannot free), without bound.
 */
const MAX_QUEUED_LAUNCHES = 1024;

/**
 * Everything a device owns; DeviceBuffers reach it as their {@linkcode BufferHome}, the executor
 * through `ascendState`.
 */
export class DeviceState implements BufferHome {
  readonly libs: CannLibraries;
  readonly rt: Runtime;
  readonly deviceId: number;
  readonly name: string;
  context: Deno.PointerValue = null;
  stream: Deno.PointerValue = null;
  closed = false;
  /**
   * Allocations in use, by slot (not buffers: the backstop must still see garbage). An array,
   * not a Map, for the reason BufferTracker gives.
   */
  readonly allocations: (Allocation | undefined)[] = [];
  /** Slots of `allocations` free for reuse. */
  readonly freeSlots: number[] = [];
  /** Allocations in use (occupied slots). */
  liveAllocations = 0;
  /**
   * Synchronisations so far. An allocation whose `launch` equals it is used by work queued
   * since the last one: a result nobody references any more can be collected at once, and
   * its memory goes back to the allocator only after the synchronisation (see release()).
   */
  epoch = 0;
  /** The caching allocator (aclrtMalloc/aclrtFree underneath). */
  readonly allocator: CachingAllocator;
  /**
   * The device's DeviceBuffers: the garbage-collection backstop and reclaiming (reclaim.ts).
   * Nothing per buffer stays in it once the buffer is released.
   */
  readonly buffers: BufferTracker<DeviceBuffer>;
  /** Allocations released while in flight: freed after the next synchronisation. */
  readonly deferred: Allocation[] = [];
  /** Bytes in `deferred`. */
  deferredBytes = 0;
  /** Successful aclrtSetDevice calls, each released by one aclrtResetDevice at close. */
  deviceReferences = 0;
  /** Whether work has been queued since the last synchronisation. */
  queued = false;
  /**
   * The epochs whose synchronisation failed, with the status it returned: the work queued in
   * them is lost (a module refuses the backward of a forward queued then). One entry per
   * failure the caller was told of.
   */
  readonly failures: Map<number, number> = new Map();
  /** Operator launches queued since the last synchronisation. */
  queuedLaunches = 0;
  /** The calls launched, and those queued since the last synchronisation (launch_log.ts). */
  readonly launches: LaunchLog = new LaunchLog();
  /** Whether every launch synchronises (ASCEND_LAUNCH_BLOCKING), reporting its own failure. */
  launchBlocking = false;
  /** Deadlines of queued collectives, and a synchronisation that missed one (stream_watch.ts). */
  readonly watch: StreamWatch = new StreamWatch();
  /** aclrtGetSocName, read when the device opens (null: not exported by this runtime). */
  socName: string | null = null;
  /**
   * Native objects bound to this device that must go before its stream and memory (HCCL
   * communicators): closed first by AscendDevice.close().
   */
  readonly dependents: Set<{ close(): void }> = new Set();
  /** The process-wide record of this open device (see open_devices.ts), null once closed. */
  registration: string | null = null;
  /** The reusable operator workspace. */
  workspace: DeviceBuffer | null = null;
  /** Out-params reused by every two-phase call of this device (pinned here). */
  readonly workspaceSizeOut: BigUint64Array = new BigUint64Array(1);
  readonly executorOut: BigUint64Array = new BigUint64Array(1);
  /** Prepared calls (descriptors, repeatable executors) by signature. */
  readonly calls: CallCache;

  constructor(libs: CannLibraries, deviceId: number) {
    this.libs = libs;
    this.rt = libs.runtime;
    this.deviceId = deviceId;
    this.name = `npu:${deviceId}`;
    this.buffers = new BufferTracker<DeviceBuffer>({
      isClosed: () => this.closed,
      memoryLimit: () => this.allocator.memoryLimit,
      releaseSlot: (slot) => {
        const allocation = this.allocations[slot];
        if (allocation === undefined) return false;
        this.release(allocation);
        return true;
      },
      hasDeferred: () => this.deferred.length > 0,
      synchronize: () => this.synchronize(),
    });
    this.calls = new CallCache({
      destroyExecutor: (executor) => libs.nnopbase.aclDestroyAclOpExecutor(executor),
      clearError: () => void recentErrorMessage(libs.runtime),
    });
    this.allocator = new CachingAllocator({
      malloc: (bytes) => {
        this.activate();
        const out = this.mallocOut;
        const status = this.rt.aclrtMalloc(out, BigInt(bytes), AclrtMemMallocPolicy.HUGE_FIRST);
        unwrapAcl(status, `aclrtMalloc(${bytes} bytes on ${this.name})`, this.rt);
        return Deno.UnsafePointer.create(out[0])!;
      },
      free: (pointer, bytes) => {
        this.activate();
        unwrapAcl(this.rt.aclrtFree(pointer), `aclrtFree(${bytes} bytes on ${this.name})`, this.rt);
      },
      reclaim: () => {
        this.buffers.reclaim();
        if (this.queued || this.deferred.length > 0) this.synchronize();
      },
    }, this.name);
  }

  /** aclrtMalloc's out-param (pinned here). */
  readonly mallocOut: BigUint64Array = new BigUint64Array(1);

  /** Throws a clear error once the device is closed: no call ever reaches a closed device. */
  check(what: string): void {
    if (this.closed) {
      throw new AclError(
        100000,
        `${what}: AscendDevice ${this.name} is closed; open a new one with openAscend()`,
      );
    }
    if (this.watch.held) throw this.watch.heldError(what, this.name);
  }

  /** Makes this device's context current on the calling thread (cheap when it already is). */
  activate(): void {
    if (activeState === this) return;
    if (this.context !== null) {
      unwrapAcl(
        this.rt.aclrtSetCurrentContext(this.context),
        `aclrtSetCurrentContext(${this.name})`,
        this.rt,
      );
    } else {
      unwrapAcl(this.rt.aclrtSetDevice(this.deviceId), `aclrtSetDevice(${this.deviceId})`, this.rt);
      this.deviceReferences++;
    }
    activeState = this;
  }

  allocate(byteLength: number): Allocation {
    if (byteLength === 0) return { slot: -1, block: null, pointer: null, byteLength, launch: -1 };
    const block = this.allocator.allocate(byteLength);
    const slot = this.freeSlots.pop() ?? this.allocations.length;
    const allocation = { slot, block, pointer: block.pointer, byteLength, launch: -1 };
    this.allocations[slot] = allocation;
    this.liveAllocations++;
    this.buffers.noteAllocated(block.size);
    return allocation;
  }

  /** Gives one allocation back to the allocator now (no-op for empty or already freed ones). */
  free(allocation: Allocation): void {
    const slot = allocation.slot;
    if (slot < 0 || this.allocations[slot] !== allocation) return;
    this.allocations[slot] = undefined;
    this.freeSlots.push(slot);
    this.liveAllocations--;
    this.allocator.release(allocation.block!);
  }

  /** Whether work queued since the last synchronisation uses `allocation`. */
  inFlight(allocation: Allocation): boolean {
    return allocation.launch === this.epoch;
  }

  /** Whether work queued since the last synchronisation uses `buffer`'s memory. */
  bufferInFlight(buffer: DeviceBuffer): boolean {
    return this.inFlight(allocationOf(buffer));
  }

  /** Waits for the stream, then frees what was released meanwhile. */
  synchronize(): void {
    // A synchronisation that missed its deadline (stream_watch.ts) and has returned since.
    const late = this.watch.takeLate("synchronize", this.name);
    if (late !== undefined) this.settle(late, false);
    this.activate();
    this.settle(this.watch.synchronize(this), true);
  }

  /**
   * The bookkeeping of a drained stream (`outcome` of its synchronisation), throwing its
   * failure when `report`.
   */
  settle(outcome: WaitOutcome, report: boolean): void {
    const { status, nativeMessage } = outcome;
    // The work has finished (or failed): nothing on the stream uses these buffers, or the
    // executors and descriptors of retired cache entries, any more.
    this.queued = false;
    this.queuedLaunches = 0;
    if (status !== ACL_SUCCESS) this.failures.set(this.epoch, status);
    this.epoch++;
    const window = this.launches.take();
    const unreported = this.buffers.takeUnreported();
    this.calls.destroyRetired();
    const pending = this.deferred.splice(0);
    this.deferredBytes = 0;
    let firstError: unknown;
    for (const a of pending) {
      try {
        this.free(a);
      } catch (e) {
        firstError ??= e;
      }
    }
    if (!report) return;
    if (status !== ACL_SUCCESS) {
      throw new AclError(
        status,
        deviceFailureMessage(this.name, window, nativeMessage, this.launchBlocking),
        { nativeMessage },
      );
    }
    if (firstError) throw firstError;
    if (unreported !== undefined) throw unreported;
  }

  /** aclrtSynchronizeStream on this thread, and the runtime's text when it fails. */
  syncHere(): WaitOutcome {
    const status = this.rt.aclrtSynchronizeStream(this.stream);
    return {
      status,
      nativeMessage: status === ACL_SUCCESS ? undefined : recentErrorMessage(this.rt),
    };
  }

  /** The runtime library and the symbols a waiting thread opens it with (stream_waiter.ts). */
  waiterLibrary(): { path: string; symbols: WaiterSymbols } | null {
    const opened = this.libs.report.libraries.find((l) => l.role === "runtime");
    if (opened === undefined) return null;
    const { aclrtSetCurrentContext, aclrtSynchronizeStream, aclGetRecentErrMsg } = runtimeSymbols;
    return {
      path: opened.path,
      symbols: { aclrtSetCurrentContext, aclrtSynchronizeStream, aclGetRecentErrMsg },
    };
  }

  /**
   * Records a queued launch of `op` and the buffers it uses (kept alive until
   * synchronisation); synchronises every MAX_QUEUED_LAUNCHES launches to bound the queue.
   */
  noteLaunch(buffers: Iterable<DeviceBuffer>, op: string): void {
    for (const b of buffers) allocationOf(b).launch = this.epoch;
    this.queued = true;
    this.launches.record(op);
    if (++this.queuedLaunches >= MAX_QUEUED_LAUNCHES) this.synchronize();
  }

  /** With ASCEND_LAUNCH_BLOCKING, waits for the call just launched: its failure is its own. */
  afterLaunch(): void {
    if (this.launchBlocking) this.synchronize();
  }

  /**
   * After a launch that failed (a stream in abort state refuses tasks): drains the stream and
   * returns the failure of the work queued before, if any, so that it is reported with the
   * launch's error (as its cause) and the next call starts clean.
   */
  pendingFailure(): unknown {
    if (!this.queued) return undefined;
    try {
      this.synchronize();
      return undefined;
    } catch (e) {
      return e;
    }
  }

  /**
   * Frees now, or after the next synchronisation when queued work may still use it. When
   * deferred frees pile up (a loop that never reads a result), synchronises to bound them.
   */
  release(allocation: Allocation): void {
    if (this.closed) return;
    if (!this.inFlight(allocation)) {
      this.free(allocation);
      return;
    }
    this.deferred.push(allocation);
    this.deferredBytes += allocation.byteLength;
    if (
      this.deferred.length >= MAX_DEFERRED_FREES || this.deferredBytes >= MAX_DEFERRED_BYTES
    ) {
      this.synchronize();
    }
  }

  /** A workspace of at least `size` bytes; grown (never shrunk) when too small. */
  workspaceFor(size: bigint): DeviceBuffer {
    const current = this.workspace;
    if (current !== null && BigInt(current.byteLength) >= size) return current;
    // Grow by at least 1.5x to avoid a reallocation per slightly larger call.
    const wanted = Number(size);
    const grown = current === null ? wanted : Math.max(wanted, Math.ceil(current.byteLength * 1.5));
    const next = new DeviceBuffer(this, this.allocate(grown), internalToken);
    this.workspace = next;
    current?.release(); // deferred if queued work still uses it
    return next;
  }
}
