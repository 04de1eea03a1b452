/**
 * Drivers of the WebAssembly SIMD kernels (src/backends/cpu/wasm/kernels.wat): row and pixel
 * kernels with the same signatures as row_kernels.ts and pixel_kernels.ts, for tensors
 * outside the host heap (heap_kernels.ts runs the kernels in place on those inside). Tensors
 * stay in their own typed arrays; each thread has its own instance, whose memory (its own,
 * though shared-typed as the module imports it) holds one block per data tensor plus the
 * per-channel arrays. A kernel copies a block of each
 * input in (a memcpy: 2 bytes per element for float16/bfloat16), runs, and copies the
 * output block back.
 *
 * The WebAssembly kernels evaluate the same float64 expressions and the same sums in the
 * same association as the TypeScript kernels, and round each output once, so both give
 * identical bits: a thread may use either (by row length, dtype, or when WebAssembly is
 * unavailable) without changing any result.
 *
 * Part of the pool's worker script (see codecs.ts).
 *
 * @module
 */

import type { CodecScratch } from "./codecs.ts";
import type { Layout, TensorAddress } from "./layout_types.ts";
import { SEGMENT_ELEMENTS } from "./layout_types.ts";
import { mergeMoments } from "./moments.ts";
import type { PixelStage, ReadArray, RowStage, WriteArray } from "./stage_types.ts";
import { FLOAT32 } from "./stage_types.ts";

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
  pix_normalize(
    x: number,
    out: number,
    P: number,
    C: number,
    cs: number,
    dt: number,
    cst: number,
  ): void;
  /** Per-channel dy * a + (x * b + c) (a, b, c at cst). */
  pix_gradient(
    dy: number,
    x: number,
    out: number,
    P: number,
    C: number,
    cs: number,
    dt: number,
    cst: number,
  ): void;
  /** Per-channel scale (scale at cst). */
  pix_scale(
    dy: number,
    out: number,
    P: number,
    C: number,
    cs: number,
    dt: number,
    cst: number,
  ): void;
}

/**
 * One thread's instance and the layout of its memory: the result pair at byte 0, the
 * kernels' vector constants from {@linkcode WASM_CONSTANTS_AT}, five per-channel float64
 * arrays of `channels` entries at `cst` (the pixel sums use three and keep a copy of two in
 * the others for a float16 redo, see kernels.wat), then the dy, x and out blocks of
 * `blockElements` elements (4 bytes each, so any dtype fits) plus slack.
 */
export interface WasmState {
  /** The kernels. */
  readonly exports: WasmExports;
  /** The instance's memory (shared, as the module imports it; this thread's own). */
  readonly memory: WebAssembly.Memory;
  /** Views of the memory (replaced when it grows). */
  f32: Float32Array;
  /** 16-bit view. */
  u16: Uint16Array;
  /** float64 view. */
  f64: Float64Array;
  /** Capacity of each block in elements. */
  blockElements: number;
  /** Capacity of each per-channel array in entries (a multiple of 4). */
  channels: number;
  /** Byte address of the per-channel arrays. */
  cst: number;
  /** Byte address of the dy block. */
  dyAt: number;
  /** Byte address of the x block. */
  xAt: number;
  /** Byte address of the output block. */
  outAt: number;
  /** The last Float16Array output and its bits (float16 outputs are copied as bits). */
  outOf: WriteArray | undefined;
  /** Bits of {@linkcode WasmState.outOf}. */
  outBits: Uint16Array | Float32Array | undefined;
}

/** The scratch of a thread that runs the copying kernels: its own instance. */
export interface WasmScratch extends CodecScratch {
  /**
   * This thread's instance of the WebAssembly kernels: undefined until the first stage,
   * null when there are none (no bytes, or WebAssembly SIMD is unavailable).
   */
  wasm: WasmState | null | undefined;
}

/** Elements of one block of a row (rows longer than this run block by block). */
const WASM_BLOCK_ELEMENTS = SEGMENT_ELEMENTS;

/**
 * Byte address of the vector constants the kernels keep in their memory, written by the
 * module's data segment (see `constantsToMemory` in scripts/build_wasm.ts, which places
 * them here); the result pair stays below.
 */
export const WASM_CONSTANTS_AT = 64;

/** End of the constants' room (exclusive); the per-channel arrays start here. */
export const WASM_CONSTANTS_END = 1024;

