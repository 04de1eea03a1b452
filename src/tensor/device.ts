/**
 * What the Tensor layer needs from an accelerator. The NPU implementation lives in
 * `src/ffi/runtime.ts`; this layer only knows the interface, so it never loads native code.
 *
 * @module
 */

/** Memory owned by an accelerator: an opaque handle plus its size. */
export interface DeviceStorage {
  /** The device that owns this memory. */
  readonly device: AcceleratorDevice;
  /** Size in bytes. */
  readonly byteLength: number;
  /**
   * Returns the memory to the device now (idempotent). Work already queued on the device
   * keeps it until that work has finished. Without a call, a FinalizationRegistry frees it
   * after the last Tensor using it is garbage-collected.
   */
  release(): void;
  /**
   * Whether the memory is gone: `release()`d, or its device closed. Optional for other
   * accelerators (absent: never known to be released).
   */
  readonly released?: boolean;
}

/** An accelerator that can hold tensor storage (an Ascend NPU opened with `openAscend`). */
export interface AcceleratorDevice {
  /** Always `"npu"` for Ascend devices. */
  readonly kind: "npu";
  /** The device id passed to aclrtSetDevice. */
  readonly id: number;
  /** A printable name such as `npu:0`. */
  readonly name: string;
  /**
   * Whether the device was closed (its memory went with it; using it throws the device's own
   * error). Optional for other accelerators (absent: never closed).
   */
  readonly closed?: boolean;
  /** Allocates `byteLength` bytes of device memory. */
  allocate(byteLength: number): DeviceStorage;
  /** Copies host bytes into device memory at `byteOffset`. */
  upload(dst: DeviceStorage, src: Uint8Array, byteOffset: number): void;
  /** Waits for queued work, then copies device bytes at `byteOffset` into `dst`. */
  download(src: DeviceStorage, dst: Uint8Array, byteOffset: number): void;
  /** Sets every byte of `dst` to `byte` on the device (no host copy). */
  fill(dst: DeviceStorage, byte: number): void;
  /**
   * A mark of the work queued on the device so far and not yet synchronised, or -1 when none
   * is (everything so far finished, or failed with an error already thrown). Optional: an
   * accelerator that runs every call to completion has no queued work.
   */
  workMark?(): number;
  /**
   * What became of the work a {@linkcode AcceleratorDevice.workMark} covered: still queued,
   * done, or failed (a synchronisation reported `code`, e.g. 507015 for a kernel fault; all
   * work queued between two synchronisations counts as failed then).
   */
  workOutcome?(mark: number): WorkOutcome;
}

/** What became of queued device work (see {@linkcode AcceleratorDevice.workOutcome}). */
export type WorkOutcome =
  | { readonly state: "queued" | "done" }
  | { readonly state: "failed"; readonly code: number };

/** Where a tensor lives: `"cpu"` (host memory) or an accelerator. */
export type Device = "cpu" | AcceleratorDevice;

/** A printable name of a device. */
export function deviceName(device: Device): string {
  return device === "cpu" ? "cpu" : device.name;
}
