/**
 * @aclnn/norm: Ascend CANN normalization kernels (BatchNorm, SyncBatchNorm, GroupNorm) from
 * Deno, with a pure-TypeScript CPU backend that runs everywhere and is the reference.
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

export * from "./src/tensor/mod.ts";
export * from "./src/ffi/mod.ts";
export * from "./src/ops/mod.ts";