/** Bytes after each block that a kernel may read or write past its end. */
const WASM_SLACK_BYTES = 64;

/** The most pages the module's memory may have (4 GiB: 32-bit addresses). */
const WASM_MAX_PAGES = 65536;

/** Instantiates the kernels on `memory` (a shared memory of at most WASM_MAX_PAGES pages). */
export function instantiateOn(bytes: Uint8Array, memory: WebAssembly.Memory): WasmExports {
  const module = new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>);
  return new WebAssembly.Instance(module, { env: { memory } }).exports as unknown as WasmExports;
}

/** Instantiates the kernels with a fresh memory, or null when that fails (no SIMD). */
export function instantiateWasm(bytes: Uint8Array | undefined): WasmState | null {
  if (!bytes) return null;
  let exports: WasmExports;
  let memory: WebAssembly.Memory;
  try {
    memory = new WebAssembly.Memory({ initial: 4, maximum: WASM_MAX_PAGES, shared: true });
    exports = instantiateOn(bytes, memory);
  } catch {
    return null;
  }
  const w: WasmState = {
    exports,
    memory,
    f32: new Float32Array(0),
    u16: new Uint16Array(0),
    f64: new Float64Array(0),
    blockElements: 0,
    channels: 0,
    cst: 0,
    dyAt: 0,
    xAt: 0,
    outAt: 0,
    outOf: undefined,
    outBits: undefined,
  };
  wasmReserve(w, WASM_BLOCK_ELEMENTS, 256);
  return w;
}

/** Makes the blocks hold `elements` elements and the per-channel arrays `channels` entries. */
export function wasmReserve(w: WasmState, elements: number, channels: number): void {
  if (elements <= w.blockElements && channels <= w.channels && w.f64.length > 0) return;
  const blockElements = Math.max(elements, w.blockElements);
  const cs = Math.max(channels, w.channels);
  const cst = WASM_CONSTANTS_END;
  const block = blockElements * 4 + WASM_SLACK_BYTES;
  const dyAt = cst + 5 * cs * 8;
  const bytes = dyAt + 3 * block;
  const memory = w.memory;
  const missing = bytes - memory.buffer.byteLength;
  if (missing > 0) memory.grow(Math.ceil(missing / 65536));
  w.blockElements = blockElements;
  w.channels = cs;
  w.cst = cst;
  w.dyAt = dyAt;
  w.xAt = dyAt + block;
  w.outAt = dyAt + 2 * block;
  w.f32 = new Float32Array(memory.buffer);
  w.u16 = new Uint16Array(memory.buffer);
  w.f64 = new Float64Array(memory.buffer);
}

/** The view blocks of dtype `dt` are copied through, and the element index of byte `at`. */
function wasmView(w: WasmState, dt: number): Float32Array | Uint16Array {
  return dt === FLOAT32 ? w.f32 : w.u16;
}

/** Element index of byte address `at` in {@linkcode wasmView} of `dt`. */
function wasmIndex(at: number, dt: number): number {
  return dt === FLOAT32 ? at >> 2 : at >> 1;
}

/** The array an output is copied into: float16 outputs as their bits. */
function wasmOutput(w: WasmState, out: WriteArray): Float32Array | Uint16Array {
  if (!(out instanceof Float16Array)) return out;
  if (w.outOf !== out) {
    w.outOf = out;
    w.outBits = new Uint16Array(out.buffer, out.byteOffset, out.length);
  }
  return w.outBits as Uint16Array;
}

