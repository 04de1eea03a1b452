/**
 * Devices to benchmark: the CPU backend always, plus the NPU code path when CANN can be
 * opened (a real install, or the software CANN: `ACLNN_NORM_LIB_DIR=<absolute path of
 * build/sim>`). When the NPU does not open, {@linkcode benchDevices} says why, once, on stderr;
 * rows of the software CANN are labelled as such (its version file says so), since its timings
 * are a CPU's, not a chip's.
 *
 * @module
 */

import { type AscendDevice, openAscend } from "../mod.ts";
import { cannVersion } from "../scripts/cann_versions.ts";

/** A named device for benchmark labels. */
export interface BenchDevice {
  /** Label used in benchmark names: `cpu`, `npu:0`, or `npu:0 (software CANN)`. */
  name: string;
  /** The device tensors are put on. */
  device: "cpu" | AscendDevice;
}

/**
 * The CPU backend, and the NPU when one opens (never fails: benchmarks still run on CPU; the
 * reason the NPU was skipped is printed to stderr).
 */
export function benchDevices(): BenchDevice[] {
  const devices: BenchDevice[] = [{ name: "cpu", device: "cpu" }];
  try {
    const npu = openAscend();
    const software = /aclsim/.test(cannVersion(npu.libDir).version);
    devices.push({ name: software ? `${npu.name} (software CANN)` : npu.name, device: npu });
  } catch (e) {
    const why = (e instanceof Error ? e.message : String(e)).split("\n");
    console.error(`NPU rows skipped: ${why.slice(0, 12).join("\n  ")}`);
    console.error(
      "  (set ACLNN_NORM_LIB_DIR to the absolute path of a CANN lib64, or of build/sim for the " +
        "software CANN)",
    );
  }
  return devices;
}
