/**
 * The CPU backend: tensors whose storage is a host typed array. It is the embedded default
 * wherever no NPU is found and the implementation the tests trust.
 *
 * @module
 */

import type { Device } from "../../tensor/device.ts";
import type { Backend } from "../types.ts";
import { fastKernels } from "./fast/mod.ts";

export {
  CPU_POOL_IDLE_MS,
  cpuThreads,
  setCpuThreads,
  startCpuPool,
  stopCpuPool,
  THREADS_ENV,
} from "./threads.ts";
export type { CpuPoolOptions } from "./threads.ts";

/** The CPU backend: the streaming kernels (tested against the float64 oracle in tests/oracle). */
export const cpuBackend: Backend = {
  name: "cpu",
  owns: (device: Device) => device === "cpu",
  ...fastKernels,
};
