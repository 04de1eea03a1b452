/**
 * @aclnn/norm: Ascend CANN normalization kernels (BatchNorm, SyncBatchNorm, GroupNorm, LayerNorm,
 * RMSNorm and the rest of CANN's norm family) from Deno, with a CPU backend (TypeScript and
 * WebAssembly SIMD, computing in float32 as CANN's kernels do) that runs everywhere.
 *
 * This root module holds what applications call: tensors, the operators, devices, errors,
 * SyncBatchNorm and the InfiniOp-style descriptor API. Advanced users find the FFI layer
 * (library discovery, the raw CANN symbol tables, constants, the SoC table) in
 * `@aclnn/norm/ascend`, and the backend registry and kernel interface in
 * `@aclnn/norm/backends`.
 *
 * @example
 * ```ts
 * import { groupNormBackward, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([2, 4, 3], { seed: 1 });
 * const dy = Tensor.random([2, 4, 3], { seed: 2 });
 * const mean = Tensor.zeros([2, 2]);
 * const rstd = Tensor.ones([2, 2]);
 * const { gradInput } = groupNormBackward({ gradOut: dy, input: x, mean, rstd, group: 2 });
 * console.log(gradInput?.shape); // [2, 4, 3]
 * ```
 *
 * @module
 */

// Tensors and memory scopes.
export { Tensor } from "./src/tensor/tensor.ts";
export type { RandomOptions, ViewOptions } from "./src/tensor/tensor.ts";
export type { AcceleratorDevice, Device, DeviceStorage, WorkOutcome } from "./src/tensor/device.ts";
export { bf16ToNumber, dtypeByteSize, numberToBf16, roundToDType } from "./src/tensor/dtype.ts";
export type { DType, HostData } from "./src/tensor/dtype.ts";
export { keep, tidy } from "./src/tensor/scope.ts";
export { hostHeapUsage } from "./src/tensor/host_heap.ts";
export { HOST_HEAP_ENV } from "./src/tensor/host_heap_size.ts";
export type { HostHeapUsage } from "./src/tensor/host_heap.ts";

// Operators, SyncBatchNorm and the descriptor API.
export * from "./src/ops/mod.ts";

// Devices.
export { AscendDevice, openAscend } from "./src/ffi/runtime.ts";
export type { DeviceMemoryStats, OpenAscendOptions } from "./src/ffi/runtime.ts";
export { BACKEND_ENV, selectDefaultDevice } from "./src/backends/default_device.ts";
export type {
  BackendChoice,
  DefaultDeviceOptions,
  DefaultDeviceSelection,
} from "./src/backends/default_device.ts";
export {
  CPU_POOL_IDLE_MS,
  cpuThreads,
  setCpuThreads,
  startCpuPool,
  stopCpuPool,
} from "./src/backends/cpu/threads.ts";
export type { CpuPoolOptions } from "./src/backends/cpu/threads.ts";

// Errors.
export { AclError, AclnnError, HcclError } from "./src/errors.ts";
export type { AclnnErrorDetails, HcclErrorDetails, InfiniStatus } from "./src/errors.ts";

// SyncBatchNorm across processes and machines, over HCCL.
export { createLocalProcessGroup } from "./src/distributed/local_process_group.ts";
export type { LocalProcessGroupOptions } from "./src/distributed/local_process_group.ts";
export { createHcclProcessGroup } from "./src/distributed/hccl_process_group.ts";
export type {
  HcclProcessGroup,
  HcclProcessGroupOptions,
} from "./src/distributed/hccl_process_group.ts";

// Modules: BatchNorm, GroupNorm, SyncBatchNorm, LayerNorm, RMSNorm (parameters, running
// statistics, state dicts).
export * from "./src/nn/mod.ts";
