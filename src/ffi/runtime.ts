/**
 * The Ascend device: ACL initialisation, device binding, one stream, device memory
 * (aclrtMalloc/Free/Memcpy) and lifetimes.
 *
 * Lifetimes: a {@linkcode DeviceBuffer} is freed by `release()` (idempotent), by its device's
 * `close()`, or, as a backstop only, by a FinalizationRegistry once it is garbage. Work that
 * runAclnn queued on the stream records every buffer it uses; releasing such a buffer before
 * the stream is synchronised defers the aclrtFree until after the next synchronisation, so the
 * device never reads freed memory.
 *
 * aclFinalize policy: ACL is initialised once per process (a repeated aclInit, 100002, is
 * tolerated) and is NOT finalised when a device closes: releases before CANN 8.x cannot call
 * aclInit again after aclFinalize, and other devices may still be open. `finalizeAscend()`
 * finalises explicitly once every device is closed, and only when this package's aclInit is
 * the one that initialised ACL: aclFinalize zeroes the process-wide reference count whatever
 * it was (hicann/runtime src/acl/aclrt_impl/acl.cpp aclFinalizeInternal), so finalising after
 * a 100002 would pull ACL from under whoever initialised it first.
 *
 * Device references: aclrtSetDevice counts per process and device, aclrtResetDevice releases
 * one (hicann/runtime runtime.cc PrimaryContextRetain/Release; an extra reset is 507007). Every
 * successful aclrtSetDevice this package makes is matched by one aclrtResetDevice at close.
 *
 * @module
 */

import type { AcceleratorDevice, DeviceStorage } from "../tensor/device.ts";
import { trackStorage } from "../tensor/scope.ts";
import { deriveOppPath } from "./opp_path.ts";
import {
  ACL_ERROR_REPEAT_INITIALIZE,
  ACL_SUCCESS,
  AclrtMemcpyKind,
  AclrtMemMallocPolicy,
} from "./constants.ts";
import { type AllocatorStats, type Block, CachingAllocator } from "./allocator.ts";
import { CallCache } from "./call_cache.ts";
import { openDevicesInProcess, registerOpenDevice, unregisterOpenDevice } from "./open_devices.ts";
import { collectGarbage, onNextTurn, RECLAIM_AFTER_BYTES } from "./reclaim.ts";
import { AclError, recentErrorMessage, unwrapAcl } from "./errors.ts";
import { type CannLibraries, type LibraryOptions, openCannLibraries } from "./library.ts";

/** What {@linkcode AscendDevice.memory} reports (bytes and counts). */
export interface DeviceMemoryStats extends AllocatorStats {
  /** DeviceBuffers alive (each tensor's storage; views share one). */
  readonly liveBuffers: number;
  /** Buffers released while queued work used them, freed at the next synchronisation. */
  readonly pendingReleases: number;
  /** Operator launches queued since the last synchronisation (synchronised at 1024). */
  readonly queuedLaunches: number;
  /** Prepared calls kept for repeated signatures (at most 64). */
  readonly cachedCalls: number;
}

/** Options of {@linkcode openAscend}. */
export interface OpenAscendOptions extends LibraryOptions {
  /** The NPU to use (aclrtSetDevice id). Default 0. */
  deviceId?: number;
  /**
   * Bytes of device memory this device may hold (in use plus cached). Past it, allocation
   * fails with an out-of-memory AclError giving the allocator's figures. Default: no limit
   * (aclrtMalloc's own failure is reported the same way).
   */
  memoryLimit?: number;
}

type Runtime = CannLibraries["runtime"];

/**
 * Runtimes (per library set) on which this process has called aclInit, and whether that call
 * initialised ACL (0) or found it initialised by someone else (100002).
 */
const initialised = new WeakMap<Runtime, { owner: boolean; aclnn: boolean }>();
/** Open devices, for finalizeAscend(). */
const openDevices = new Set<DeviceState>();
/** The device whose context is current on this thread (null: unknown, set it again). */
let activeState: DeviceState | null = null;

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
 * The memory behind one DeviceBuffer, shared with the backstop registry: an allocator block
 * (null for 0 bytes) and the bytes asked for. The id is unique per device.
 */
interface Allocation {
  readonly id: number;
  readonly block: Block | null;
  readonly pointer: Deno.PointerValue;
  readonly byteLength: number;
}

