/**
 * DeviceBuffer, one allocation of device memory (what tensors on an NPU hold as `storage`),
 * and the checks of device storage the AscendDevice methods make. The memory itself, and when it
 * is freed, is its device's: a buffer reaches it only through {@linkcode BufferHome}, which
 * DeviceState (device_state.ts) implements, so this file needs nothing from that one.
 *
 * @module
 */

import type { AcceleratorDevice, DeviceStorage } from "../tensor/device.ts";
import { AclError } from "../errors.ts";
import type { Block } from "./allocator.ts";

/**
 * The memory behind one DeviceBuffer: an allocator block (null for 0 bytes) and the bytes
 * asked for, in a slot of its device's table (reused once it is freed; -1 for 0 bytes).
 */
export interface Allocation {
  readonly slot: number;
  readonly block: Block | null;
  readonly pointer: Deno.PointerValue;
  readonly byteLength: number;
  /** The device's synchronisation count when queued work last used it (-1: never). */
  launch: number;
}

/**
 * What a DeviceBuffer needs from the device that owns its memory (DeviceState): whether it is
 * closed, its error for a closed device, the backstop's tracking of buffers by slot
 * (reclaim.ts's BufferTracker), and freeing (now, or after the next synchronisation).
 */
export interface BufferHome {
  /** Whether the device is closed (its memory is gone with it). */
  readonly closed: boolean;
  /** Throws the device's error naming `what` when it is closed or held. */
  check(what: string): void;
  /** The garbage-collection backstop's record of the device's buffers. */
  readonly buffers: {
    track(buffer: DeviceBuffer, slot: number, bytes: number): void;
    untrack(slot: number): void;
  };
  /** Frees `allocation` now, or after the next synchronisation when queued work uses it. */
  release(allocation: Allocation): void;
}

/** The token that constructs DeviceBuffers and AscendDevices (not for users). */
export const internalToken: symbol = Symbol("DeviceBuffer.internal");
let bufferAllocation!: (buffer: DeviceBuffer) => Allocation;

/** Internal (device_state.ts): the allocation behind `buffer`. */
export function allocationOf(buffer: DeviceBuffer): Allocation {
  return bufferAllocation(buffer);
}
let geometryOf!: (buffer: DeviceBuffer, view: object) => string | undefined;
let setGeometry!: (buffer: DeviceBuffer, view: object, key: string) => void;

/**
 * Internal (executor.ts): the call-signature text last computed for `view`, a tensor over
 * `buffer`, or undefined. One view per buffer is remembered, on the buffer: a memo keyed by
 * tensors (a WeakMap) would hold an entry per result tensor past the call.
 */
export function rememberedGeometry(buffer: DeviceBuffer, view: object): string | undefined {
  return geometryOf(buffer, view);
}

/** Internal (executor.ts): remembers `key` as the signature text of `view` over `buffer`. */
export function rememberGeometry(buffer: DeviceBuffer, view: object, key: string): void {
  setGeometry(buffer, view, key);
}

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
 *   console.log((e as Error).message.split("\n")[0]); // (no CANN here)
 * }
 * ```
 */
export class DeviceBuffer implements DeviceStorage {
  /** The device that owns this memory (the AscendDevice it was allocated on). */
  readonly device: AcceleratorDevice;
  /** Size in bytes. */
  readonly byteLength: number;
  readonly #state: BufferHome;
  readonly #allocation: Allocation;
  #released = false;
  /** The view whose signature text is remembered, and the text (see rememberedGeometry()). */
  #view: object | undefined = undefined;
  #geometry = "";

  static {
    bufferAllocation = (buffer) => buffer.#allocation;
    geometryOf = (buffer, view) => buffer.#view === view ? buffer.#geometry : undefined;
    setGeometry = (buffer, view, key) => {
      buffer.#view = view;
      buffer.#geometry = key;
    };
  }

  /** Not for users: buffers come from {@linkcode AscendDevice.allocate}. */
  constructor(state: unknown, allocation: unknown, token: symbol) {
    if (token !== internalToken) throw new TypeError("DeviceBuffer: use AscendDevice.allocate()");
    this.#state = state as BufferHome;
    this.#allocation = allocation as Allocation;
    this.byteLength = this.#allocation.byteLength;
    this.device = deviceOf(this.#state);
    if (this.#allocation.slot >= 0) {
      this.#state.buffers.track(this, this.#allocation.slot, this.byteLength);
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
    if (this.#allocation.slot >= 0) this.#state.buffers.untrack(this.#allocation.slot);
    this.#state.release(this.#allocation);
  }

  /** Same as {@linkcode DeviceBuffer.release}. */
  [Symbol.dispose](): void {
    this.release();
  }
}

const devices = new WeakMap<BufferHome, AcceleratorDevice>();

/** Records `device` as the AscendDevice of `state` (its constructor calls this). */
export function registerDevice(state: BufferHome, device: AcceleratorDevice): void {
  devices.set(state, device);
}

function deviceOf(state: BufferHome): AcceleratorDevice {
  const device = devices.get(state);
  if (!device) throw new TypeError("DeviceBuffer: unknown device");
  return device;
}

/** `storage` as a live DeviceBuffer of `device`, or an AclError naming `what`. */
export function checkOwn(
  device: AcceleratorDevice,
  storage: DeviceStorage,
  what: string,
): DeviceBuffer {
  if (!(storage instanceof DeviceBuffer) || storage.device !== device) {
    throw new AclError(100000, `${what}: the storage does not belong to ${device.name}`);
  }
  if (storage.released) throw new AclError(100000, `${what}: the buffer was released`);
  return storage;
}

/** Throws a RangeError naming `what` unless bytes [byteOffset, +length) lie in `buffer`. */
export function checkRange(
  buffer: DeviceBuffer,
  byteOffset: number,
  length: number,
  what: string,
): void {
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
