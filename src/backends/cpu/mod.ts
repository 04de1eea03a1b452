/**
 * The CPU backend: tensors whose storage is a host typed array. It is the embedded default
 * wherever no NPU is found and the implementation the tests trust.
 *
 * @module
 */

import type { Device } from "../../tensor/device.ts";
import type { Backend } from "../types.ts";
import { referenceKernels } from "./reference/mod.ts";

/** The CPU backend. */
export const cpuBackend: Backend = {
  name: "cpu",
  owns: (device: Device) => device === "cpu",
  ...referenceKernels,
};
