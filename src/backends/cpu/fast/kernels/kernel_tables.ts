/**
 * Which kernel runs a stage: tables indexed by dtype code (0 float32, 1 float16, 2 bfloat16),
 * then the WebAssembly kernel (any dtype) at {@linkcode WASM_ROW} / {@linkcode WASM_PIXEL};
 * row tables have the strided fallback at 3. The tables are built at run time and kept on
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
import {
  batchNormGradPixelsHeap,
  batchNormGradRowHeap,
  groupNormGradPixelsHeap,
  groupNormGradRowHeap,
  normalizePixelsHeap,
  normalizeRowHeap,
  scalePixelsHeap,
  scaleRowHeap,
  statsPixelsHeap,
  statsRowHeap,
  sumsPixelsHeap,
  sumsRowHeap,
} from "./heap_kernels.ts";
import {
  batchNormGradPixelsWasm,
  batchNormGradRowWasm,
  groupNormGradPixelsWasm,
  groupNormGradRowWasm,
  normalizePixelsWasm,
  normalizeRowWasm,
  scalePixelsWasm,
  scaleRowWasm,
  statsPixelsWasm,
  statsRowWasm,
  sumsPixelsWasm,
  sumsRowWasm,
} from "./wasm_kernels.ts";

/** Index of the strided fallback in the row tables. */
export const STRIDED_ROW = 3;

/** Index of the WebAssembly kernel in the row tables. */
export const WASM_ROW = 4;

/** Index of the WebAssembly kernel in the pixel tables. */
export const WASM_PIXEL = 3;

/** Row-table index of the WebAssembly kernels in place (heap_kernels.ts). */
export const HEAP_ROW = 5;

/** Pixel-table index of the WebAssembly kernels in place. */
export const HEAP_PIXEL = 4;

/** The kernel families, one per per-element formula or reduction. */
export type KernelFamily =
  | "sums"
  | "stats"
  | "normalize"
  | "batchNormGrad"
  | "scale"
  | "groupNormGrad";

/** Every kernel by family and dtype code (rows: index 3 = strided fallback, then wasm). */
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
      sums: r([sumsRowF32, sumsRowU16, sumsRowU16, sumsRowStrided, sumsRowWasm, sumsRowHeap]),
      stats: r([
        statsRowF32,
        statsRowU16,
        statsRowU16,
        statsRowStrided,
        statsRowWasm,
        statsRowHeap,
      ]),
      normalize: r([
        normalizeRowF32,
        normalizeRowF16,
        normalizeRowBf16,
        normalizeRowStrided,
        normalizeRowWasm,
        normalizeRowHeap,
      ]),
      batchNormGrad: r([
        batchNormGradRowF32,
        batchNormGradRowF16,
        batchNormGradRowBf16,
        batchNormGradRowStrided,
        batchNormGradRowWasm,
        batchNormGradRowHeap,
      ]),
      scale: r([
        scaleRowF32,
        scaleRowF16,
        scaleRowBf16,
        scaleRowStrided,
        scaleRowWasm,
        scaleRowHeap,
      ]),
      groupNormGrad: r([
        groupNormGradRowF32,
        groupNormGradRowF16,
        groupNormGradRowBf16,
        groupNormGradRowStrided,
        groupNormGradRowWasm,
        groupNormGradRowHeap,
      ]),
    },
    pixels: {
      sums: p([sumsPixelsF32, sumsPixelsU16, sumsPixelsU16, sumsPixelsWasm, sumsPixelsHeap]),
      stats: p([statsPixelsF32, statsPixelsU16, statsPixelsU16, statsPixelsWasm, statsPixelsHeap]),
      normalize: p([
        normalizePixelsF32,
        normalizePixelsF16,
        normalizePixelsBf16,
        normalizePixelsWasm,
        normalizePixelsHeap,
      ]),
      batchNormGrad: p([
        batchNormGradPixelsF32,
        batchNormGradPixelsF16,
        batchNormGradPixelsBf16,
        batchNormGradPixelsWasm,
        batchNormGradPixelsHeap,
      ]),
      scale: p([scalePixelsF32, scalePixelsF16, scalePixelsBf16, scalePixelsWasm, scalePixelsHeap]),
      groupNormGrad: p([
        groupNormGradPixelsF32,
        groupNormGradPixelsF16,
        groupNormGradPixelsBf16,
        groupNormGradPixelsWasm,
        groupNormGradPixelsHeap,
      ]),
    },
  };
}
