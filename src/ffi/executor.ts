/**
 * The two-phase aclnn call: GetWorkspaceSize -> workspace -> execute on the device's stream.
 *
 * @module
 */

import type { AcceleratorDevice } from "../tensor/device.ts";
import type { Tensor } from "../tensor/tensor.ts";

/** One argument of an aclnn call, in the order of the C prototype (before workspaceSize). */
export type AclnnArg =
  | { readonly kind: "tensor"; readonly tensor: Tensor | undefined }
  | { readonly kind: "bool"; readonly value: boolean }
  | { readonly kind: "i64"; readonly value: number }
  | { readonly kind: "f64"; readonly value: number }
  | { readonly kind: "boolArray"; readonly values: readonly boolean[] };

/** Builders for {@linkcode AclnnArg}s, so operator files read like the C prototype. */
export const arg = {
  /** An aclTensor* (NULL when undefined). */
  tensor: (tensor: Tensor | undefined): AclnnArg => ({ kind: "tensor", tensor }),
  /** A C bool. */
  bool: (value: boolean): AclnnArg => ({ kind: "bool", value }),
  /** An int64_t. */
  i64: (value: number): AclnnArg => ({ kind: "i64", value }),
  /** A double. */
  f64: (value: number): AclnnArg => ({ kind: "f64", value }),
  /** An aclBoolArray*. */
  boolArray: (values: readonly boolean[]): AclnnArg => ({ kind: "boolArray", values }),
};

/**
 * Runs aclnn operator `op` (e.g. `aclnnBatchNormReduceBackward`) on `device` with `args`.
 * TODO(issue 3): implemented by the FFI layer.
 */
export function runAclnn(device: AcceleratorDevice, op: string, args: readonly AclnnArg[]): void {
  void device;
  void args;
  throw new Error(`runAclnn(${op}): the NPU backend is not built yet`);
}
