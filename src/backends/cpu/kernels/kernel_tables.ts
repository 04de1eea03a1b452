/**
 * Which kernel runs a stage: tables indexed by dtype code (0 float32, 1 float16, 2 bfloat16),
 * then the WebAssembly kernel (any dtype) at {@linkcode WASM_ROW} / {@linkcode WASM_PIXEL};
 * row tables have the strided fallback at 3. The tables are built at run time and kept on
 * the thread's scratch, so the drivers receive kernels as loaded values, never as
 * compile-time constants (see drivers.ts for why that matters).
 *
 * Part of the pool's worker script (see codecs.ts).
 *
 * @module
 */

import type { PixelKernel, RowKernel } from "./drivers.ts";
import type { HeapScratch } from "./heap_kernels.ts";
import type { WasmScratch } from "./wasm_kernels.ts";
import {
  gradientPixelsBf16,
  gradientPixelsF16,
  gradientPixelsF32,
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
  gradientRowBf16,
  gradientRowF16,
  gradientRowF32,
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
  gradientRowStrided,
  normalizeRowStrided,
  scaleRowStrided,
  statsRowStrided,
  sumsRowStrided,
} from "./strided_kernels.ts";
import {
  gradientPixelsHeap,
  gradientRowHeap,
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
  gradientPixelsWasm,
  gradientRowWasm,
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
  | "gradient"
  | "scale";

/** The scratch every kernel of the tables can read (a thread's state extends it). */
export type KernelScratch = WasmScratch & HeapScratch;

/** Every kernel by family and dtype code (rows: index 3 = strided fallback, then wasm). */
export interface KernelTables {
  /** Row kernels. */
  readonly rows: Record<KernelFamily, RowKernel<KernelScratch>[]>;
  /** Pixel kernels. */
  readonly pixels: Record<KernelFamily, PixelKernel<KernelScratch>[]>;
}

/** Builds the tables (once per thread). */
export function kernelTables(): KernelTables {
  const r = (f: unknown[]) => f as RowKernel<KernelScratch>[];
  const p = (f: unknown[]) => f as PixelKernel<KernelScratch>[];
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
      gradient: r([
        gradientRowF32,
        gradientRowF16,
        gradientRowBf16,
        gradientRowStrided,
        gradientRowWasm,
        gradientRowHeap,
      ]),
      scale: r([
        scaleRowF32,
        scaleRowF16,
        scaleRowBf16,
        scaleRowStrided,
        scaleRowWasm,
        scaleRowHeap,
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
      gradient: p([
        gradientPixelsF32,
        gradientPixelsF16,
        gradientPixelsBf16,
        gradientPixelsWasm,
        gradientPixelsHeap,
      ]),
      scale: p([scalePixelsF32, scalePixelsF16, scalePixelsBf16, scalePixelsWasm, scalePixelsHeap]),
    },
  };
}
