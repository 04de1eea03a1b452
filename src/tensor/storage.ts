/**
 * A tensor's storage: host typed arrays (recorded for `tidy`, refused once their heap block is
 * freed) and accelerator memory, and the copies of a view's span between the two.
 *
 * @module
 */

import type { AcceleratorDevice, DeviceStorage } from "./device.ts";
import { allocateHostData, type DType, dtypeByteSize, type HostData } from "./dtype.ts";
import { heapFreed } from "./host_heap.ts";
import { trackStorage } from "./scope.ts";

/**
 * New host storage for `length` elements, recorded for the innermost `tidy` scope (zero-filled
 * unless `zeroed` is false).
 */
export function newHostData(dtype: DType, length: number, zeroed = true): HostData {
  const data = allocateHostData(dtype, length, zeroed);
  trackStorage(data);
  return data;
}

/** `data`, unless `dispose()` gave its memory back to the host heap (then throws). */
export function liveHostData(data: HostData): HostData {
  if (heapFreed(data)) {
    throw new TypeError("Tensor: its host storage was disposed (dispose() freed its memory)");
  }
  return data;
}

/**
 * Whether `storage` was freed: host storage that `dispose()` gave back (a block of the host
 * heap, or a small array only marked), device memory released or on a closed device.
 */
export function storageReleased(storage: HostData | DeviceStorage): boolean {
  return isHostData(storage) ? heapFreed(storage) : storage.released === true;
}

/** Whether `storage` is host memory (a typed array) rather than accelerator memory. */
export function isHostData(storage: HostData | DeviceStorage): storage is HostData {
  return ArrayBuffer.isView(storage);
}

/** How many `dtype` elements `storage` holds. */
export function storageCapacity(storage: HostData | DeviceStorage, dtype: DType): number {
  return isHostData(storage)
    ? storage.length
    : Math.floor(storage.byteLength / dtypeByteSize(dtype));
}

/** Allocates device memory and runs `init` on it; the memory goes back if `init` fails. */
export function deviceStorage(
  device: AcceleratorDevice,
  byteLength: number,
  init: (storage: DeviceStorage) => void,
): DeviceStorage {
  const storage = device.allocate(byteLength);
  try {
    init(storage);
  } catch (e) {
    storage.release();
    throw e;
  }
  return storage;
}

/** `count` zero-filled `dtype` elements on `device` (set there with `fill`, no host copy). */
export function zeroedDeviceStorage(
  device: AcceleratorDevice,
  dtype: DType,
  count: number,
): DeviceStorage {
  return deviceStorage(device, count * dtypeByteSize(dtype), (m) => device.fill(m, 0));
}

function bytesOf(data: HostData): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/**
 * New host storage holding the `span` elements of device `storage` that start at element
 * `offset` (nothing is read when `span` is 0).
 */
export function downloadSpan(
  storage: DeviceStorage,
  dtype: DType,
  offset: number,
  span: number,
): HostData {
  const data = newHostData(dtype, span, false);
  if (span > 0) storage.device.download(storage, bytesOf(data), offset * dtypeByteSize(dtype));
  return data;
}

/** Writes all of host `data` back into device `storage` from element `offset` on. */
export function uploadSpan(
  storage: DeviceStorage,
  data: HostData,
  dtype: DType,
  offset: number,
): void {
  storage.device.upload(storage, bytesOf(data), offset * dtypeByteSize(dtype));
}

/**
 * New memory on `device` holding the `span` elements of host `data` that start at element
 * `offset` (nothing is copied when `span` is 0).
 */
export function uploadToDevice(
  device: AcceleratorDevice,
  data: HostData,
  dtype: DType,
  offset: number,
  span: number,
): DeviceStorage {
  const elementBytes = dtypeByteSize(dtype);
  return deviceStorage(device, span * elementBytes, (m) => {
    if (span === 0) return;
    const bytes = new Uint8Array(
      data.buffer,
      data.byteOffset + offset * elementBytes,
      span * elementBytes,
    );
    device.upload(m, bytes, 0);
  });
}
