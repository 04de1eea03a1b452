/**
 * The WebAssembly kernels: row and pixel kernels with the signatures of row_kernels.ts and
 * pixel_kernels.ts that run kernels.wat on this thread's instance on the host heap
 * (wasm_instance.ts). A stage whose tensors all live in the heap, and can be read and
 * written there, runs in place; any other is staged (`scratch.staged`, set by stages.ts):
 * blocks of its inputs are copied into the thread's region, the kernel runs there, and the
 * output block is copied back (in place is the fastest, staged costs the copies: figures in
 * bench/RESULTS.md).
 *
 * The kernels evaluate the same float64 expressions and the same sums in the same
 * association as the TypeScript kernels, and see the same elements in the same order either
 * way (row sums and statistics by segments of SEGMENT_ELEMENTS, pixel sums from the item's
 * first pixel in steps of four, pixel statistics over the drivers' sub-blocks whole), and
 * round each output once: all give identical bits.
 *
 * In place, a kernel must not write past its row or pixel run: the writing kernels handle
 * whole vectors of four, so stages.ts runs writes in place only when rows (or the channels of
 * a pixel) are a multiple of 4 long. Reads past the end stay in the block's slack.
 *
 * Part of the pool's worker script (see codecs.ts).
 *
 * @module
 */

import type { Layout, TensorAddress } from "./layout_types.ts";
import { SEGMENT_ELEMENTS } from "./layout_types.ts";
import type { PixelKernel, RowKernel } from "./drivers.ts";
import { mergeMoments } from "./moments.ts";
import type { PixelStage, RowStage } from "./stage_types.ts";
import { FLOAT32 } from "./stage_types.ts";
import {
  blockBytes,
  channelArraysTo,
  channelPairFrom,
  copyPixels,
  copyRun,
  elementBytes,
  outputBits,
  packConstants,
  paddedChannels,
  pixelsPerBlock,
  regionView,
  stagedAt,
  WASM_CHANNELS_AT,
  WASM_ROW_BLOCK,
  type WasmExports,
  type WasmKernels,
  type WasmScratch,
} from "./wasm_instance.ts";

/** Heap byte address of row (n, c)'s first element of a tensor at heap byte `heap`. */
function heapRow(heap: number, at: TensorAddress, n: number, c: number, dt: number): number {
  return heap + rowStart(at, n, c) * elementBytes(dt);
}

/** Element index of row (n, c)'s first element. */
function rowStart(at: TensorAddress, n: number, c: number): number {
  return at.base + n * at.strideN + c * at.strideC;
}

