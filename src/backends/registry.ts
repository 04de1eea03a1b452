/**
 * The backend registry: which {@linkcode Backend} runs the tensors of a device. Operators call
 * {@linkcode backendFor} with the device their tensors share and never name a backend.
 *
 * @module
 */

import { ACLNN_ERR_PARAM_INVALID, AclnnError } from "../errors.ts";
import { type Device, deviceName } from "../tensor/device.ts";
import type { Backend } from "./types.ts";

const backends: Backend[] = [];

/**
 * Adds a backend (later registrations win, so a backend can take over a device kind).
 * Registering the same object twice is a no-op.
 *
 * @example
 * ```ts
 * import { cpuBackend, registerBackend, registeredBackends } from "@aclnn/norm/backends";
 * // A backend that logs, then runs the CPU kernels, for tensors on the host.
 * registerBackend({
 *   ...cpuBackend,
 *   name: "logging-cpu",
 *   batchNormStats(plan, tensors) {
 *     console.log("batchNormStats", plan.geometry);
 *     cpuBackend.batchNormStats(plan, tensors);
 *   },
 * });
 * console.log(registeredBackends()[0].name); // logging-cpu
 * ```
 */
export function registerBackend(backend: Backend): void {
  if (backends.includes(backend)) return;
  backends.unshift(backend);
}

/**
 * The registered backends, most recent first.
 *
 * @example
 * ```ts
 * import { registeredBackends } from "@aclnn/norm/backends";
 * console.log(registeredBackends().map((b) => b.name)); // ["ascend", "cpu"]: later registrations first
 * ```
 */
export function registeredBackends(): readonly Backend[] {
  return [...backends];
}

/**
 * The backend that owns `device`; 161002 naming `op` when none does.
 *
 * @example
 * ```ts
 * import { backendFor } from "@aclnn/norm/backends";
 * console.log(backendFor("aclnnBatchNorm", "cpu").name); // cpu
 * ```
 */
export function backendFor(op: string, device: Device): Backend {
  for (const b of backends) if (b.owns(device)) return b;
  throw new AclnnError(
    ACLNN_ERR_PARAM_INVALID,
    `${op}: no backend runs tensors on ${deviceName(device)} (registered: ${
      backends.map((b) => b.name).join(", ") || "none"
    })`,
  );
}
