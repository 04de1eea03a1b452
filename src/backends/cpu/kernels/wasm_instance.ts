/**
 * One thread's WebAssembly kernels (src/backends/cpu/wasm/kernels.wat): an instance whose
 * memory is the host heap (src/tensor/host_heap.ts), so that a kernel reads and writes the
 * tensors that live there in place, and this thread's region of the heap, which holds the
 * result pair, the per-channel arrays and, for tensors outside the heap, staged blocks: a
 * block of each input is copied into the region, the kernel runs there, and the output
 * block is copied back (tfjs-backend-wasm's kernels likewise take heap addresses only).
 *
 * Region layout: the result pair at byte 0; from {@linkcode WASM_CHANNELS_AT}, up to
 * {@linkcode WASM_CHANNEL_ARRAYS} per-channel float64 arrays of C padded to 4 entries; then
 * the staged blocks (dy, x, out), each followed by {@linkcode WASM_SLACK_BYTES} that a
 * kernel may read or write past its end.
 *
 * Part of the pool's worker script (see codecs.ts).
 *
 * @module
 */

import type { CodecScratch } from "./codecs.ts";
import type { Layout, TensorAddress } from "./layout_types.ts";
import { PIXEL_SEGMENT_ELEMENTS, SEGMENT_ELEMENTS } from "./layout_types.ts";
import type { ReadArray, WriteArray } from "./stage_types.ts";
import { FLOAT32 } from "./stage_types.ts";

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

/** Offset of the per-channel arrays in a region. */
export const WASM_CHANNELS_AT = 64;

/**
 * The most per-channel float64 arrays a pixel kernel keeps in the region: five (the sums'
 * sums, dots and means, and the copy of the sums and dots that kernels.wat keeps for a
 * float16 redo; the gradient's a, b and c).
 */
export const WASM_CHANNEL_ARRAYS = 5;

/** Bytes after each staged block that a kernel may read or write past its end. */
export const WASM_SLACK_BYTES = 64;

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
export interface WasmScratch extends CodecScratch {
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

/** Bytes per element of dtype code `dt`. */
export function elementBytes(dt: number): number {
  return dt === FLOAT32 ? 4 : 2;
}

/** Channels rounded up to the vector width: the length of the per-channel arrays. */
export function paddedChannels(C: number): number {
  return (C + 3) & ~3;
}

/** Whether the region holds {@linkcode WASM_CHANNEL_ARRAYS} arrays of C channels. */
export function channelsFit(C: number): boolean {
  return stagedAt(C) <= WASM_REGION_BYTES;
}

/** Region offset of the staged blocks of a stage with C channels (rows: C = 0). */
export function stagedAt(C: number): number {
  return WASM_CHANNELS_AT + WASM_CHANNEL_ARRAYS * paddedChannels(C) * 8;
}

/** Bytes of a staged block of `elements` elements of dtype `dt`, slack included. */
export function blockBytes(elements: number, dt: number): number {
  return ((elements * elementBytes(dt) + WASM_SLACK_BYTES + 63) >> 6) << 6;
}

/** Elements of the staged row blocks: rows are run segment by segment. */
export const WASM_ROW_BLOCK = SEGMENT_ELEMENTS;

/**
 * Pixels of a staged pixel block of C channels: a multiple of 4 (the sums' four-pixel steps
 * then start where the TypeScript kernels' do), at least 4.
 */
export function pixelsPerBlock(C: number): number {
  return Math.max(4, Math.floor(Math.max(SEGMENT_ELEMENTS, 4 * paddedChannels(C)) / C) & ~3);
}

/**
 * Whether the pixel stages of C channels and dtype `dt` can be staged: the channel arrays
 * and three blocks of {@linkcode pixelsPerBlock} pixels, or a statistics block (up to
 * PIXEL_SEGMENT_ELEMENTS elements, or one pixel, see drivers.ts), fit in the region.
 */
export function stagedPixelsFit(C: number, dt: number): boolean {
  const blocks = 3 * blockBytes(pixelsPerBlock(C) * C, dt);
  const stats = blockBytes(Math.max(PIXEL_SEGMENT_ELEMENTS, C), dt);
  return stagedAt(C) + Math.max(blocks, stats) <= WASM_REGION_BYTES;
}

/** The view of the region blocks of dtype `dt` are copied through. */
export function regionView(w: WasmKernels, dt: number): Float32Array | Uint16Array {
  return dt === FLOAT32 ? w.f32 : w.u16;
}

/** The array an output is copied into: float16 outputs as their bits. */
export function outputBits(w: WasmKernels, out: WriteArray): Float32Array | Uint16Array {
  if (!(out instanceof Float16Array)) return out;
  if (w.outOf !== out) {
    w.outOf = out;
    w.outBits = new Uint16Array(out.buffer, out.byteOffset, out.length);
  }
  return w.outBits!;
}

/** Copies `count` elements from src[from] to dst[to] (same element type). */
export function copyRun(
  dst: Float32Array | Uint16Array,
  to: number,
  src: ReadArray,
  from: number,
  count: number,
): void {
  if (count < 16) {
    for (let j = 0; j < count; j++) dst[to + j] = src[from + j];
  } else {
    (dst as Uint16Array).set((src as Uint16Array).subarray(from, from + count), to);
  }
}

/**
 * Copies pixels [q, q + count) of a tensor between its array and a packed block (pixel
 * stride C), as few runs as the tensor's strides allow: `toBlock` copies in, else out.
 */
export function copyPixels(
  layout: Layout,
  at: TensorAddress,
  tensor: ReadArray,
  block: Float32Array | Uint16Array,
  blockIndex: number,
  q: number,
  count: number,
  toBlock: boolean,
): void {
  const C = layout.C;
  const inner = layout.inner;
  let n = Math.floor(q / inner);
  let i = q - n * inner;
  const dense = inner === 1 || at.strideI === C;
  const denseAll = dense && (inner === 1 ? at.strideN === C : at.strideN === inner * C);
  let left = count;
  let b = blockIndex;
  while (left > 0) {
    const run = denseAll ? left : dense ? Math.min(left, inner - i) : 1;
    const t = at.base + n * at.strideN + i * at.strideI;
    if (toBlock) copyRun(block, b, tensor, t, run * C);
    else copyRun(tensor as Float32Array | Uint16Array, t, block, b, run * C);
    b += run * C;
    left -= run;
    i += run;
    while (i >= inner && inner > 0) {
      i -= inner;
      n++;
    }
  }
}

/**
 * Copies `count` per-channel arrays `p[j]` (C entries) to f64[base + j cs] (cs = C padded
 * to 4), where the pixel reductions keep their accumulators and means.
 */
export function channelArraysTo(
  f64: Float64Array,
  base: number,
  p: readonly Float64Array[],
  count: number,
  C: number,
): void {
  const cs = paddedChannels(C);
  for (let j = 0; j < count; j++) f64.set(p[j].subarray(0, C), base + j * cs);
}

/** Copies the first two per-channel arrays at f64[base + j cs] back to p[0], p[1]. */
export function channelPairFrom(
  f64: Float64Array,
  base: number,
  p: readonly Float64Array[],
  C: number,
): void {
  const cs = paddedChannels(C);
  p[0].set(f64.subarray(base, base + C));
  p[1].set(f64.subarray(base + cs, base + cs + C));
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