/** Copies `count` elements from src[from] to dst[to] (same element type). */
function copyRun(
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

/** Element index of row (n, c)'s first element. */
function rowStart(at: TensorAddress, n: number, c: number): number {
  return at.base + n * at.strideN + c * at.strideC;
}

// ---------------------------------------------------------------------------------------
// Row kernels (see row_kernels.ts for the k conventions)

/** k[1] += sum(dy), k[2] += sum(dy * (x - k[0])) over row (n, c). */
export function sumsRowWasm(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: WasmScratch,
): void {
  const w = scratch.wasm!;
  const dt = s.dtype;
  const view = wasmView(w, dt);
  const d0 = rowStart(s.dyAt, n, c);
  const x0 = rowStart(s.xAt, n, c);
  const length = s.layout.inner;
  const f64 = w.f64;
  for (let start = 0; start < length; start += WASM_BLOCK_ELEMENTS) {
    const count = Math.min(WASM_BLOCK_ELEMENTS, length - start);
    copyRun(view, wasmIndex(w.dyAt, dt), s.dy!, d0 + start, count);
    copyRun(view, wasmIndex(w.xAt, dt), s.x!, x0 + start, count);
    w.exports.row_sums(w.dyAt, w.xAt, count, dt, k[0], 0);
    k[1] += f64[0];
    k[2] += f64[1];
  }
}

/** Merges row (n, c)'s statistics into k[1] (sum), k[2] (m2), k[3] (count), by segments. */
export function statsRowWasm(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: WasmScratch,
): void {
  const w = scratch.wasm!;
  const dt = s.dtype;
  const view = wasmView(w, dt);
  const x0 = rowStart(s.xAt, n, c);
  const length = s.layout.inner;
  const f64 = w.f64;
  for (let start = 0; start < length; start += SEGMENT_ELEMENTS) {
    const count = Math.min(SEGMENT_ELEMENTS, length - start);
    copyRun(view, wasmIndex(w.xAt, dt), s.x!, x0 + start, count);
    w.exports.row_stats(w.xAt, count, dt, 0);
    mergeMoments(k, 1, 2, k[3], f64[0], f64[1], count);
    k[3] += count;
  }
}

/**
 * Calls row write `kernel` (0 normalize, 1 gradient, 2 scale) on n elements at byte
 * addresses dy, x, out (those it does not read are ignored), with row constants k: the one
 * dispatch of the copying and the in-place drivers.
 */
export function callRowWrite(
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
 * A row write over row (n, c) through blocks: whichever of dy and x the stage has copied
 * in, {@linkcode callRowWrite}, the output block copied back.
 */
function writeRowWasm(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  w: WasmState,
  kernel: number,
): void {
  const dt = s.dtype;
  const view = wasmView(w, dt);
  const out = wasmOutput(w, s.out!);
  const d0 = s.dy ? rowStart(s.dyAt, n, c) : 0;
  const x0 = s.x ? rowStart(s.xAt, n, c) : 0;
  const o0 = rowStart(s.outAt, n, c);
  const length = s.layout.inner;
  const outIndex = wasmIndex(w.outAt, dt);
  for (let start = 0; start < length; start += WASM_BLOCK_ELEMENTS) {
    const count = Math.min(WASM_BLOCK_ELEMENTS, length - start);
    if (s.dy) copyRun(view, wasmIndex(w.dyAt, dt), s.dy, d0 + start, count);
    if (s.x) copyRun(view, wasmIndex(w.xAt, dt), s.x, x0 + start, count);
    callRowWrite(w.exports, kernel, w.dyAt, w.xAt, w.outAt, count, dt, k);
    copyRun(out, o0 + start, view, outIndex, count);
  }
}

/** out = x * k[0] + k[1] over row (n, c). */
export function normalizeRowWasm(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: WasmScratch,
): void {
  writeRowWasm(s, n, c, k, scratch.wasm!, 0);
}

/** out = dy * k[0] + (x * k[1] + k[2]) over row (n, c). */
export function gradientRowWasm(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: WasmScratch,
): void {
  writeRowWasm(s, n, c, k, scratch.wasm!, 1);
}

/** out = dy * k[0] over row (n, c). */
export function scaleRowWasm(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: WasmScratch,
): void {
  writeRowWasm(s, n, c, k, scratch.wasm!, 2);
}

// ---------------------------------------------------------------------------------------
// Pixel kernels (see pixel_kernels.ts for the p conventions)

/** Channels rounded up to the vector width: the length of the per-channel arrays. */
export function paddedChannels(C: number): number {
  return (C + 3) & ~3;
}

/**
 * Pixels per block: a multiple of 4 (the sums' four-pixel steps then start where the
 * TypeScript kernels' do), at least 4 (the blocks are reserved that large).
 */
function pixelsPerWasmBlock(w: WasmState, C: number): number {
  return Math.max(4, Math.floor(w.blockElements / C) & ~3);
}

/** Reserves blocks of at least 4 pixels and {@linkcode WASM_BLOCK_ELEMENTS} elements. */
function reservePixels(w: WasmState, C: number): void {
  const cs = paddedChannels(C);
  wasmReserve(w, Math.max(WASM_BLOCK_ELEMENTS, 4 * cs), cs);
}

/**
 * Copies pixels [q, q + count) of a tensor between its array and a packed block (pixel
 * stride C), as few runs as the tensor's strides allow: `toBlock` copies in, else out.
 */
function copyPixels(
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

/** Per channel over pixels [q0, q1): p[0] += sum(dy), p[1] += sum(dy * (x - p[2])). */
export function sumsPixelsWasm(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: WasmScratch,
): void {
  const w = scratch.wasm!;
  const C = s.layout.C;
  const cs = paddedChannels(C);
  reservePixels(w, C);
  const dt = s.dtype;
  const view = wasmView(w, dt);
  const per = pixelsPerWasmBlock(w, C);
  channelArraysTo(w.f64, w.cst >> 3, p, 3, C);
  for (let q = q0; q < q1; q += per) {
    const count = Math.min(per, q1 - q);
    copyPixels(s.layout, s.dyAt, s.dy!, view, wasmIndex(w.dyAt, dt), q, count, true);
    copyPixels(s.layout, s.xAt, s.x!, view, wasmIndex(w.xAt, dt), q, count, true);
    w.exports.pix_sums(w.dyAt, w.xAt, count, C, cs, dt, w.cst);
  }
  channelPairFrom(w.f64, w.cst >> 3, p, C);
}

/**
 * Two-pass statistics per channel over pixels [q0, q1) (a block small enough to stay in
 * cache): p[0][c] = sum(x), p[1][c] = sum((x - m_c)^2) with m_c the block's channel mean.
 */
export function statsPixelsWasm(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: WasmScratch,
): void {
  const w = scratch.wasm!;
  const C = s.layout.C;
  const cs = paddedChannels(C);
  wasmReserve(w, Math.max(WASM_BLOCK_ELEMENTS, 4 * cs, (q1 - q0) * C), cs);
  const dt = s.dtype;
  const view = wasmView(w, dt);
  copyPixels(s.layout, s.xAt, s.x!, view, wasmIndex(w.xAt, dt), q0, q1 - q0, true);
  w.exports.pix_stats(w.xAt, q1 - q0, C, cs, dt, w.cst);
  channelPairFrom(w.f64, w.cst >> 3, p, C);
}

/**
 * Calls pixel write `kernel` (numbered as in {@linkcode callRowWrite}) on P pixels of C
 * channels at byte addresses dy, x, out, with the packed constants at cst: the one
 * dispatch of the copying and the in-place drivers.
 */
export function callPixelWrite(
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
 * A per-channel pixel write over pixels [q0, q1): the constants p packed in, then blocks
 * (whichever of dy and x the stage has copied in) through {@linkcode callPixelWrite}.
 */
function writePixelsWasm(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  w: WasmState,
  kernel: number,
): void {
  const C = s.layout.C;
  reservePixels(w, C);
  const dt = s.dtype;
  const view = wasmView(w, dt);
  const out = wasmOutput(w, s.out!);
  const per = pixelsPerWasmBlock(w, C);
  packConstants(w.f64, w.cst >> 3, p, C);
  for (let q = q0; q < q1; q += per) {
    const P = Math.min(per, q1 - q);
    if (s.dy) copyPixels(s.layout, s.dyAt, s.dy, view, wasmIndex(w.dyAt, dt), q, P, true);
    if (s.x) copyPixels(s.layout, s.xAt, s.x, view, wasmIndex(w.xAt, dt), q, P, true);
    callPixelWrite(w.exports, kernel, w.dyAt, w.xAt, w.outAt, P, C, dt, w.cst);
    copyPixels(s.layout, s.outAt, out, view, wasmIndex(w.outAt, dt), q, P, false);
  }
}

/** Channels-last out = x * scale[c] + shift[c] (p = [scale, shift]). */
export function normalizePixelsWasm(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: WasmScratch,
): void {
  writePixelsWasm(s, q0, q1, p, scratch.wasm!, 0);
}

/** Channels-last out = dy * a[c] + (x * b[c] + c[c]) (p = [a, b, c]). */
export function gradientPixelsWasm(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: WasmScratch,
): void {
  writePixelsWasm(s, q0, q1, p, scratch.wasm!, 1);
}

/** Channels-last out = dy * scale[c] (p = [scale]). */
export function scalePixelsWasm(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: WasmScratch,
): void {
  writePixelsWasm(s, q0, q1, p, scratch.wasm!, 2);
}
