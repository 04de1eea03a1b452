/**
 * The kernels that can run a stage: a {@linkcode KernelSet} per family and layout, whose
 * members stages.ts's `choose` names. The sets are built at run time and kept on the
 * thread's state, so the drivers receive kernels as loaded values, never as compile-time
 * constants (see drivers.ts for why that matters).
 *
 * Part of the pool's worker script (see codecs.ts).
 *
 * @module
 */

import type { PixelKernel, RowKernel } from "./drivers.ts";
import type { WasmScratch } from "./wasm_instance.ts";
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

/** The kernel families, one per per-element formula or reduction. */
export type KernelFamily =
  | "sums"
  | "stats"
  | "normalize"
  | "gradient"
  | "scale";

/** The name of one kernel of a {@linkcode KernelSet}: what stages.ts's `choose` returns. */
export type KernelName = "float32" | "float16" | "bfloat16" | "strided" | "wasm";

/**
 * The kernels of one family: TypeScript per dtype, the strided fallback (row families), and
 * the WebAssembly kernel (any dtype, in place or staged: wasm_kernels.ts). All give the same
 * bits, so a choice changes speed only.
 */
export interface KernelSet<K> {
  /** The TypeScript kernel of each dtype. */
  readonly ts: { readonly float32: K; readonly float16: K; readonly bfloat16: K };
  /** The strided fallback (row families only). */
  readonly strided: K | undefined;
  /** The WebAssembly kernel. */
  readonly wasm: K;
}

/** The scratch every kernel of the sets can read (a thread's state extends it). */
export type KernelScratch = WasmScratch;

/** Every kernel by family: row kernels and pixel kernels. */
export interface KernelSets {
  /** Row kernels. */
  readonly rows: Readonly<Record<KernelFamily, KernelSet<RowKernel<KernelScratch>>>>;
  /** Pixel kernels. */
  readonly pixels: Readonly<Record<KernelFamily, KernelSet<PixelKernel<KernelScratch>>>>;
}

/** The kernel named `name` of `set`. */
export function kernelOf<K>(set: KernelSet<K>, name: KernelName): K {
  if (name === "wasm") return set.wasm;
  if (name === "strided") return set.strided!;
  return set.ts[name];
}

/** A set of kernels (the casts: each kernel reads what its own scratch type names). */
function set<K>(
  float32: unknown,
  float16: unknown,
  bfloat16: unknown,
  wasm: unknown,
  strided?: unknown,
): KernelSet<K> {
  return { ts: { float32, float16, bfloat16 }, strided, wasm } as KernelSet<K>;
}

/**
 * Builds the sets (once per thread, kept on its state, so that the drivers receive kernels
 * as loaded values, never as compile-time constants: see drivers.ts).
 */
export function kernelSets(): KernelSets {
  type R = RowKernel<KernelScratch>;
  type P = PixelKernel<KernelScratch>;
  return {
    rows: {
      sums: set<R>(sumsRowF32, sumsRowU16, sumsRowU16, sumsRowWasm, sumsRowStrided),
      stats: set<R>(statsRowF32, statsRowU16, statsRowU16, statsRowWasm, statsRowStrided),
      normalize: set<R>(
        normalizeRowF32,
        normalizeRowF16,
        normalizeRowBf16,
        normalizeRowWasm,
        normalizeRowStrided,
      ),
      gradient: set<R>(
        gradientRowF32,
        gradientRowF16,
        gradientRowBf16,
        gradientRowWasm,
        gradientRowStrided,
      ),
      scale: set<R>(scaleRowF32, scaleRowF16, scaleRowBf16, scaleRowWasm, scaleRowStrided),
    },
    pixels: {
      sums: set<P>(sumsPixelsF32, sumsPixelsU16, sumsPixelsU16, sumsPixelsWasm),
      stats: set<P>(statsPixelsF32, statsPixelsU16, statsPixelsU16, statsPixelsWasm),
      normalize: set<P>(
        normalizePixelsF32,
        normalizePixelsF16,
        normalizePixelsBf16,
        normalizePixelsWasm,
      ),
      gradient: set<P>(
        gradientPixelsF32,
        gradientPixelsF16,
        gradientPixelsBf16,
        gradientPixelsWasm,
      ),
      scale: set<P>(scalePixelsF32, scalePixelsF16, scalePixelsBf16, scalePixelsWasm),
    },
  };
}
