/**
 * A tensor's storage: host typed arrays (recorded for `tidy`, refused once their heap block is
 * freed) and accelerator memory, and the copies of a view's span between the two.
 *
 * @module
 */

import { ACLNN_ERR_PARAM_INVALID, AclnnError } from "../errors.ts";
import type { AcceleratorDevice, DeviceStorage } from "./device.ts";
import { allocateHostData, type DType, dtypeByteSize, type HostData } from "./dtype.ts";
import { heapFreed } from "./host_heap.ts";
import { trackStorage } from "./scope.ts";

/**
 * New host storage for `length` elements, recorded for the innermost `tidy` scope (zero-filled
 * unless `zeroed` is false). One that cannot be made is AclError 207001 naming `shape`.
 */
export function newHostData(
  dtype: DType,
  length: number,
  zeroed = true,
  shape: readonly number[] = [length],
): HostData {
  const data = allocateHostData(dtype, length, zeroed, shape);
  trackStorage(data);
  return data;
}

/**
 * AclnnError 161002 for `tensor` (its description) used by `where` after its memory was freed;
 * `argument` names it in the call (`tensor`, or `values` for copy_'s source).
 */
export function disposedError(where: string, tensor: string, argument = "tensor"): AclnnError {
  const named = `${argument === "tensor" ? "the tensor" : argument} (${tensor})`;
  return new AclnnError(
    ACLNN_ERR_PARAM_INVALID,
    `${where}: ${named} was disposed (dispose() or tidy freed its memory)`,
    { argument },
  );
}

/**
 * Whether `storage` was freed: host storage that `dispose()` gave back (a block of the host
 * heap, or a small array only marked), device memory released or on a closed device.
 */
export function storageReleased(storage: HostData | DeviceStorage): boolean {
  return isHostData(storage) ? heapFreed(storage) : storage.released === true;
}

/**
 * Whether `storage` was disposed: host storage that `dispose()` gave back, or device memory
 * released while its device is open (on a closed device the device's own error says so).
 */
export function storageDisposed(storage: HostData | DeviceStorage): boolean {
  return isHostData(storage)
    ? heapFreed(storage)
    : storage.released === true && storage.device.closed !== true;
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

/**
 * Refuses a `device` that is not an accelerator (a TypeError saying how to open one): `"npu"`,
 * undefined or a plain object reach here where an AcceleratorDevice was expected.
 */
export function checkAccelerator(device: unknown): asserts device is AcceleratorDevice {
  const d = device as Partial<AcceleratorDevice> | null | undefined;
  if (typeof d === "object" && d !== null && typeof d.allocate === "function") return;
  const shown = typeof device === "string" ? JSON.stringify(device) : Deno.inspect(device, {
    depth: 0,
    breakLength: Infinity,
  });
  throw new TypeError(
    `device ${shown} is not a device: pass "cpu" or a device opened with openAscend() ` +
      `(import { openAscend } from "@aclnn/norm"; const npu = openAscend(); x.to(npu))`,
  );
}

/**
 * Allocates device memory and runs `init` on it; the memory goes back if `init` fails. A
 * `device` that is not an accelerator is a TypeError ({@linkcode checkAccelerator}).
 */
export function deviceStorage(
  device: AcceleratorDevice,
  byteLength: number,
  init: (storage: DeviceStorage) => void,
): DeviceStorage {
  checkAccelerator(device);
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
