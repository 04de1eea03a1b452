/**
 * The WebAssembly kernels in place: row and pixel kernels (same signatures as
 * row_kernels.ts and pixel_kernels.ts) for stages whose tensors all live in the host heap
 * (src/tensor/host_heap.ts). Each thread has a second instance of kernels.wat whose memory is
 * the heap itself, so a kernel reads and writes the tensors where they are; only the
 * per-channel arrays and the result pair go through this thread's region of the heap.
 * Measured (2-vCPU AMD EPYC, Deno 2.9.6, float32 rows of 1024): row sums 0.64 ns per
 * element in place against 1.15-1.35 through copies (wasm_kernels.ts) and 1.4-1.5 in
 * TypeScript; the BatchNorm gradient 1.03 in place.
 *
 * The calls see the same elements in the same order as the copying kernels (sums by
 * segments of SEGMENT_ELEMENTS, pixel sums from the item's first pixel in steps of four), so
 * all three kinds give the same bits.
 *
 * In place, a kernel must not write past its row or pixel run: the writing kernels handle
 * whole vectors of four, so stages.ts picks these kernels for writes only when rows (or the
 * channels of a pixel) are a multiple of 4 long. Reads past the end stay in the block's slack.
 *
 * Part of the pool's worker script (see codecs.ts).
 *
 * @module
 */

import type { CodecScratch } from "./codecs.ts";
import type { Layout, TensorAddress } from "./layout_types.ts";
import { SEGMENT_ELEMENTS } from "./layout_types.ts";
import { mergeMoments } from "./moments.ts";
import type { PixelStage, RowStage } from "./stage_types.ts";
import { FLOAT32 } from "./stage_types.ts";
import type { WasmExports } from "./wasm_kernels.ts";
import {
  callPixelWrite,
  callRowWrite,
  channelArraysTo,
  channelPairFrom,
  instantiateOn,
  packConstants,
  paddedChannels,
} from "./wasm_kernels.ts";

/**
 * Bytes of each thread's region of the heap: the result pair, then per-channel arrays (five
 * arrays of up to 3272 channels).
 */
export const HEAP_REGION_BYTES = 131072;

/** Offset of the per-channel arrays in a region (the result pair is at 0). */
const HEAP_CHANNELS_OFFSET = 64;

/** This thread's instance of the kernels on the heap. */
export interface HeapKernels {
  /** The kernels (their memory is the heap). */
  readonly exports: WasmExports;
  /** Byte address of this thread's region in the heap. */
  readonly at: number;
  /** float64 view of the region. */
  readonly region: Float64Array;
}

/** The scratch of a thread that runs kernels in place: its instance on the heap. */
export interface HeapScratch extends CodecScratch {
  /**
   * This thread's kernels on the heap: undefined until a stage first needs them, null when
   * unavailable (no WebAssembly kernels, no heap or no region).
   */
  heapKernels: HeapKernels | null | undefined;
}

/**
 * Instantiates the kernels on the heap's memory, with this thread's region at byte `at`;
 * null without bytes, memory or region, or when instantiation fails.
 */
export function instantiateHeapKernels(
  bytes: Uint8Array | undefined,
  memory: WebAssembly.Memory | undefined,
  at: number,
): HeapKernels | null {
  if (!bytes || !memory || at <= 0) return null;
  try {
    const exports = instantiateOn(bytes, memory);
    const region = new Float64Array(memory.buffer, at, HEAP_REGION_BYTES / 8);
    return { exports, at, region };
  } catch {
    return null;
  }
}

/**
 * The most per-channel float64 arrays a pixel kernel keeps in the region: five (the sums'
 * sums, dots and means, and the copy of the sums and dots that kernels.wat keeps for a
 * float16 redo; the gradient's a, b and c).
 */
export const HEAP_CHANNEL_ARRAYS = 5;

/** Whether `count` per-channel arrays of C channels fit in a region. */
export function heapChannelsFit(C: number, count: number): boolean {
  return HEAP_CHANNELS_OFFSET + count * paddedChannels(C) * 8 <= HEAP_REGION_BYTES;
}

/** Bytes per element of dtype code `dt`. */
export function elementBytes(dt: number): number {
  return dt === FLOAT32 ? 4 : 2;
}

/** Heap byte address of row (n, c)'s first element of a tensor at heap byte `heap`. */
function heapRow(heap: number, at: TensorAddress, n: number, c: number, dt: number): number {
  return heap + (at.base + n * at.strideN + c * at.strideC) * elementBytes(dt);
}

/**
 * Whether a tensor's pixels follow each other packed (pixel stride C across every n), as
 * the pixel kernels read them in place.
 */
export function densePixels(layout: Layout, at: TensorAddress): boolean {
  const C = layout.C;
  const inner = layout.inner;
  return (inner === 1 || at.strideI === C) && (layout.N === 1 || at.strideN === inner * C);
}

// ---------------------------------------------------------------------------------------
// Row kernels (see row_kernels.ts for the k conventions)

/** k[1] += sum(dy), k[2] += sum(dy * (x - k[0])) over row (n, c), by segments. */
export function sumsRowHeap(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: HeapScratch,
): void {
  const h = scratch.heapKernels!;
  const dt = s.dtype;
  const b = elementBytes(dt);
  const d = heapRow(s.dyHeap, s.dyAt, n, c, dt);
  const x = heapRow(s.xHeap, s.xAt, n, c, dt);
  const length = s.layout.inner;
  const r = h.region;
  for (let start = 0; start < length; start += SEGMENT_ELEMENTS) {
    const count = Math.min(SEGMENT_ELEMENTS, length - start);
    h.exports.row_sums(d + start * b, x + start * b, count, dt, k[0], h.at);
    k[1] += r[0];
    k[2] += r[1];
  }
}

