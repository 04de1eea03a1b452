/**
 * The names of the CPU benchmark cases (bench/cpu_cases.ts builds them): operators, shapes and
 * layouts, apart from the library so that a script's usage text and flag checks can list them
 * before it loads.
 *
 * @module
 */

/**
 * The public operators, by the names the comparison prints: the 10 of the BatchNorm family and
 * GroupNorm, and groupNormSilu (a fused operator of issue 39, against PyTorch's GroupNorm then
 * SiLU).
 */
export const CPU_OPS = [
  "batchNormReduceBackward",
  "batchNormBackward",
  "batchNormBackwardDescriptor",
  "groupNormBackward",
  "batchNormStats",
  "batchNormGatherStatsWithCounts",
  "batchNormElemt",
  "batchNormElemtBackward",
  "batchNorm",
  "groupNorm",
  "groupNormSilu",
] as const;

/** One of {@linkcode CPU_OPS}. */
export type CpuOp = typeof CPU_OPS[number];

/** Data layouts: NCHW, or channels-last (NHWC memory viewed as NCHW). */
export type BenchLayout = "contiguous" | "channels_last";

/** The shapes of issue 9: small, medium, large. */
export const CPU_SHAPES: readonly (readonly number[])[] = [
  [4, 16, 8, 8],
  [8, 64, 32, 32],
  [32, 64, 56, 56],
];