/** Everything a device owns; DeviceBuffers and the executor reach it through `ascendState`. */
export class DeviceState {
  readonly libs: CannLibraries;
  readonly rt: Runtime;
  readonly deviceId: number;
  readonly name: string;
  context: Deno.PointerValue = null;
  stream: Deno.PointerValue = null;
  closed = false;
  /** Allocations in use by id (ids, not buffers: the backstop must still see garbage). */
  readonly live: Map<number, Allocation> = new Map();
  /**
   * Allocations used by work queued since the last synchronisation. Ids, not DeviceBuffers:
   * a result nobody references any more can be collected at once, and its memory goes back
   * to the allocator only after the synchronisation (see release()).
   */
  readonly inFlight: Set<number> = new Set();
  /** The caching allocator (aclrtMalloc/aclrtFree underneath). */
  readonly allocator: CachingAllocator;
  /** Live DeviceBuffers, weakly, by allocation id: reclaim() releases those that died. */
  readonly buffers: Map<number, WeakRef<DeviceBuffer>> = new Map();
  /** Bytes allocated since the last collection this device asked for. */
  bytesSinceCollection = 0;
  /** Whether a collection is scheduled for the next turn of the event loop. */
  collectionScheduled = false;
  /** Allocations released while in flight: freed after the next synchronisation. */
  readonly deferred: Allocation[] = [];
  /** Bytes in `deferred`. */
  deferredBytes = 0;
  /** Successful aclrtSetDevice calls, each released by one aclrtResetDevice at close. */
  deviceReferences = 0;
  /** Whether work has been queued since the last synchronisation. */
  queued = false;
  /** Operator launches queued since the last synchronisation. */
  queuedLaunches = 0;
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
  nextId = 1;

  constructor(libs: CannLibraries, deviceId: number) {
    this.libs = libs;
    this.rt = libs.runtime;
    this.deviceId = deviceId;
    this.name = `npu:${deviceId}`;
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
        this.reclaim();
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
    const id = this.nextId++;
    if (byteLength === 0) return { id, block: null, pointer: null, byteLength };
    const block = this.allocator.allocate(byteLength);
    const allocation = { id, block, pointer: block.pointer, byteLength };
    this.live.set(id, allocation);
    this.bytesSinceCollection += block.size;
    if (this.bytesSinceCollection >= RECLAIM_AFTER_BYTES && !this.collectionScheduled) {
      this.collectionScheduled = true;
      onNextTurn(() => {
        this.collectionScheduled = false;
        if (!this.closed) this.reclaim();
      });
    }
    return allocation;
  }

  /**
   * Collects garbage (when V8 allows) and releases the buffers that died: the memory of
   * results nobody references goes back to the allocator (after the next synchronisation
   * when queued work still uses it). Returns how many buffers were released.
   */
  reclaim(): number {
    this.bytesSinceCollection = 0;
    if (!collectGarbage()) return 0;
    let released = 0;
    for (const [id, ref] of this.buffers) {
      if (ref.deref() !== undefined) continue;
      this.buffers.delete(id);
      const allocation = this.live.get(id);
      if (allocation !== undefined) {
        this.release(allocation);
        released++;
      }
    }
    return released;
  }

  /** Gives one allocation back to the allocator now (no-op for empty or already freed ones). */
  free(allocation: Allocation): void {
    this.buffers.delete(allocation.id);
    if (!this.live.delete(allocation.id) || allocation.block === null) return;
    this.allocator.release(allocation.block);
  }

  /** Waits for the stream, then frees what was released meanwhile. */
  synchronize(): void {
    this.activate();
    const status = this.rt.aclrtSynchronizeStream(this.stream);
    // The work has finished (or failed): nothing on the stream uses these buffers, or the
    // executors and descriptors of retired cache entries, any more.
    this.queued = false;
    this.queuedLaunches = 0;
    this.inFlight.clear();
    const nativeMessage = status === ACL_SUCCESS ? undefined : recentErrorMessage(this.rt);
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
    if (status !== ACL_SUCCESS) {
      throw new AclError(
        status,
        `aclrtSynchronizeStream(${this.name}) failed${nativeMessage ? `: ${nativeMessage}` : ""}`,
        { nativeMessage },
      );
    }
    if (firstError) throw firstError;
  }

