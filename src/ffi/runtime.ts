/**
 * The Ascend device: device binding and {@linkcode AscendDevice}, an open device with one
 * stream (memory figures, copies with aclrtMemcpy, synchronisation, close). ACL's own
 * initialisation and `finalizeAscend()` are in acl_lifecycle.ts; what a device owns and its
 * memory (DeviceState and the lifetimes of its buffers) in device_state.ts, DeviceBuffer in
 * device_buffer.ts.
 *
 * Device references: aclrtSetDevice counts per process and device, aclrtResetDevice releases
 * one (hicann/runtime runtime.cc PrimaryContextRetain/Release; an extra reset is 507007). Every
 * successful aclrtSetDevice this package makes is matched by one aclrtResetDevice at close.
 *
 * @module
 */

import type { AcceleratorDevice, DeviceStorage, WorkOutcome } from "../tensor/device.ts";
import { trackStorage } from "../tensor/scope.ts";
import { ACL_SUCCESS, AclrtMemcpyKind } from "./constants.ts";
import type { AllocatorStats } from "./allocator.ts";
import { registerOpenDevice, unregisterOpenDevice } from "./open_devices.ts";
import { recentErrorMessage, unwrapAcl } from "../errors.ts";
import { type LibraryOptions, openCannLibraries } from "./library.ts";
import { initAcl, openDevices, openRecord } from "./acl_lifecycle.ts";
import { launchBlockingFromEnv } from "./launch_log.ts";
import {
  checkOwn,
  checkRange,
  DeviceBuffer,
  DeviceState,
  forgetActiveState,
  internalToken,
  registerDevice,
  setActiveState,
} from "./device_state.ts";
import { deriveOppPath } from "./opp_path.ts";

export { DeviceBuffer, DeviceState, rememberedGeometry, rememberGeometry } from "./device_state.ts";
export { finalizeAscend } from "./acl_lifecycle.ts";

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
  /**
   * Whether each call waits for the work it queued (aclrtSynchronizeStream), so that a failure
   * on the device is thrown by the call that failed instead of by a later synchronisation.
   * Slow; for debugging. Default: `$ASCEND_LAUNCH_BLOCKING` (torch_npu's switch: 1 = on); off
   * when it is unset or `--allow-env` does not grant reading it.
   */
  launchBlocking?: boolean;
}

let deviceState!: (device: AscendDevice) => DeviceState;

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
 *   console.log((e as Error).message.split("\n")[0]); // (no CANN here)
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
    registerDevice(state, this);
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
   *   console.log((e as Error).message.split("\n")[0]); // (no CANN here)
   * }
   * ```
   */
  memory(): DeviceMemoryStats {
    const state = this.#state;
    return {
      ...state.allocator.stats(),
      liveBuffers: state.liveAllocations,
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
    if (state.bufferInFlight(buffer)) state.synchronize();
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
    if (state.bufferInFlight(buffer)) state.synchronize();
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

  /** A mark of the work queued and not yet synchronised (-1: none); see `workOutcome`. */
  workMark(): number {
    return this.#state.queued ? this.#state.epoch : -1;
  }

  /**
   * Whether the work a `workMark` covered is still queued, done, or failed: every launch
   * queued between two synchronisations counts as failed when the second one reports a fault.
   */
  workOutcome(mark: number): WorkOutcome {
    const state = this.#state;
    const code = state.failures.get(mark);
    if (code !== undefined) return { state: "failed", code };
    return { state: mark >= 0 && mark === state.epoch && state.queued ? "queued" : "done" };
  }

  /** Waits until the work queued on this device's stream has finished. */
  synchronize(): void {
    this.#state.check("synchronize");
    this.#state.synchronize();
  }

  /**
   * Synchronises, frees the workspace and every buffer still allocated, destroys the stream and
   * resets the device. Idempotent; tensors on this device are unusable afterwards. While a
   * collective that missed its deadline still runs on the stream (HcclError HCCL_E_TIMEOUT),
   * the device is only forgotten: its stream and memory go with the process.
   */
  close(): void {
    const state = this.#state;
    if (state.closed) return;
    if (state.watch.held) {
      state.closed = true;
      for (const dependent of [...state.dependents]) dependent.close();
      this.#forget();
      return;
    }
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
    state.epoch++;
    for (const a of [...state.deferred.splice(0), ...state.allocations]) {
      if (a !== undefined) attempt(() => state.free(a));
    }
    state.buffers.clear();
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
    state.watch.close();
    this.#forget();
    if (errors.length > 0) throw errors[0];
  }

  /** Takes the closed device out of the process's records. */
  #forget(): void {
    const state = this.#state;
    openDevices.delete(state);
    if (state.registration !== null) unregisterOpenDevice(state.registration);
    state.registration = null;
    forgetActiveState(state);
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
 * console.log(r.sumDy?.toArray()); // [-5.23..., 1.33..., 6.62..., 1.21...]: reading synchronises
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
  state.launchBlocking = options.launchBlocking ?? launchBlockingFromEnv();
  recentErrorMessage(rt); // never attach an earlier failure's text to this call's
  unwrapAcl(rt.aclrtSetDevice(deviceId), `aclrtSetDevice(${deviceId})`, rt);
  state.deviceReferences = 1;
  setActiveState(state);
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
    setActiveState(null);
    throw e;
  }
  const device = new AscendDevice(state, internalToken);
  if (options.memoryLimit !== undefined) device.setMemoryLimit(options.memoryLimit);
  openDevices.add(state);
  state.registration = registerOpenDevice(openRecord(libs.dir, state.name));
  return device;
}

/** Internal: the state behind a device (for the executor and marshalling). */
export function ascendState(device: AscendDevice): DeviceState {
  return deviceState(device);
}
