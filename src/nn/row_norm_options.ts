/**
 * The constructor options of {@linkcode LayerNorm} and {@linkcode RMSNorm}, checked once when a
 * module is made (an {@linkcode AclnnError} 161002 naming the option and the rule), and what
 * the two modules share: the normalized shape check of an input.
 *
 * @module
 */

import { z } from "../ops/zod.ts";
import { flag, invalid } from "../ops/validate.ts";
import type { Device } from "../tensor/device.ts";
import type { DType } from "../tensor/dtype.ts";
import { formatShape } from "../tensor/layout.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { device, dtype, type ModulePlacement, parseOptions } from "./options.ts";

/** The options of LayerNorm, as PyTorch's `nn.LayerNorm` takes them. */
export interface LayerNormOptions extends ModulePlacement {
  /** The normalized (trailing) dims of the input: an integer or 1 to 8 integers >= 0. */
  normalizedShape: number | readonly number[];
  /** Added to the variance. Default 1e-5. */
  eps?: number;
  /** Learnable `weight` (ones) and `bias` (zeros) of shape normalizedShape. Default true. */
  elementwiseAffine?: boolean;
  /** With elementwiseAffine: whether there is a `bias` (PyTorch >= 2.1). Default true. */
  bias?: boolean;
}

/** The options of RMSNorm, as PyTorch's `nn.RMSNorm` (torch >= 2.4) takes them. */
export interface RMSNormOptions extends ModulePlacement {
  /** The normalized (trailing) dims of the input: an integer or 1 to 8 integers >= 0. */
  normalizedShape: number | readonly number[];
  /**
   * Added to mean(x^2), >= 0. Default (undefined or null): the machine epsilon of the input's
   * dtype, as PyTorch's `eps=None` (torch.finfo(x.dtype).eps).
   */
  eps?: number | null;
  /** Learnable `weight` (ones) of shape normalizedShape. Default true. */
  elementwiseAffine?: boolean;
}

/** LayerNorm options with every default applied. */
export interface LayerNormConfig {
  readonly normalizedShape: readonly number[];
  readonly eps: number;
  readonly elementwiseAffine: boolean;
  readonly bias: boolean;
  readonly device: Device;
  readonly dtype: DType;
}

/** RMSNorm options with every default applied. */
export interface RMSNormConfig {
  readonly normalizedShape: readonly number[];
  readonly eps: number | null;
  readonly elementwiseAffine: boolean;
  readonly device: Device;
  readonly dtype: DType;
}

const dim = z.number({ invalid_type_error: "must hold integers >= 0" }).int(
  "must hold integers >= 0",
).safe("must hold safe integers").gte(0, "must hold integers >= 0");

const shape = z.union([dim.transform((d) => [d]), z.array(dim).min(1).max(8)], {
  errorMap: () => ({ message: "must be an integer >= 0 or an array of 1 to 8 of them" }),
});

const finite = z.number({ invalid_type_error: "must be a number" }).finite("must be finite");

const layerNormSchema = z.object({
  normalizedShape: shape,
  eps: finite.default(1e-5),
  elementwiseAffine: flag,
  bias: flag,
  device,
  dtype,
}).strict();

const rmsNormSchema = z.object({
  normalizedShape: shape,
  eps: finite.gte(0, "must be >= 0").nullable().default(null),
  elementwiseAffine: flag,
  device,
  dtype,
}).strict();

/** Checks LayerNorm options (161001 without them, 161002 for a bad value or unknown option). */
export function layerNormConfig(op: string, options: LayerNormOptions): LayerNormConfig {
  return parseOptions(op, layerNormSchema, options);
}

/** Checks RMSNorm options (161001 without them, 161002 for a bad value or unknown option). */
export function rmsNormConfig(op: string, options: RMSNormOptions): RMSNormConfig {
  return parseOptions(op, rmsNormSchema, options);
}

/**
 * The input of a forward must end in the normalized shape (161002 naming `input`), as
 * PyTorch requires ("expected input with shape [*, ...normalized_shape]").
 */
export function checkNormalizedInput(op: string, x: Tensor, normalized: readonly number[]): void {
  const axis = x.rank - normalized.length;
  if (axis < 0 || normalized.some((d, i) => d !== x.shape[axis + i])) {
    invalid(
      op,
      "input",
      `shape ${formatShape(x.shape)} must end in normalizedShape ${formatShape(normalized)}`,
    );
  }
}

/** torch.finfo(dtype).eps: the distance from 1 to the next value of the dtype. */
export function machineEpsilon(dtype: DType): number {
  return dtype === "float16" ? 2 ** -10 : dtype === "bfloat16" ? 2 ** -7 : 2 ** -23;
}
