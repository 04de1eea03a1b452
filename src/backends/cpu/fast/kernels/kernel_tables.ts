/**
 * Which kernel runs a stage: tables indexed by dtype code (0 float32, 1 float16, 2 bfloat16;
 * row tables have the strided fallback at 3). The tables are built at run time and kept on
 * the thread's scratch, so the drivers receive kernels as loaded values, never as
 * compile-time constants (see drivers.ts for why that matters).
 *
 * Worker-safe (see codecs.ts).
 *
 * @module
 */

import type { PixelKernel, RowKernel } from "./drivers.ts";
import {
  batchNormGradPixelsBf16,
  batchNormGradPixelsF16,
  batchNormGradPixelsF32,
  groupNormGradPixelsBf16,
  groupNormGradPixelsF16,
  groupNormGradPixelsF32,
  normalizePixelsBf16,
  normalizePixelsF16,
  normalizePixelsF32,
  scalePixelsBf16,
  scalePixelsF16,
  scalePixelsF32,
  statsPixelsF32,
  statsPixelsU16,
  sumsPixelsF32,
  sumsPixelsU16,
} from "./pixel_kernels.ts";
import {
  batchNormGradRowBf16,
  batchNormGradRowF16,
  batchNormGradRowF32,
  groupNormGradRowBf16,
  groupNormGradRowF16,
  groupNormGradRowF32,
  normalizeRowBf16,
  normalizeRowF16,
  normalizeRowF32,
  scaleRowBf16,
  scaleRowF16,
  scaleRowF32,
  statsRowF32,
  statsRowU16,
  sumsRowF32,
  sumsRowU16,
} from "./row_kernels.ts";
import {
  batchNormGradRowStrided,
  groupNormGradRowStrided,
  normalizeRowStrided,
  scaleRowStrided,
  statsRowStrided,
  sumsRowStrided,
} from "./strided_kernels.ts";

/** The kernel families, one per per-element formula or reduction. */
export type KernelFamily =
  | "sums"
  | "stats"
  | "normalize"
  | "batchNormGrad"
  | "scale"
  | "groupNormGrad";

/** Every kernel by family and dtype code (rows: index 3 = strided fallback). */
export interface KernelTables {
  /** Row kernels. */
  readonly rows: Record<KernelFamily, RowKernel[]>;
  /** Pixel kernels. */
  readonly pixels: Record<KernelFamily, PixelKernel[]>;
}

/** Builds the tables (once per thread). */
export function kernelTables(): KernelTables {
  const r = (f: unknown[]) => f as RowKernel[];
  const p = (f: unknown[]) => f as PixelKernel[];
  return {
    rows: {
      sums: r([sumsRowF32, sumsRowU16, sumsRowU16, sumsRowStrided]),
      stats: r([statsRowF32, statsRowU16, statsRowU16, statsRowStrided]),
      normalize: r([normalizeRowF32, normalizeRowF16, normalizeRowBf16, normalizeRowStrided]),
      batchNormGrad: r([
        batchNormGradRowF32,
        batchNormGradRowF16,
        batchNormGradRowBf16,
        batchNormGradRowStrided,
      ]),
      scale: r([scaleRowF32, scaleRowF16, scaleRowBf16, scaleRowStrided]),
      groupNormGrad: r([
        groupNormGradRowF32,
        groupNormGradRowF16,
        groupNormGradRowBf16,
        groupNormGradRowStrided,
      ]),
    },
    pixels: {
      sums: p([sumsPixelsF32, sumsPixelsU16, sumsPixelsU16]),
      stats: p([statsPixelsF32, statsPixelsU16, statsPixelsU16]),
      normalize: p([normalizePixelsF32, normalizePixelsF16, normalizePixelsBf16]),
      batchNormGrad: p([batchNormGradPixelsF32, batchNormGradPixelsF16, batchNormGradPixelsBf16]),
      scale: p([scalePixelsF32, scalePixelsF16, scalePixelsBf16]),
      groupNormGrad: p([groupNormGradPixelsF32, groupNormGradPixelsF16, groupNormGradPixelsBf16]),
    },
  };
}
