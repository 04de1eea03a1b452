/**
 * One thread's WebAssembly kernels (src/backends/cpu/wasm/kernels.wat): an instance whose
 * memory is the host heap (src/tensor/host_heap.ts), so that a kernel reads and writes the
 * tensors that live there in place (every call puts its tensors there first), and this
 * thread's region of the heap, which holds a kernel call's results and per-channel arrays
 * (kernels/channel_stages.ts says where; tfjs-backend-wasm's kernels likewise take heap
 * addresses only).
 *
 * Part of the pool's worker script (see pool/worker_entry.ts).
 *
 * @module
 */

import type { WriteArray } from "./stage_types.ts";

/**
 * A per-channel write of kernels.wat over P pixels of C channels (byte addresses; cs the
 * channel count padded for the constants, dt the dtype code): reads `x` (dy for `pix_scale`),
 * writes `out`, with the per-channel constants at `cst`.
 */
export type PixelWrite = (
  x: number,
  out: number,
  P: number,
  C: number,
  cs: number,
  dt: number,
  cst: number,
) => void;

/** The exports of kernels.wat (byte addresses into its memory; dt = dtype code). */
export interface WasmExports {
  /** Tests: n (a multiple of 4) elements decoded to float32. */
  decode(src: number, dst: number, n: number, dt: number): void;
  /** Tests: n (a multiple of 4) float64 values rounded once to dt (pairs: 8 at a time). */
  encode(src: number, dst: number, n: number, dt: number, pairs: number): void;
  /** res = [sum(dy), sum(dy * (x - mean))]. */
  row_sums(dy: number, x: number, n: number, dt: number, mean: number, res: number): void;
  /** res = [sum(x), sum((x - mean)^2)] with the block's own mean. */
  row_stats(x: number, n: number, dt: number, res: number): void;
  /** out = x * k0 + k1. */
  row_normalize(x: number, out: number, n: number, dt: number, k0: number, k1: number): void;
  /** out = dy * k0 + (x * k1 + k2). */
  row_gradient(dy: number, x: number, out: number, n: number, dt: number, ...k: number[]): void;
  /** out = dy * k0. */
  row_scale(dy: number, out: number, n: number, dt: number, k0: number): void;
  /** Per-channel sums over P pixels (accumulated; means at acc + 16 cs). */
  pix_sums(dy: number, x: number, P: number, C: number, cs: number, dt: number, acc: number): void;
  /** Per-channel (sum, m2) over P pixels (overwritten). */
  pix_stats(x: number, P: number, C: number, cs: number, dt: number, acc: number): void;
  /** Per-channel x * scale + shift (scale, shift at cst). */
  pix_normalize: PixelWrite;
  /** Per-channel dy * a + (x * b + c) (a, b, c at cst): dy, then a pixel write's arguments. */
  pix_gradient(dy: number, ...write: Parameters<PixelWrite>): void;
  /** Per-channel scale (scale at cst). */
  pix_scale: PixelWrite;
}

/**
 * Byte address of the vector constants the kernels keep in their memory, written by the
 * module's data segment (see `constantsToMemory` in scripts/build_wasm.ts, which places
 * them here): in the heap's first page, which holds no tensor.
 */
export const WASM_CONSTANTS_AT = 64;

/** End of the constants' room (exclusive). */
export const WASM_CONSTANTS_END = 1024;

/** Bytes of each thread's region of the heap (module doc). */
export const WASM_REGION_BYTES = 524288;

/** This thread's instance of the kernels on the heap, and views of its region. */
export interface WasmKernels {
  /** The kernels (their memory is the heap). */
  readonly exports: WasmExports;
  /** Byte address of this thread's region in the heap. */
  readonly at: number;
  /** float64 view of the region. */
  readonly f64: Float64Array;
  /** float32 view of the region. */
  readonly f32: Float32Array;
  /** 16-bit view of the region. */
  readonly u16: Uint16Array;
  /** The last Float16Array output and its bits (float16 outputs are copied as bits). */
  outOf: WriteArray | undefined;
  /** Bits of {@linkcode WasmKernels.outOf}. */
  outBits: Uint16Array | undefined;
}

/** The scratch of a thread that runs the WebAssembly kernels. */
export interface WasmScratch {
  /**
   * This thread's kernels: undefined until a stage first needs them, null when unavailable
   * (no WebAssembly kernels, no heap or no region, or no WebAssembly SIMD).
   */
  wasm: WasmKernels | null | undefined;
  /**
   * Whether the stage this thread runs stages its blocks through the region (some tensor
   * is outside the heap, or cannot be read or written there in place); set by stages.ts.
   */
  staged: boolean;
}

/** Instantiates the kernels on `memory` (a shared memory of at most 65536 pages). */
export function instantiateOn(bytes: Uint8Array, memory: WebAssembly.Memory): WasmExports {
  const module = new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>);
  return new WebAssembly.Instance(module, { env: { memory } }).exports as unknown as WasmExports;
}

/**
 * Instantiates the kernels on the heap's memory, with this thread's region at byte `at`;
 * null without bytes, memory or region, or when instantiation fails.
 */
export function instantiateWasmKernels(
  bytes: Uint8Array | undefined,
  memory: WebAssembly.Memory | undefined,
  at: number,
): WasmKernels | null {
  if (!bytes || !memory || at <= 0) return null;
  try {
    const exports = instantiateOn(bytes, memory);
    const buffer = memory.buffer;
    return {
      exports,
      at,
      f64: new Float64Array(buffer, at, WASM_REGION_BYTES / 8),
      f32: new Float32Array(buffer, at, WASM_REGION_BYTES / 4),
      u16: new Uint16Array(buffer, at, WASM_REGION_BYTES / 2),
      outOf: undefined,
      outBits: undefined,
    };
  } catch {
    return null;
  }
}

/**
 * Writes the per-channel constants `p[k]` (C entries each, count = p.length of them) packed
 * as the pixel writes read them (see kernels.wat): for channels 4v..4v+3, constant k's four
 * values at f64[base + 4 (count v + k) + lane], so one vector's constants are one run.
 */
export function packConstants(
  f64: Float64Array,
  base: number,
  p: readonly Float64Array[],
  C: number,
): void {
  const count = p.length;
  for (let k = 0; k < count; k++) {
    const values = p[k];
    for (let c = 0; c < C; c++) f64[base + 4 * (count * (c >> 2) + k) + (c & 3)] = values[c];
  }
}
