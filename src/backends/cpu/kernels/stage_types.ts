/**
 * Stages: the unit of work the CPU backend runs, on the calling thread or split over the
 * worker pool. A stage is plain data (typed arrays, numbers), so it can be posted to a
 * worker as is: typed arrays over SharedArrayBuffers arrive as views of the same memory.
 * A stage covers `items` work items; a thread runs a contiguous range of them.
 *
 * Part of the pool's worker script (see pool/worker_entry.ts).
 *
 * @module
 */

import type { Layout, TensorAddress } from "./layout_types.ts";

/** Element type code of a stage's data tensors: float32, float16, bfloat16. */
export type DataCode = 0 | 1 | 2;

/** float32 data. */
export const FLOAT32 = 0;
/** float16 data. */
export const FLOAT16 = 1;
/** bfloat16 data. */
export const BFLOAT16 = 2;

/**
 * The kernels' code for bfloat16 data in a kernel call whose float constants hold no NaN:
 * its stores round without the NaN lanes' choice, to the same bits (wasm/kernels.wat
 * `$bits4` states why). The drivers pass it for such writes ({@linkcode writeCode}).
 */
export const BFLOAT16_NO_NAN_CONSTANTS = 3;

/**
 * The kernels' code for float16 data in a write that computes no NaN: its data finite (its
 * constants come from sums over it, WriteStage.dataSums, and are finite) and its constants at
 * most {@linkcode NO_NAN_CONSTANT_BOUND} in magnitude, so that no float32 value of the write
 * overflows (float16 data is below 2^16, a given mean at most 2^60: a write's terms, such as
 * (x - k0) * k1 + k2 or k3 * dy - k2 - (x - k0) * k1, stay below 2^123). Its stores skip the
 * NaN lanes' choice (wasm/kernels.wat `$f16bits4_finite`).
 */
export const FLOAT16_NO_NAN = 4;

/** The largest constant magnitude of a {@linkcode FLOAT16_NO_NAN} write: 2^60. */
export const NO_NAN_CONSTANT_BOUND = 2 ** 60;

/** A dtype code the kernels take: a {@linkcode DataCode}, 3 or 4 (the codes above). */
export type KernelCode =
  | DataCode
  | typeof BFLOAT16_NO_NAN_CONSTANTS
  | typeof FLOAT16_NO_NAN;

/**
 * The kernels' code for `dtype` data in a kernel call whose float constants include a NaN when
 * `nanConstant`: {@linkcode BFLOAT16_NO_NAN_CONSTANTS} for bfloat16 without one, else `dtype`.
 */
export function constantsCode(dtype: DataCode, nanConstant: boolean): KernelCode {
  return dtype === BFLOAT16 && !nanConstant ? BFLOAT16_NO_NAN_CONSTANTS : dtype;
}

/**
 * The kernels' code for a write of `dtype` data whose constants are `count` values of `q`,
 * `stride` apart from `from`: {@linkcode BFLOAT16_NO_NAN_CONSTANTS} for bfloat16 when none is
 * NaN; {@linkcode FLOAT16_NO_NAN} for float16 when they come from sums over the data
 * (`dataSums`) and are all finite and bounded; else `dtype`.
 */
export function writeCode(
  dtype: DataCode,
  q: ArrayLike<number>,
  from: number,
  stride: number,
  count: number,
  dataSums: boolean,
): KernelCode {
  if (dtype === BFLOAT16) {
    let nan = false;
    for (let j = 0; j < count && !nan; j++) nan = Number.isNaN(q[from + j * stride]);
    return constantsCode(dtype, nan);
  }
  if (dtype !== FLOAT16 || !dataSums) return dtype;
  for (let j = 0; j < count; j++) {
    // False for NaN too.
    if (!(Math.abs(q[from + j * stride]) <= NO_NAN_CONSTANT_BOUND)) return dtype;
  }
  return FLOAT16_NO_NAN;
}

/** What a stage reads: Float32Array for float32, the Uint16Array bits otherwise. */
export type ReadArray = Float32Array | Uint16Array;

/** What a stage writes: Float32Array, Float16Array (float16) or Uint16Array (bfloat16). */
export type WriteArray = Float32Array | Float16Array | Uint16Array;

/**
 * What the row and pixel kernels read from a stage: the geometry, the dtype, and the data
 * tensors with their addresses (an unused address may be any tensor's).
 */