  /**
   * Records a queued launch and the buffers it uses (kept alive until synchronisation);
   * synchronises every MAX_QUEUED_LAUNCHES launches to bound the queue.
   */
  noteLaunch(buffers: Iterable<DeviceBuffer>): void {
    for (const b of buffers) this.inFlight.add(bufferAllocation(b).id);
    this.queued = true;
    if (++this.queuedLaunches >= MAX_QUEUED_LAUNCHES) this.synchronize();
  }

  /**
   * Frees now, or after the next synchronisation when queued work may still use it. When
   * deferred frees pile up (a loop that never reads a result), synchronises to bound them.
   */
  release(allocation: Allocation): void {
    if (this.closed) return;
    if (!this.inFlight.has(allocation.id)) {
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

/**
 * Backstop: gives back allocations whose DeviceBuffer became garbage without release() (after
 * the next synchronisation when queued work still uses them).
 */
const backstop = new FinalizationRegistry<{ state: DeviceState; allocation: Allocation }>(
  ({ state, allocation }) => {
    if (state.closed) return;
    try {
      state.release(allocation);
    } catch {
      // A finaliser has nobody to report to; close() frees whatever is left.
    }
  },
);

const internalToken = Symbol("DeviceBuffer.internal");
let bufferAllocation!: (buffer: DeviceBuffer) => Allocation;

/**
 * Device memory from the device's caching allocator (no allocation for 0 bytes: its pointer
 * is NULL). Tensors on an NPU hold one as their `storage`.
 *
 * @example
 * ```ts
 * import { openAscend, Tensor } from "@aclnn/norm";
 * import { DeviceBuffer } from "@aclnn/norm/ascend";
 * try {
 *   using npu = openAscend();
 *   const t = Tensor.zeros([8], "float32", npu);
 *   const buffer = t.storage as DeviceBuffer;
 *   console.log(buffer instanceof DeviceBuffer, buffer.byteLength); // true 32
 *   t.dispose();
 *   console.log(buffer.released); // true
 * } catch (e) {
 *   console.log((e as Error).message.split("\n")[0]); // no CANN here
 * }
 * ```
 */
export class DeviceBuffer implements DeviceStorage {
  /** The device that owns this memory. */
  readonly device: AscendDevice;
  /** Size in bytes. */
  readonly byteLength: number;
  readonly #state: DeviceState;
  readonly #allocation: Allocation;
  #released = false;

  static {
    bufferAllocation = (buffer) => buffer.#allocation;
  }

  /** Not for users: buffers come from {@linkcode AscendDevice.allocate}. */
  constructor(state: unknown, allocation: unknown, token: symbol) {
    if (token !== internalToken || !(state instanceof DeviceState)) {
      throw new TypeError("DeviceBuffer: use AscendDevice.allocate()");
    }
    this.#state = state;
    this.#allocation = allocation as Allocation;
    this.byteLength = this.#allocation.byteLength;
    this.device = deviceOf(state);
    if (this.#allocation.pointer !== null) {
      backstop.register(this, { state, allocation: this.#allocation }, this);
      state.buffers.set(this.#allocation.id, new WeakRef(this));
    }
  }

  /** Whether the memory has been released (explicitly or by closing the device). */
  get released(): boolean {
    return this.#released || this.#state.closed;
  }

  /**
   * The device address (NULL for a 0-byte buffer). Throws once released: native code must
   * never see a freed address.
   */
  get pointer(): Deno.PointerValue {
    if (this.released) {
      this.#state.check("DeviceBuffer.pointer");
      throw new AclError(100000, `DeviceBuffer.pointer: the buffer was released`);
    }
    return this.#allocation.pointer;
  }

  /**
   * Returns the memory to the device (idempotent). If work queued on the stream may still use
   * it, the aclrtFree happens right after the next synchronisation instead.
   */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    backstop.unregister(this);
    this.#state.release(this.#allocation);
  }

  /** Same as {@linkcode DeviceBuffer.release}. */
  [Symbol.dispose](): void {
    this.release();
  }
}

const devices = new WeakMap<DeviceState, AscendDevice>();
function deviceOf(state: DeviceState): AscendDevice {
  const device = devices.get(state);
  if (!device) throw new TypeError("DeviceBuffer: unknown device");
  return device;
}

let deviceState!: (device: AscendDevice) => DeviceState;

function checkOwn(device: AscendDevice, storage: DeviceStorage, what: string): DeviceBuffer {
  if (!(storage instanceof DeviceBuffer) || storage.device !== device) {
    throw new AclError(100000, `${what}: the storage does not belong to ${device.name}`);
  }
  if (storage.released) throw new AclError(100000, `${what}: the buffer was released`);
  return storage;
}

function checkRange(buffer: DeviceBuffer, byteOffset: number, length: number, what: string) {
  if (
    !Number.isSafeInteger(byteOffset) || byteOffset < 0 || byteOffset + length > buffer.byteLength
  ) {
    throw new RangeError(
      `${what}: bytes [${byteOffset}, ${
        byteOffset + length
      }) exceed the ${buffer.byteLength}-byte buffer`,
    );
  }
}

/**
 * An Ascend NPU opened with {@linkcode openAscend}: one device, one stream, device memory.
 * Close it with `close()` or a `using` declaration.
 *
 * @example
 * ```ts
 * import { AscendDevice, openAscend, Tensor } from "@aclnn/norm";
 * try {
 *   using npu = openAscend();
 *   console.log(npu instanceof AscendDevice, npu.name, npu.socName); // true npu:0 Ascend...
 *   const x = Tensor.ones([4], "float32", npu);
 *   console.log(x.toArray()); // [1, 1, 1, 1] (reading synchronises the stream)
 * } catch (e) {
 *   console.log((e as Error).message.split("\n")[0]); // no CANN here
 * }
 * ```
 */
export class AscendDevice implements AcceleratorDevice, Disposable {
  /** Always `"npu"`. */
  readonly kind: "npu" = "npu";
  /** The device id passed to aclrtSetDevice. */
  readonly id: number;
  /** `npu:<id>`. */
  readonly name: string;
  readonly #state: DeviceState;

  static {
    deviceState = (device) => device.#state;
  }

  /** Not for users: devices come from {@linkcode openAscend}. */
  constructor(state: unknown, token: symbol) {
    if (token !== internalToken || !(state instanceof DeviceState)) {
      throw new TypeError("AscendDevice: use openAscend()");
    }
    this.#state = state;
    this.id = state.deviceId;
    this.name = state.name;
    devices.set(state, this);
  }

  /** Whether {@linkcode AscendDevice.close} has been called. */
  get closed(): boolean {
    return this.#state.closed;
  }

  /** Where the CANN libraries were loaded from (null: the loader's path). */
  get libDir(): string | null {
    return this.#state.libs.dir;
  }

  /**
   * The SoC name from aclrtGetSocName (e.g. `Ascend910B4`), or null when the runtime does not
   * export it. Read when the device opens: operators' dtype support and the meaning of
   * BatchNorm's saveInvstd depend on the SoC family.
   */
  get socName(): string | null {
    return this.#state.socName;
  }

  /**
   * The device-memory figures of this device's caching allocator, as PyTorch's
   * `torch.npu.memory_allocated` / `memory_reserved` report them: blocks and bytes in use by
   * live buffers (tensors), bytes cached for reuse, the peak, and the native allocations.
   *
   * @example
   * ```ts
   * import { openAscend, Tensor } from "@aclnn/norm";
   * try {
   *   using npu = openAscend();
   *   const t = Tensor.zeros([1024], "float32", npu);
   *   console.log(npu.memory().bytesInUse); // 4096
   *   t.dispose();
   *   console.log(npu.memory().bytesCached); // 4096: kept for the next allocation
   *   npu.emptyCache();
   * } catch (e) {
   *   console.log((e as Error).message.split("\n")[0]); // no CANN here
   * }
   * ```
   */
  memory(): DeviceMemoryStats {
    const state = this.#state;
    return {
      ...state.allocator.stats(),
      liveBuffers: state.live.size,
      pendingReleases: state.deferred.length,
      queuedLaunches: state.queuedLaunches,
      cachedCalls: state.calls.size,
    };
  }

  /**
   * Gives every cached (free) block back to the device with aclrtFree, after waiting for
   * queued work. Memory held by live tensors stays.
   */
  emptyCache(): void {
    const state = this.#state;
    state.check("emptyCache");
    state.synchronize();
    state.allocator.emptyCache();
  }

  /** Makes `memory().peakBytesInUse` the current in-use figure. */
  resetPeakMemory(): void {
    this.#state.allocator.resetPeak();
  }

  /**
   * Limits the bytes this device may hold (in use plus cached): past it an allocation fails
   * with an out-of-memory AclError that gives the allocator's figures, before the device runs
   * dry. `Infinity` removes the limit (the default).
   */
  setMemoryLimit(bytes: number): void {
    if (!(bytes > 0)) throw new RangeError(`setMemoryLimit: ${bytes} must be > 0 bytes`);
    this.#state.allocator.setMemoryLimit(bytes);
  }

  /** Allocates `byteLength` bytes (aclrtMalloc, HUGE_FIRST); 0 bytes allocates nothing. */
  allocate(byteLength: number): DeviceBuffer {
    const state = this.#state;
    state.check("allocate");
    if (!Number.isSafeInteger(byteLength) || byteLength < 0) {
      throw new RangeError(`allocate: byteLength ${byteLength} must be an integer >= 0`);
    }
    const buffer = new DeviceBuffer(state, state.allocate(byteLength), internalToken);
    trackStorage(buffer); // freed by the innermost tidy() scope unless returned from it
    return buffer;
  }

  /**
   * Copies `src` into device memory at `byteOffset` (aclrtMemcpy host-to-device). Waits first
   * when queued work uses the buffer, so the copy cannot overtake it.
   */
  upload(dst: DeviceStorage, src: Uint8Array, byteOffset: number): void {
    const state = this.#state;
    state.check("upload");
    const buffer = checkOwn(this, dst, "upload");
    checkRange(buffer, byteOffset, src.byteLength, "upload");
    if (src.byteLength === 0) return;
    if (state.inFlight.has(bufferAllocation(buffer).id)) state.synchronize();
    state.activate();
    const status = state.rt.aclrtMemcpy(
      Deno.UnsafePointer.offset(buffer.pointer!, byteOffset),
      BigInt(buffer.byteLength - byteOffset),
      Deno.UnsafePointer.of(src as Uint8Array<ArrayBuffer>),
      BigInt(src.byteLength),
      AclrtMemcpyKind.HOST_TO_DEVICE,
    );
    unwrapAcl(status, `aclrtMemcpy(host to ${this.name}, ${src.byteLength} bytes)`, state.rt);
  }

  /**
   * Sets every byte of `dst` to `byte` with aclrtMemset (synchronous, device side). Waits first
   * when queued work uses the buffer, since aclrtMemset does not order itself with the stream.
   */
  fill(dst: DeviceStorage, byte: number): void {
    const state = this.#state;
    state.check("fill");
    const buffer = checkOwn(this, dst, "fill");
    if (buffer.byteLength === 0) return;
    if (state.inFlight.has(bufferAllocation(buffer).id)) state.synchronize();
    state.activate();
    const size = BigInt(buffer.byteLength);
    const status = state.rt.aclrtMemset(buffer.pointer, size, byte & 0xff, size);
    unwrapAcl(status, `aclrtMemset(${this.name}, ${buffer.byteLength} bytes)`, state.rt);
  }

  /** Waits for queued work (aclrtSynchronizeStream), then copies device bytes into `dst`. */
  download(src: DeviceStorage, dst: Uint8Array, byteOffset: number): void {
    const state = this.#state;
    state.check("download");
    const buffer = checkOwn(this, src, "download");
    checkRange(buffer, byteOffset, dst.byteLength, "download");
    state.synchronize();
    if (dst.byteLength === 0) return;
    const status = state.rt.aclrtMemcpy(
      Deno.UnsafePointer.of(dst as Uint8Array<ArrayBuffer>),
      BigInt(dst.byteLength),
      Deno.UnsafePointer.offset(buffer.pointer!, byteOffset),
      BigInt(dst.byteLength),
      AclrtMemcpyKind.DEVICE_TO_HOST,
    );
    unwrapAcl(status, `aclrtMemcpy(${this.name} to host, ${dst.byteLength} bytes)`, state.rt);
  }

  /** Waits until the work queued on this device's stream has finished. */
  synchronize(): void {
    this.#state.check("synchronize");
    this.#state.synchronize();
  }

  /**
   * Synchronises, frees the workspace and every buffer still allocated, destroys the stream and
   * resets the device. Idempotent; tensors on this device are unusable afterwards.
   */
  close(): void {
    const state = this.#state;
    if (state.closed) return;
    const errors: unknown[] = [];
    const attempt = (fn: () => void) => {
      try {
        fn();
      } catch (e) {
        errors.push(e);
      }
    };
    state.calls.retireAll();
    attempt(() => state.synchronize());
    for (const dependent of [...state.dependents]) attempt(() => dependent.close());
    state.dependents.clear();
    attempt(() => state.calls.destroyRetired());
    attempt(() => state.workspace?.release());
    state.workspace = null;
    state.inFlight.clear();
    for (const a of [...state.deferred.splice(0), ...state.live.values()]) {
      attempt(() => state.free(a));
    }
    // Everything is back in the cache now: give it all to the device.
    attempt(() => state.allocator.emptyCache());
    attempt(() => {
      state.activate();
      if (state.stream !== null) {
        unwrapAcl(state.rt.aclrtDestroyStream(state.stream), "aclrtDestroyStream", state.rt);
      }
    });
    state.stream = null;
    // One reset per successful aclrtSetDevice: an extra one is 507007 in CANN.
    for (; state.deviceReferences > 0; state.deviceReferences--) {
      attempt(() =>
        unwrapAcl(
          state.rt.aclrtResetDevice(state.deviceId),
          `aclrtResetDevice(${state.deviceId})`,
          state.rt,
        )
      );
    }
    state.closed = true;
    openDevices.delete(state);
    if (state.registration !== null) unregisterOpenDevice(state.registration);
    state.registration = null;
    if (activeState === state || activeState?.deviceId === state.deviceId) activeState = null;
    if (errors.length > 0) throw errors[0];
  }

  /** Same as {@linkcode AscendDevice.close}, for `using` declarations. */
  [Symbol.dispose](): void {
    this.close();
  }

  /** `AscendDevice(npu:0)`. */
  toString(): string {
    return `AscendDevice(${this.name}${this.closed ? ", closed" : ""})`;
  }
}

function initAcl(libs: CannLibraries): void {
  const rt = libs.runtime;
  if (initialised.has(rt)) return;
  // Whatever text is pending belongs to an earlier failure, not to this call: drop it, so a
  // failing aclInit never reports a stale message (aclGetRecentErrMsg keeps a message until it
  // is read, and repeats it on a thread with no device; runtime acl.cpp GetRecentErrMsgImpl).
  recentErrorMessage(rt);
  const status = rt.aclInit(null);
  const owner = status === ACL_SUCCESS;
  if (status === ACL_ERROR_REPEAT_INITIALIZE) recentErrorMessage(rt); // harmless; clear it
  else unwrapAcl(status, "aclInit", rt);
  // aclnnInit is optional (missing before CANN 8.0) and not needed (operator packages load on
  // first use) but documented; it returns 0 even when called again (opbase aclnn_init.cpp).
  let aclnn = false;
  if (libs.nnopbase.aclnnInit) {
    aclnn = libs.nnopbase.aclnnInit(null) === ACL_SUCCESS;
    if (!aclnn) recentErrorMessage(rt);
  }
  initialised.set(rt, { owner, aclnn });
}

/**
 * Opens an Ascend NPU: finds and loads the CANN libraries, initialises ACL (once per process),
 * binds the device to the calling thread and creates a stream.
 *
 * Throws an {@linkcode AclError}: code 0 with every library path tried when CANN is not found
 * (or naming the missing `--allow-ffi`/`--allow-env` flag), or the runtime's code and message.
 *
 * @example
 * ```ts
 * import { batchNormReduceBackward, openAscend, Tensor } from "@aclnn/norm";
 * using npu = openAscend({ deviceId: 0 });
 * const x = Tensor.random([8, 4, 16], { seed: 1, device: npu });
 * const dy = Tensor.random([8, 4, 16], { seed: 2, device: npu });
 * const r = batchNormReduceBackward({
 *   gradOut: dy, input: x,
 *   mean: Tensor.zeros([4], "float32", npu), invstd: Tensor.ones([4], "float32", npu),
 * });
 * console.log(r.sumDy?.toArray()); // downloads (and synchronises) the result
 * ```
 */
export function openAscend(options: OpenAscendOptions = {}): AscendDevice {
  const deviceId = options.deviceId ?? 0;
  if (!Number.isInteger(deviceId) || deviceId < 0 || deviceId > 0x7fffffff) {
    throw new RangeError(`openAscend: deviceId ${deviceId} must be an integer >= 0`);
  }
  const libs = openCannLibraries({ libDir: options.libDir });
  deriveOppPath(libs.dir);
  const rt = libs.runtime;
  initAcl(libs);
  const state = new DeviceState(libs, deviceId);
  recentErrorMessage(rt); // never attach an earlier failure's text to this call's
  unwrapAcl(rt.aclrtSetDevice(deviceId), `aclrtSetDevice(${deviceId})`, rt);
  state.deviceReferences = 1;
  activeState = state;
  try {
    const out = new BigUint64Array(1);
    if (rt.aclrtGetCurrentContext(out) === ACL_SUCCESS) {
      state.context = Deno.UnsafePointer.create(out[0]);
    } else recentErrorMessage(rt);
    unwrapAcl(rt.aclrtCreateStream(out), `aclrtCreateStream(${state.name})`, rt);
    state.stream = Deno.UnsafePointer.create(out[0]);
    const soc = rt.aclrtGetSocName?.() ?? null;
    state.socName = soc === null ? null : Deno.UnsafePointerView.getCString(soc);
  } catch (e) {
    if (rt.aclrtResetDevice(deviceId) !== ACL_SUCCESS) recentErrorMessage(rt);
    activeState = null;
    throw e;
  }
  const device = new AscendDevice(state, internalToken);
  if (options.memoryLimit !== undefined) device.setMemoryLimit(options.memoryLimit);
  openDevices.add(state);
  state.registration = registerOpenDevice(openRecord(libs.dir, state.name));
  return device;
}

/**
 * Calls aclFinalize for the libraries in `options` (or the automatically discovered ones) once
 * every device is closed. ACL is process-wide, so a device still open in another Worker of
 * this process (recorded in the process environment when `--allow-env` is granted) makes it
 * throw too. Optional: the process may simply exit. Returns whether it finalised:
 * false when this package never initialised ACL, or when ACL was already initialised by
 * someone else in this process (aclInit answered 100002), whose initialisation this package
 * must not undo.
 *
 * @example
 * ```ts
 * import { openAscend } from "@aclnn/norm";
 * import { finalizeAscend } from "@aclnn/norm/ascend";
 * try {
 *   openAscend().close();
 *   console.log(finalizeAscend()); // true: this package initialised ACL
 * } catch (e) {
 *   console.log((e as Error).message.split("\n")[0]); // no CANN here
 * }
 * ```
 */
export function finalizeAscend(options: LibraryOptions = {}): boolean {
  const libs = openCannLibraries(options);
  for (const s of openDevices) {
    if (s.libs.runtime === libs.runtime) {
      throw new AclError(100000, `finalizeAscend: ${s.name} is still open; close it first`);
    }
  }
  // ACL is process-wide: a device another Worker opened on the same libraries counts too.
  const prefix = openRecord(libs.dir, "");
  const elsewhere = openDevicesInProcess().filter((r) => r.startsWith(prefix));
  if (elsewhere.length > 0) {
    const names = elsewhere.map((r) => r.slice(prefix.length)).join(", ");
    throw new AclError(
      100000,
      `finalizeAscend: ${names} still open in another Worker of this process; close it first`,
    );
  }
  const init = initialised.get(libs.runtime);
  if (init === undefined) return false;
  initialised.delete(libs.runtime);
  if (!init.owner) return false;
  if (init.aclnn && libs.nnopbase.aclnnFinalize) {
    if (libs.nnopbase.aclnnFinalize() !== ACL_SUCCESS) recentErrorMessage(libs.runtime);
  }
  unwrapAcl(libs.runtime.aclFinalize(), "aclFinalize", libs.runtime);
  return true;
}

/** What open_devices.ts records for a device: the library directory, a tab, the name. */
function openRecord(dir: string | null, name: string): string {
  return `${dir ?? "(loader path)"}\t${name}`;
}

/** Internal: the state behind a device (for the executor and marshalling). */
export function ascendState(device: AscendDevice): DeviceState {
  return deviceState(device);
}