/** Merges row (n, c)'s statistics into k[1] (sum), k[2] (m2), k[3] (count), by segments. */
export function statsRowHeap(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: HeapScratch,
): void {
  const h = scratch.heapKernels!;
  const dt = s.dtype;
  const b = elementBytes(dt);
  const x = heapRow(s.xHeap, s.xAt, n, c, dt);
  const length = s.layout.inner;
  const r = h.region;
  for (let start = 0; start < length; start += SEGMENT_ELEMENTS) {
    const count = Math.min(SEGMENT_ELEMENTS, length - start);
    h.exports.row_stats(x + start * b, count, dt, h.at);
    mergeMoments(k, 1, 2, k[3], r[0], r[1], count);
    k[3] += count;
  }
}

/**
 * A row write in place over row (n, c) with constants k: kernel 0 normalize, 1 gradient
 * or 2 scale (the whole row in one call: writes are
 * element-wise, so any split gives the same bits).
 */
function writeRowHeap(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  h: HeapKernels,
  kernel: number,
): void {
  const dt = s.dtype;
  const dy = s.dy ? heapRow(s.dyHeap, s.dyAt, n, c, dt) : 0;
  const x = s.x ? heapRow(s.xHeap, s.xAt, n, c, dt) : 0;
  const out = heapRow(s.outHeap, s.outAt, n, c, dt);
  callRowWrite(h.exports, kernel, dy, x, out, s.layout.inner, dt, k);
}

/** out = x * k[0] + k[1] over row (n, c). */
export function normalizeRowHeap(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: HeapScratch,
): void {
  writeRowHeap(s, n, c, k, scratch.heapKernels!, 0);
}

/** out = dy * k[0] + (x * k[1] + k[2]) over row (n, c). */
export function gradientRowHeap(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: HeapScratch,
): void {
  writeRowHeap(s, n, c, k, scratch.heapKernels!, 1);
}

/** out = dy * k[0] over row (n, c). */
export function scaleRowHeap(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: HeapScratch,
): void {
  writeRowHeap(s, n, c, k, scratch.heapKernels!, 2);
}

// ---------------------------------------------------------------------------------------
// Pixel kernels (see pixel_kernels.ts for the p conventions; pixels are packed)

/** Heap byte address of pixel q of a packed tensor at heap byte `heap`. */
function heapPixel(s: PixelStage, heap: number, at: TensorAddress, q: number): number {
  return heap + (at.base + q * s.layout.C) * elementBytes(s.dtype);
}

/** Per channel over pixels [q0, q1): p[0] += sum(dy), p[1] += sum(dy * (x - p[2])). */
export function sumsPixelsHeap(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: HeapScratch,
): void {
  const h = scratch.heapKernels!;
  const C = s.layout.C;
  channelArraysTo(h.region, HEAP_CHANNELS_OFFSET >> 3, p, 3, C);
  h.exports.pix_sums(
    heapPixel(s, s.dyHeap, s.dyAt, q0),
    heapPixel(s, s.xHeap, s.xAt, q0),
    q1 - q0,
    C,
    paddedChannels(C),
    s.dtype,
    h.at + HEAP_CHANNELS_OFFSET,
  );
  channelPairFrom(h.region, HEAP_CHANNELS_OFFSET >> 3, p, C);
}

/** Two-pass statistics per channel over pixels [q0, q1): p[0] = sum(x), p[1] = m2. */
export function statsPixelsHeap(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: HeapScratch,
): void {
  const h = scratch.heapKernels!;
  const C = s.layout.C;
  h.exports.pix_stats(
    heapPixel(s, s.xHeap, s.xAt, q0),
    q1 - q0,
    C,
    paddedChannels(C),
    s.dtype,
    h.at + HEAP_CHANNELS_OFFSET,
  );
  channelPairFrom(h.region, HEAP_CHANNELS_OFFSET >> 3, p, C);
}

/**
 * A per-channel pixel write in place over pixels [q0, q1): the constants p into the
 * region, then kernel 0 normalize, 1 gradient or 2 scale.
 */
function writePixelsHeap(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  h: HeapKernels,
  kernel: number,
): void {
  const C = s.layout.C;
  packConstants(h.region, HEAP_CHANNELS_OFFSET >> 3, p, C);
  const dy = s.dy ? heapPixel(s, s.dyHeap, s.dyAt, q0) : 0;
  const x = s.x ? heapPixel(s, s.xHeap, s.xAt, q0) : 0;
  const out = heapPixel(s, s.outHeap, s.outAt, q0);
  callPixelWrite(h.exports, kernel, dy, x, out, q1 - q0, C, s.dtype, h.at + HEAP_CHANNELS_OFFSET);
}

/** Channels-last out = x * scale[c] + shift[c] (p = [scale, shift]). */
export function normalizePixelsHeap(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: HeapScratch,
): void {
  writePixelsHeap(s, q0, q1, p, scratch.heapKernels!, 0);
}

/** Channels-last out = dy * a[c] + (x * b[c] + c[c]) (p = [a, b, c]). */
export function gradientPixelsHeap(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: HeapScratch,
): void {
  writePixelsHeap(s, q0, q1, p, scratch.heapKernels!, 1);
}

/** Channels-last out = dy * scale[c] (p = [scale]). */
export function scalePixelsHeap(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: HeapScratch,
): void {
  writePixelsHeap(s, q0, q1, p, scratch.heapKernels!, 2);
}