export interface KernelStage {
  /** Shared geometry and loop structure. */
  readonly layout: Layout;
  /** Element type of the data tensors. */
  readonly dtype: DataCode;
  /** dL/dy, when the stage reads it. */
  readonly dy?: ReadArray;
  /** Where dy's elements are. */
  readonly dyAt: TensorAddress;
  /** x, when the stage reads it. */
  readonly x?: ReadArray;
  /** Where x's elements are. */
  readonly xAt: TensorAddress;
  /** The data output, when the stage writes one. */
  readonly out?: WriteArray;
  /** Where the output's elements are. */
  readonly outAt: TensorAddress;
  /**
   * Heap byte address of dy's array (element 0) when it lives in the host heap, else -1
   * (set by the calling thread before each run; see wasm_kernels.ts).
   */
  dyHeap: number;
  /** Heap byte address of x's array, or -1. */
  xHeap: number;
  /** Heap byte address of the output's array, or -1. */
  outHeap: number;
}

/** The stage a row kernel receives. */
export type RowStage = KernelStage;

/** The stage a pixel kernel receives. */
export type PixelStage = KernelStage;

/** Fields every stage has. */
export interface StageBase extends KernelStage {
  /** Number of work items (a function of the shape only). */
  readonly items: number;
}

/**
 * Per-channel sum(dy) and sum(dy * (x - mean[c])) into per-item partials: rows/strided
 * items at partials[2 * item], pixel blocks at partials[2C * block + c] (+ C for the second).
 */
export interface SumsStage extends StageBase {
  /**
   * Stage kind: "sums", or "swishSums" (aclnnGroupNormSwishGrad, rows only: sum(dYNew) and
   * sum(xhat * dYNew) from the six per-(n, c) `constants` of wasm/channel_swish_grad.wat).
   */
  readonly op: "sums" | "swishSums";
  /** Per-channel mean subtracted from x ("sums"). */
  readonly mean: Float64Array;
  /** "swishSums": the packed per-(n, c) constants, constants[j * C + c] as a write's. */
  readonly constants?: Float64Array;
  /**
   * "swishSums", optional: where the stage stores each element's dYNew for the "swishGrad"
   * write that follows it (kernels/channel_stages.ts swishCacheRow says where each row's is).
   */
  readonly cache?: Float32Array;
  /** Output partials (layout above). */
  readonly partials: Float64Array;
}

/**
 * Per-channel (sum, m2) of x into per-item partials (same layout as {@linkcode SumsStage}),
 * m2 being the squared deviations from the item's own mean.
 */
export interface StatsStage extends StageBase {
  /** Stage kind. */
  readonly op: "stats";
  /** Output partials. */
  readonly partials: Float64Array;
}

/**
 * A per-channel write: every output element from constants packed per channel,
 * constants[j * C + c] for the j-th of `count` (see formulas.ts): normalize (mean, scale,
 * shift) writes (x - mean) * scale + shift, gradient (a, b, c, d) writes
 * (dy * d - c) - (x - a) * b, scale (scale) writes dy * scale, swish (mean, scale, shift,
 * -swishScale) writes g / (1 + exp(-swishScale * g)) of the normalize value g
 * (wasm/channel_swish.wat), swishGrad (nine, rows only) writes aclnnGroupNormSwishGrad's dx
 * (wasm/channel_swish_grad.wat).
 */
export interface WriteStage extends StageBase {
  /** Stage kind. */
  readonly op: "normalize" | "gradient" | "scale" | "swish" | "swishGrad";
  /** Packed per-channel constants. */
  readonly constants: Float64Array;
  /**
   * Whether every constant of a channel comes from sums over the very elements the write
   * reads of it (statistics or gradient sums of this call), so that a NaN or infinite element
   * makes one of them NaN or infinite: a float16 write whose constants are then finite and
   * bounded reads only finite data and computes no NaN ({@linkcode writeCode}).
   */
  readonly dataSums: boolean;
  /**
   * "swishGrad", optional: the dYNew its "swishSums" stage stored (same array, same layout),
   * read instead of computed again.
   */
  readonly cache?: Float32Array;
}

