/**
 * The kernel interface every backend implements: one method per operator, each taking the
 * plan the operator built once (geometry, masks, scalars) and the tensors it validated and
 * allocated. Operators (src/ops/) only ever call these methods, so a new backend (WebAssembly,
 * WebGPU, another accelerator) is a new folder plus one {@linkcode registerBackend} call, and
 * touches no operator file (PyTorch's one-declaration-many-kernels, tfjs's backend registry).
 *
 * Each kernel family's plans, tensors and `*Kernels` interface live in its own file beside this
 * one (`batch_norm_types.ts`, `batch_norm_family_types.ts`, `group_norm_types.ts`,
 * `group_norm_act_types.ts`, `row_norm_types.ts`); this file re-exports them and joins them into
 * {@linkcode Kernels} and {@linkcode Backend}. The families import nothing from it.
 *
 * Contract of every kernel:
 * - validation has already run: shapes, dtypes, devices and masks are as the operator documents;
 * - every output tensor that the plan asks for is present and writable, and nothing else is
 *   written (masked-off outputs are absent);
 * - every input is read before any output element that could alias it is written, so the
 *   in-place uses that CANN documents (running statistics, InfiniOp's gradInput over
 *   gradOutput with the same layout) stay correct.
 *
 * @module
 */

import type { Device } from "../tensor/device.ts";
import type { Tensor } from "../tensor/tensor.ts";
import type { BatchNormKernels } from "./batch_norm_types.ts";
import type { BatchNormFamilyKernels } from "./batch_norm_family_types.ts";
import type { GroupNormActKernels } from "./group_norm_act_types.ts";
import type { GroupNormKernels } from "./group_norm_types.ts";
import type { RowNormKernels } from "./row_norm_types.ts";

export * from "./batch_norm_types.ts";
export * from "./batch_norm_family_types.ts";
export * from "./group_norm_act_types.ts";
export * from "./group_norm_types.ts";
export * from "./row_norm_types.ts";

export type { OutputMask } from "./output_mask.ts";

/**
 * The kernels, one per operator: every family's, each declared beside its plans and tensors
 * ({@linkcode BatchNormKernels} in `batch_norm_types.ts`, `batch_norm_family_types.ts`,
 * `group_norm_types.ts`, `group_norm_act_types.ts`, `row_norm_types.ts`). A method's name is its operator's aclnn name
 * without `aclnn`, lower case first (aclnnGemmaRmsNorm: `gemmaRmsNorm`), and each family is one
 * `group` of `ascend/soc_operators.ts` (tests/tools/operator_tables.test.ts checks both).
 */
export interface Kernels
  extends
    BatchNormKernels,
    BatchNormFamilyKernels,
    GroupNormKernels,
    GroupNormActKernels,
    RowNormKernels {}

/** The operator names of {@linkcode Kernels}. */
export type KernelName = keyof Kernels;

/**
 * Checks a backend makes of an operator call before any tensor is written, beyond the
 * device-independent rules the operator file checks: e.g. the dtypes one SoC supports.
 * Throws the documented error (AclnnError 161002 naming the argument and the rule).
 */
export interface DeviceRules {
  /**
   * `op` is the CANN operator name; `tensors` the call's present tensors by argument name;
   * `scalars` its integer arguments by name (e.g. GroupNorm's C and group).
   */
  check(
    op: string,
    device: Device,
    tensors: Readonly<Record<string, Tensor | undefined>>,
    scalars?: Readonly<Record<string, number>>,
  ): void;
}

/** A backend: the devices it owns and its kernels. */
export interface Backend extends Kernels {
  /** A short name, e.g. `cpu` or `ascend`. */
  readonly name: string;
  /** Whether tensors on `device` run on this backend. */
  owns(device: Device): boolean;
  /** Device-specific argument rules; absent when the backend accepts what the operator does. */
  readonly rules?: DeviceRules;
}
