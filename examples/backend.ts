/**
 * The examples' backend choice: an Ascend NPU when `openAscend()` succeeds (CANN installed and
 * a device present), otherwise the CPU backend. Pass `--cpu` to skip the NPU probe.
 *
 * @module
 */

import type { Device } from "../mod.ts";

/** The device the example runs on, and a line saying which and why. */
export interface Backend {
  /** `"cpu"` or the opened NPU. */
  readonly device: Device;
  /** e.g. `CPU backend (no NPU: ...)` or `npu:0`. */
  readonly description: string;
  /** Closes the NPU (nothing for the CPU). */
  close(): void;
}

/** Opens the default backend and prints `backend: ...`. */
export async function openBackend(): Promise<Backend> {
  const backend = await probe();
  console.log(`backend: ${backend.description}`);
  return backend;
}

async function probe(): Promise<Backend> {
  const cpu = (why: string): Backend => ({
    device: "cpu",
    description: `CPU backend (${why})`,
    close() {},
  });
  if (Deno.args.includes("--cpu")) return cpu("--cpu");
  let runtime: typeof import("../src/ffi/runtime.ts");
  try {
    runtime = await import("../src/ffi/runtime.ts");
  } catch (e) {
    return cpu(`the FFI layer is unavailable: ${firstLine(e)}`);
  }
  try {
    const npu = runtime.openAscend();
    return { device: npu, description: `Ascend NPU ${npu.name}`, close: () => npu.close() };
  } catch (e) {
    return cpu(`no NPU: ${firstLine(e)}`);
  }
}

function firstLine(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  const line = text.split("\n")[0].replace(/[:.]\s*$/, "");
  return line.length > 120 ? `${line.slice(0, 117)}...` : line;
}
