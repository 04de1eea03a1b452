/**
 * The constructor options of the modules, checked once when a module is made: a wrong value is
 * an {@linkcode AclnnError} 161002 naming the option and the rule (as the operators report
 * their arguments), so a mistake surfaces at construction, not at the first forward.
 *
 * @module
 */

import { z } from "../ops/zod.ts";
import { argumentsOf, epsilon, flag, invalid, parseScalars } from "../ops/validate.ts";
import type { Device } from "../tensor/device.ts";
import { type DType, FLOAT_DTYPES } from "../tensor/dtype.ts";

/** Where a module's tensors live and their dtype (PyTorch's `device=` and `dtype=`). */
export interface ModulePlacement {
  /** Device of the parameters and running statistics. Default `"cpu"`. */
  device?: Device;
  /** dtype of the parameters and running statistics. Default `"float32"`. */
  dtype?: DType;
}

/** The options shared by BatchNorm and SyncBatchNorm, as PyTorch's `_BatchNorm` takes them. */
export interface BatchNormOptions extends ModulePlacement {
  /** C, the channel count (input dim 1): an integer >= 1. */
  numFeatures: number;
  /** Added to the variance. Default 1e-5 (must be > 0). */
  eps?: number;
  /**
   * Weight of the batch statistics in the running update. Default 0.1. `null`: a cumulative
   * moving average (weight 1 / numBatchesTracked), as PyTorch's `momentum=None`.
   */
  momentum?: number | null;
  /** Learnable `weight` (ones) and `bias` (zeros). Default true. */
  affine?: boolean;
  /**
   * Keep `runningMean`/`runningVar`/`numBatchesTracked` and use them in eval mode. Default
   * true. false: no running statistics; batch statistics in both modes.
   */
  trackRunningStats?: boolean;
}

/** The options of GroupNorm, as PyTorch's `nn.GroupNorm` takes them. */
export interface GroupNormOptions extends ModulePlacement {
  /** Number of groups: an integer >= 1 that divides numChannels. */
  numGroups: number;
  /** C, the channel count (input dim 1): an integer >= 1. */
  numChannels: number;
  /** Added to the variance. Default 1e-5 (must be > 0). */
  eps?: number;
  /** Learnable per-channel `weight` (ones) and `bias` (zeros). Default true. */
  affine?: boolean;
}

/**
 * The options of InstanceNorm, as PyTorch's `nn.InstanceNorm1d/2d/3d` (`_InstanceNorm`) takes
 * them: BatchNorm's names with PyTorch's InstanceNorm defaults.
 */
export interface InstanceNormOptions extends ModulePlacement {
  /** C, the channel count (input dim 1): an integer >= 1. */
  numFeatures: number;
  /** Added to the variance. Default 1e-5 (must be > 0). */
  eps?: number;
  /** Weight of the batch's statistics in the running update. Default 0.1 (a number). */
  momentum?: number;
  /** Learnable `weight` (ones) and `bias` (zeros). Default false. */
  affine?: boolean;
  /**
   * Keep `runningMean`/`runningVar` (and PyTorch's never-counted `numBatchesTracked`) and use
   * them in eval mode. Default false: instance statistics in both modes.
   */
  trackRunningStats?: boolean;
}

/** BatchNorm options with every default applied. */
export interface BatchNormConfig {
  readonly numFeatures: number;
  readonly eps: number;
  readonly momentum: number | null;
  readonly affine: boolean;
  readonly trackRunningStats: boolean;
  readonly device: Device;
  readonly dtype: DType;
}

/** GroupNorm options with every default applied. */
export interface GroupNormConfig {
  readonly numGroups: number;
  readonly numChannels: number;
  readonly eps: number;
  readonly affine: boolean;
  readonly device: Device;
  readonly dtype: DType;
}

const count = z.number({
  required_error: "is required (an integer >= 1)",
  invalid_type_error: "must be an integer >= 1",
}).int("must be an integer >= 1").safe("must be a safe integer").gte(1, "must be >= 1");

/** The `dtype` option of every module: a float dtype, default float32. */
export const dtype: z.ZodDefault<z.ZodEnum<[DType, ...DType[]]>> = z.enum(
  FLOAT_DTYPES as [DType, ...DType[]],
  {
    errorMap: () => ({ message: `must be one of ${FLOAT_DTYPES.join(", ")}` }),
  },
).default("float32");

/** The `device` option of every module: "cpu" (the default) or an opened device. */
export const device: z.ZodDefault<z.ZodType<Device>> = z.custom<Device>(
  (v) => v === "cpu" || (typeof v === "object" && v !== null && "allocate" in v),
  { message: 'must be "cpu" or an opened device (openAscend)' },
).default("cpu");

// Each module's options, declared once: strict objects, so an unknown field is refused.
const batchNormShape = {
  numFeatures: count,
  eps: epsilon,
  momentum: z.number({ invalid_type_error: "must be a number or null" })
    .finite("must be finite").nullable().default(0.1),
  affine: flag,
  trackRunningStats: flag,
  device,
  dtype,
};
const batchNormSchema = z.object(batchNormShape).strict();

/** SyncBatchNorm's: BatchNorm's, and the two it checks itself (SyncBatchNormOptions). */
const syncBatchNormSchema = z.object({
  ...batchNormShape,
  processGroup: z.unknown(),
  timeoutMs: z.unknown(),
}).strict();

const off: z.ZodDefault<z.ZodBoolean> = z.boolean({ invalid_type_error: "must be a boolean" })
  .default(false);
const instanceNormSchema = z.object({
  ...batchNormShape,
  momentum: z.number({
    invalid_type_error: "must be a number (PyTorch's InstanceNorm has no cumulative average)",
  }).finite("must be finite").default(0.1),
  affine: off,
  trackRunningStats: off,
}).strict();

const groupNormSchema = z.object({
  numGroups: count,
  numChannels: count,
  eps: epsilon,
  affine: flag,
  device,
  dtype,
}).strict();

/**
 * A module's options parsed with `schema` (a strict object): 161001 without an options object,
 * 161002 naming the option and the rule for a bad value, or naming an unknown option and the
 * closest one the schema declares.
 */
export function parseOptions<S extends z.AnyZodObject>(
  op: string,
  schema: S,
  options: object,
): z.infer<S> {
  return parseScalars(op, schema, argumentsOf(op, options));
}

/**
 * Checks BatchNorm options, or SyncBatchNorm's with `sync` (161001 without them, 161002 for a
 * bad value or an unknown option).
 */
export function batchNormConfig(
  op: string,
  options: BatchNormOptions,
  sync = false,
): BatchNormConfig {
  return parseOptions(op, sync ? syncBatchNormSchema : batchNormSchema, options);
}

/** Checks InstanceNorm options (161001 without them, 161002 for a bad or unknown one). */
export function instanceNormConfig(op: string, options: InstanceNormOptions): BatchNormConfig {
  return parseOptions(op, instanceNormSchema, options);
}

/** Checks GroupNorm options; numChannels must be a multiple of numGroups (as in PyTorch). */
export function groupNormConfig(op: string, options: GroupNormOptions): GroupNormConfig {
  const config = parseOptions(op, groupNormSchema, options);
  if (config.numChannels % config.numGroups !== 0) {
    invalid(
      op,
      "numChannels",
      `(${config.numChannels}) must be divisible by numGroups (${config.numGroups})`,
    );
  }
  return config;
}
