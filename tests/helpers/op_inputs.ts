/**
 * What the operator tests (tests/ops/, tests/software_cann/) share: seeded random tensors and
 * the codes aclnn's parameter checks return.
 *
 * @module
 */

import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";

/** ACLNN_ERR_PARAM_NULLPTR: a required argument is missing. */
export const NULLPTR = 161001;
/** ACLNN_ERR_PARAM_INVALID: an argument breaks a dtype, shape or value rule. */
export const INVALID = 161002;

/** A tensor of `shape` with seeded uniform values in [low, high), in `dtype`. */
export function rnd(
  shape: number[],
  seed: number,
  dtype: DType = "float32",
  low = -1,
  high = 1,
): Tensor {
  return Tensor.random(shape, { seed, dtype, low, high });
}
