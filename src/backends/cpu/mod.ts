/**
 * The CPU backend: tensors whose storage is a host typed array. It is the embedded default
 * wherever no NPU is found; it computes what CANN's kernels compute, in float32 (DESIGN.md
 * "Numerics"), and the tests hold it to the float64 oracle (tests/oracle).
 *
 * @module
 */

import type { Device } from "../../tensor/device.ts";
import type { Backend, Kernels } from "../types.ts";
import { channelKernels } from "./channels/mod.ts";
import { rowKernels } from "./rows/mod.ts";

export {
  CPU_POOL_IDLE_MS,
  cpuThreads,
  setCpuThreads,
  startCpuPool,
  stopCpuPool,
  THREADS_ENV,
} from "./threads.ts";
export type { CpuPoolOptions } from "./threads.ts";

/**
 * Every operator's CPU kernel: the channel family's (channels/) and the row norms' (rows/),
 * tested against the float64 oracle in tests/oracle.
 */
export const cpuKernels: Kernels = { ...channelKernels, ...rowKernels };

/** The CPU backend: {@linkcode cpuKernels} on host tensors. */
export const cpuBackend: Backend = {
  name: "cpu",
  owns: (device: Device) => device === "cpu",
  ...cpuKernels,
};