/**
 * GroupNorm fused per sample (kernels/group_norm_samples.ts): a work item is a run of whole
 * samples, for each of which it runs the reduction (a stats or sums stage over the sample's
 * items), the sample's constants from its sums (float64, as the calling thread computes them
 * between the two stages of the unfused call), then the write (normalize, swish or gradient)
 * while the sample's data is still in this core's cache; no thread waits for another between
 * the two. The arrays are the unfused stages' (`partials`, `constants`, `mean`) plus what the
 * constants need and give: `gamma`, `beta` and the per-group and per-(n, c) results.
 */
export interface GroupNormSamplesStage extends StageBase {
  /**
   * Stage kind: "groupNormSamples" (stats, then the normalize write), "groupNormSwishSamples"
   * (stats, then the swish write with `swishScale`), "groupNormBackwardSamples" (sums, then the
   * gradient write).
   */
  readonly op: "groupNormSamples" | "groupNormSwishSamples" | "groupNormBackwardSamples";
  /** Groups per sample (C a multiple of it). */
  readonly group: number;
  /** The forward's eps, as the C float CANN's kernels receive. */
  readonly eps: number;
  /** The swish write's scale (aclnnGroupNormSilu: 1). */
  readonly swishScale: number;
  /** Backward: per-(n, c) means subtracted from x by the sums, filled by the items. */
  readonly mean: Float64Array;
  /** The reduction's partials (its stats or sums stage's layout). */
  readonly partials: Float64Array;
  /** The write's per-(n, c) constants (a perSample write stage's layout). */
  readonly constants: Float64Array;
  /** Per-channel weights (C). */
  readonly gamma: Float64Array;
  /** Per-channel shifts (C; forward). */
  readonly beta: Float64Array;
  /**
   * Per (n, g), ng = n * group + g. Forward, written: mean at [ng], biased variance at
   * [G + ng], rstd at [2G + ng] (G = N * group). Backward, read: mean at [ng], rstd at [G + ng].
   */
  readonly groupStats: Float64Array;
  /**
   * Per (n, c), written: each sample's merged partials, the first at [n * C + c], the second at
   * [N * C + n * C + c] (forward: sum(x) and m2; backward: sum(dy) and sum(dy * (x - mean))).
   */
  readonly pairs: Float64Array;
}

/** The kinds of row-norm stage. */
export type RowNormOp =
  | "layerNormRows"
  | "layerNormBackwardRows"
  | "rmsNormRows"
  | "rmsNormGradRows"
  | "addRmsNormRows"
  | "addLayerNormRows"
  | "addLayerNormGradRows"
  | "addRmsNormCastRows"
  | "adaLayerNormRows"
  | "adaLayerNormGradRows";

/** A row-norm stage: `items` items of `constants[ROW_PER]` rows each (the last may be short). */
export interface RowNormStage extends StageBase {
  /** Stage kind. */
  readonly op: RowNormOp;
  /** The parameters (ROW_* indices of row_norm_stage.ts), in the heap. */
  readonly constants: Float64Array;
}

/** Any stage. */
export type Stage =
  | SumsStage
  | StatsStage
  | WriteStage
  | GroupNormSamplesStage
  | RowNormStage;

/** A stage's fields as its builder gives them (the heap addresses are set before each run). */
export type StageFields<S extends Stage> = Omit<S, "dyHeap" | "xHeap" | "outHeap">;

/**
 * `fields` as a stage object with every stage field present, in one fixed order: all stages
 * then share one hidden class, so the kernels' property reads stay monomorphic and V8 does
 * not deoptimize them when a stage of another kind comes along ("dependent field type
 * changed" otherwise).
 */
export function uniformStage<S extends Stage>(fields: StageFields<S>): S {
  const record = {
    op: fields.op,
    layout: fields.layout,
    dtype: fields.dtype,
    items: fields.items,
    dy: undefined,
    dyAt: fields.dyAt,
    x: undefined,
    xAt: fields.xAt,
    out: undefined,
    outAt: fields.outAt,
    dyHeap: -1,
    xHeap: -1,
    outHeap: -1,
    mean: undefined,
    partials: undefined,
    constants: undefined,
    cache: undefined,
    group: 0,
    eps: NaN,
    swishScale: NaN,
    dataSums: false,
    gamma: undefined,
    beta: undefined,
    groupStats: undefined,
    pairs: undefined,
  };
  // Object.assign writes the given fields in place, keeping the literal's field order.
  return Object.assign(record, fields) as unknown as S;
}
