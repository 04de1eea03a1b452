/**
 * `@aclnn/norm/backends`: the kernel interface every backend implements and the registry
 * that picks one per device, for adding a backend (WebAssembly, WebGPU, another accelerator)
 * without touching any operator. The operators validate their arguments, allocate outputs on
 * the tensors' device, build a plan, and call `backendFor(op, device).<kernel>(plan, tensors)`.
 *
 * @example
 * ```ts
 * import { backendFor, registeredBackends } from "@aclnn/norm/backends";
 * console.log(registeredBackends().map((b) => b.name)); // ["ascend", "cpu"]
 * console.log(backendFor("aclnnBatchNorm", "cpu").name); // cpu
 * ```
 *
 * @module
 */

export {
  ascendBackend,
  backendFor,
  channelGeometry,
  cpuBackend,
  registerBackend,
  registeredBackends,
  rowGeometry,
} from "./src/backends/mod.ts";
export type * from "./src/backends/types.ts";