/** log2 of the bytes per element of `dt`: region offset to view index. */
function shift(dt: number): number {
  return dt === FLOAT32 ? 2 : 1;
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
export const sumsRowWasm: RowKernel<WasmScratch> = (s, n, c, k, scratch) => {
  const w = scratch.wasm!;
  const dt = s.dtype;
  const length = s.layout.inner;
  const r = w.f64;
  if (!scratch.staged) {
    const b = elementBytes(dt);
    const d = heapRow(s.dyHeap, s.dyAt, n, c, dt);
    const x = heapRow(s.xHeap, s.xAt, n, c, dt);
    for (let start = 0; start < length; start += SEGMENT_ELEMENTS) {
      const count = Math.min(SEGMENT_ELEMENTS, length - start);
      w.exports.row_sums(d + start * b, x + start * b, count, dt, k[0], w.at);
      k[1] += r[0];
      k[2] += r[1];
    }
    return;
  }
  const view = regionView(w, dt);
  const dyAt = stagedAt(0);
  const xAt = dyAt + blockBytes(WASM_ROW_BLOCK, dt);
  const sh = shift(dt);
  const d0 = rowStart(s.dyAt, n, c);
  const x0 = rowStart(s.xAt, n, c);
  for (let start = 0; start < length; start += WASM_ROW_BLOCK) {
    const count = Math.min(WASM_ROW_BLOCK, length - start);
    copyRun(view, dyAt >> sh, s.dy!, d0 + start, count);
    copyRun(view, xAt >> sh, s.x!, x0 + start, count);
    w.exports.row_sums(w.at + dyAt, w.at + xAt, count, dt, k[0], w.at);
    k[1] += r[0];
    k[2] += r[1];
  }
};

/** Merges row (n, c)'s statistics into k[1] (sum), k[2] (m2), k[3] (count), by segments. */
export const statsRowWasm: RowKernel<WasmScratch> = (s, n, c, k, scratch) => {
  const w = scratch.wasm!;
  const dt = s.dtype;
  const length = s.layout.inner;
  const r = w.f64;
  const staged = scratch.staged;
  const view = regionView(w, dt);
  const xAt = stagedAt(0);
  const b = elementBytes(dt);
  const x = staged ? rowStart(s.xAt, n, c) : heapRow(s.xHeap, s.xAt, n, c, dt);
  for (let start = 0; start < length; start += SEGMENT_ELEMENTS) {
    const count = Math.min(SEGMENT_ELEMENTS, length - start);
    if (staged) {
      copyRun(view, xAt >> shift(dt), s.x!, x + start, count);
      w.exports.row_stats(w.at + xAt, count, dt, w.at);
    } else {
      w.exports.row_stats(x + start * b, count, dt, w.at);
    }
    mergeMoments(k, 1, 2, k[3], r[0], r[1], count);
    k[3] += count;
  }
};

/**
 * Calls row write `kernel` (0 normalize, 1 gradient, 2 scale) on n elements at byte
 * addresses dy, x, out (those it does not read are ignored), with row constants k.
 */
function callRowWrite(
  e: WasmExports,
  kernel: number,
  dy: number,
  x: number,
  out: number,
  n: number,
  dt: number,
  k: Float64Array,
): void {
  if (kernel === 0) e.row_normalize(x, out, n, dt, k[0], k[1]);
  else if (kernel === 1) e.row_gradient(dy, x, out, n, dt, k[0], k[1], k[2]);
  else e.row_scale(dy, out, n, dt, k[0]);
}

/**
 * A row write over row (n, c): in place (the whole row in one call: writes are element-wise,
 * so any split gives the same bits), or staged block by block: whichever of dy and x the
 * stage has copied in, the kernel, the output block copied back.
 */
function writeRow(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: WasmScratch,
  kernel: number,
): void {
  const w = scratch.wasm!;
  const dt = s.dtype;
  const length = s.layout.inner;
  if (!scratch.staged) {
    const dy = s.dy ? heapRow(s.dyHeap, s.dyAt, n, c, dt) : 0;
    const x = s.x ? heapRow(s.xHeap, s.xAt, n, c, dt) : 0;
    const out = heapRow(s.outHeap, s.outAt, n, c, dt);
    callRowWrite(w.exports, kernel, dy, x, out, length, dt, k);
    return;
  }
  const view = regionView(w, dt);
  const out = outputBits(w, s.out!);
  const block = blockBytes(WASM_ROW_BLOCK, dt);
  const dyAt = stagedAt(0);
  const xAt = dyAt + block;
  const outAt = xAt + block;
  const sh = shift(dt);
  const d0 = s.dy ? rowStart(s.dyAt, n, c) : 0;
  const x0 = s.x ? rowStart(s.xAt, n, c) : 0;
  const o0 = rowStart(s.outAt, n, c);
  for (let start = 0; start < length; start += WASM_ROW_BLOCK) {
    const count = Math.min(WASM_ROW_BLOCK, length - start);
    if (s.dy) copyRun(view, dyAt >> sh, s.dy, d0 + start, count);
    if (s.x) copyRun(view, xAt >> sh, s.x, x0 + start, count);
    callRowWrite(w.exports, kernel, w.at + dyAt, w.at + xAt, w.at + outAt, count, dt, k);
    copyRun(out, o0 + start, view, outAt >> sh, count);
  }
}

/** out = x * k[0] + k[1] over row (n, c). */
export const normalizeRowWasm: RowKernel<WasmScratch> = (s, n, c, k, scratch) =>
  writeRow(s, n, c, k, scratch, 0);

/** out = dy * k[0] + (x * k[1] + k[2]) over row (n, c). */
export const gradientRowWasm: RowKernel<WasmScratch> = (s, n, c, k, scratch) =>
  writeRow(s, n, c, k, scratch, 1);

/** out = dy * k[0] over row (n, c). */
export const scaleRowWasm: RowKernel<WasmScratch> = (s, n, c, k, scratch) =>
  writeRow(s, n, c, k, scratch, 2);

// ---------------------------------------------------------------------------------------
// Pixel kernels (see pixel_kernels.ts for the p conventions)

/** Heap byte address of pixel q of a packed tensor at heap byte `heap`. */
function heapPixel(s: PixelStage, heap: number, at: TensorAddress, q: number): number {
  return heap + (at.base + q * s.layout.C) * elementBytes(s.dtype);
}

/** Per channel over pixels [q0, q1): p[0] += sum(dy), p[1] += sum(dy * (x - p[2])). */
export const sumsPixelsWasm: PixelKernel<WasmScratch> = (s, q0, q1, p, scratch) => {
  const w = scratch.wasm!;
  const C = s.layout.C;
  const cs = paddedChannels(C);
  const dt = s.dtype;
  const acc = w.at + WASM_CHANNELS_AT;
  channelArraysTo(w.f64, WASM_CHANNELS_AT >> 3, p, 3, C);
  if (!scratch.staged) {
    const dy = heapPixel(s, s.dyHeap, s.dyAt, q0);
    w.exports.pix_sums(dy, heapPixel(s, s.xHeap, s.xAt, q0), q1 - q0, C, cs, dt, acc);
  } else {
    const view = regionView(w, dt);
    const per = pixelsPerBlock(C);
    const dyAt = stagedAt(C);
    const xAt = dyAt + blockBytes(per * C, dt);
    const sh = shift(dt);
    for (let q = q0; q < q1; q += per) {
      const count = Math.min(per, q1 - q);
      copyPixels(s.layout, s.dyAt, s.dy!, view, dyAt >> sh, q, count, true);
      copyPixels(s.layout, s.xAt, s.x!, view, xAt >> sh, q, count, true);
      w.exports.pix_sums(w.at + dyAt, w.at + xAt, count, C, cs, dt, acc);
    }
  }
  channelPairFrom(w.f64, WASM_CHANNELS_AT >> 3, p, C);
};

/**
 * Two-pass statistics per channel over pixels [q0, q1) (a block small enough to stay in
 * cache): p[0][c] = sum(x), p[1][c] = sum((x - m_c)^2) with m_c the block's channel mean.
 */
export const statsPixelsWasm: PixelKernel<WasmScratch> = (s, q0, q1, p, scratch) => {
  const w = scratch.wasm!;
  const C = s.layout.C;
  const cs = paddedChannels(C);
  const dt = s.dtype;
  const acc = w.at + WASM_CHANNELS_AT;
  if (!scratch.staged) {
    w.exports.pix_stats(heapPixel(s, s.xHeap, s.xAt, q0), q1 - q0, C, cs, dt, acc);
  } else {
    const xAt = stagedAt(C);
    copyPixels(s.layout, s.xAt, s.x!, regionView(w, dt), xAt >> shift(dt), q0, q1 - q0, true);
    w.exports.pix_stats(w.at + xAt, q1 - q0, C, cs, dt, acc);
  }
  channelPairFrom(w.f64, WASM_CHANNELS_AT >> 3, p, C);
};

/**
 * Calls pixel write `kernel` (numbered as in {@linkcode callRowWrite}) on P pixels of C
 * channels at byte addresses dy, x, out, with the packed constants at cst.
 */
function callPixelWrite(
  e: WasmExports,
  kernel: number,
  dy: number,
  x: number,
  out: number,
  P: number,
  C: number,
  dt: number,
  cst: number,
): void {
  const cs = paddedChannels(C);
  if (kernel === 0) e.pix_normalize(x, out, P, C, cs, dt, cst);
  else if (kernel === 1) e.pix_gradient(dy, x, out, P, C, cs, dt, cst);
  else e.pix_scale(dy, out, P, C, cs, dt, cst);
}

/**
 * A per-channel pixel write over pixels [q0, q1): the constants p packed into the region,
 * then the kernel in place, or staged block by block.
 */
function writePixels(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  w: WasmKernels,
  staged: boolean,
  kernel: number,
): void {
  const C = s.layout.C;
  const dt = s.dtype;
  const cst = w.at + WASM_CHANNELS_AT;
  packConstants(w.f64, WASM_CHANNELS_AT >> 3, p, C);
  if (!staged) {
    const dy = s.dy ? heapPixel(s, s.dyHeap, s.dyAt, q0) : 0;
    const x = s.x ? heapPixel(s, s.xHeap, s.xAt, q0) : 0;
    const out = heapPixel(s, s.outHeap, s.outAt, q0);
    callPixelWrite(w.exports, kernel, dy, x, out, q1 - q0, C, dt, cst);
    return;
  }
  const view = regionView(w, dt);
  const out = outputBits(w, s.out!);
  const per = pixelsPerBlock(C);
  const block = blockBytes(per * C, dt);
  const dyAt = stagedAt(C);
  const xAt = dyAt + block;
  const outAt = xAt + block;
  const sh = shift(dt);
  for (let q = q0; q < q1; q += per) {
    const P = Math.min(per, q1 - q);
    if (s.dy) copyPixels(s.layout, s.dyAt, s.dy, view, dyAt >> sh, q, P, true);
    if (s.x) copyPixels(s.layout, s.xAt, s.x, view, xAt >> sh, q, P, true);
    callPixelWrite(w.exports, kernel, w.at + dyAt, w.at + xAt, w.at + outAt, P, C, dt, cst);
    copyPixels(s.layout, s.outAt, out, view, outAt >> sh, q, P, false);
  }
}

/** Channels-last out = x * scale[c] + shift[c] (p = [scale, shift]). */
export const normalizePixelsWasm: PixelKernel<WasmScratch> = (s, q0, q1, p, scratch) =>
  writePixels(s, q0, q1, p, scratch.wasm!, scratch.staged, 0);

/** Channels-last out = dy * a[c] + (x * b[c] + c[c]) (p = [a, b, c]). */
export const gradientPixelsWasm: PixelKernel<WasmScratch> = (s, q0, q1, p, scratch) =>
  writePixels(s, q0, q1, p, scratch.wasm!, scratch.staged, 1);

/** Channels-last out = dy * scale[c] (p = [scale]). */
export const scalePixelsWasm: PixelKernel<WasmScratch> = (s, q0, q1, p, scratch) =>
  writePixels(s, q0, q1, p, scratch.wasm!, scratch.staged, 2);
