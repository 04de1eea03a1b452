/**
 * Devices to benchmark: the CPU backend always, plus the NPU code path when CANN can be
 * opened (a real install, or the software CANN: `ACLNN_NORM_LIB_DIR=build/sim`).
 *
 * @module
 */

import { type AscendDevice, openAscend } from "../mod.ts";

/** A named device for benchmark labels. */
export interface BenchDevice {
  /** Label used in benchmark names: `cpu` or `npu:0`. */
  name: string;
  /** The device tensors are put on. */
  device: "cpu" | AscendDevice;
}

/** The CPU backend, and the NPU when one opens (never fails: benchmarks still run on CPU). */
export function benchDevices(): BenchDevice[] {
  const devices: BenchDevice[] = [{ name: "cpu", device: "cpu" }];
  try {
    const npu = openAscend();
    devices.push({ name: npu.name, device: npu });
  } catch {
    // No CANN here: the CPU rows alone are still a valid run.
  }
  return devices;
}
