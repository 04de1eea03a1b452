/**
 * The examples' backend: the library's embedded default (`selectDefaultDevice`: an Ascend NPU
 * when CANN and a device open, otherwise the CPU backend). Pass `--cpu` to skip the NPU probe.
 *
 * @module
 */

import { type Device, selectDefaultDevice } from "../mod.ts";

/** The device the example runs on, and a line saying which and why. */
export interface Backend {
  /** `"cpu"` or the opened NPU. */
  readonly device: Device;
  /** e.g. `CPU backend (...; no NPU: ...)` or `NPU npu:0 (...)`. */
  readonly description: string;
  /** Closes the NPU (nothing for the CPU). */
  close(): void;
}

/** Opens the default backend and prints `backend: ...`. */
export function openBackend(): Backend {
  const { device, description } = selectDefaultDevice({
    backend: Deno.args.includes("--cpu") ? "cpu" : undefined,
  });
  console.log(`backend: ${description}`);
  return { device, description, close: () => device !== "cpu" && device.close() };
}
