/**
 * Row kernels of the strided fallback, for layouts that are neither rows nor channels-last
 * (a sliced inner dimension, tensors whose layouts differ). The inner elements of one (n, c)
 * are sub-rows (the last inner dim) at offsets from {@linkcode subRowOffset}; they are
 * gathered through strides into float64 blocks, computed there with the same formulas and
 * scattered back. Same signature and `k` conventions as row_kernels.ts; dtype-generic
 * (slower than the direct loops, but without whole-tensor temporaries).
 *
 * Part of the pool's worker script (see codecs.ts).
 *
 * @module
 */

import { type CodecScratch, decodeTable, fallbackBlocks } from "./codecs.ts";
import type { RowKernel } from "./drivers.ts";
import { affine, bf16Bits, gradient } from "./formulas.ts";
import type { Layout, TensorAddress } from "./layout_types.ts";
import { subRowOffset } from "./layout_types.ts";
import { mergeMoments } from "./moments.ts";
import type { ReadArray, RowStage, WriteArray } from "./stage_types.ts";
import { BFLOAT16, FLOAT32 } from "./stage_types.ts";

/** Elements per float64 block of the fallback (32 KiB per block). */
const BLOCK_ELEMENTS = 4096;

/** Length of a sub-row (the last inner dim; 1 without inner dims). */
function subRowLength(layout: Layout): number {
  const shape = layout.innerShape;
  return shape.length === 0 ? 1 : shape[shape.length - 1];
}

/** Stride of a tensor along its sub-rows (0 without inner dims). */
function subRowStride(at: TensorAddress): number {
  const strides = at.innerStrides;
  return strides.length === 0 ? 0 : strides[strides.length - 1];
}

/** Element index where sub-row r of (n, c) starts. */
function subRowStart(
  layout: Layout,
  at: TensorAddress,
  n: number,
  c: number,
  r: number,
): number {
  return at.base + n * at.strideN + c * at.strideC +
    subRowOffset(layout.innerShape, at.innerStrides, r);
}

/** Reads `count` strided elements into a float64 block (decoding 16-bit data). */
function gatherBlock(
  dst: Float64Array,
  src: ReadArray,
  s: RowStage,
  scratch: CodecScratch,
  at: number,
  stride: number,
  count: number,
): void {
  if (s.dtype === FLOAT32) {
    const f = src as Float32Array;
    for (let k = 0, p = at; k < count; k++, p += stride) dst[k] = f[p];
    return;
  }
  const table = decodeTable(scratch, s.dtype === BFLOAT16);
  const u = src as Uint16Array;
  for (let k = 0, p = at; k < count; k++, p += stride) dst[k] = table[u[p]];
}

/** Writes a float64 block to `count` strided elements, rounding each once to the dtype. */
function scatterBlock(
  dst: WriteArray,
  s: RowStage,
  scratch: CodecScratch,
  at: number,
  stride: number,
  src: Float64Array,
  count: number,
): void {
  if (s.dtype === BFLOAT16) {
    const u = dst as Uint16Array;
    const { aliasF32, aliasI32 } = scratch;
    for (let k = 0, p = at; k < count; k++, p += stride) {
      u[p] = bf16Bits(src[k], aliasF32, aliasI32);
    }
    return;
  }
  // Float32Array and Float16Array stores both round to nearest even.
  const f = dst as Float32Array | Float16Array;
  for (let k = 0, p = at; k < count; k++, p += stride) f[p] = src[k];
}

/**
 * Calls `body(count)` for every block of row (n, c) after gathering the block of each
 * tensor in `reads` into the scratch blocks (0: first read, 1: second), and scatters block 0
 * to the output when `write` is set.
 */
function forEachBlock(
  s: RowStage,
  n: number,
  c: number,
  reads: readonly ("dy" | "x")[],
  write: boolean,
  scratch: CodecScratch,
  body: (count: number) => void,
): void {
  const layout = s.layout;
  const length = subRowLength(layout);
  const blocks = fallbackBlocks(scratch, BLOCK_ELEMENTS);
  const subRows = layout.inner / length;
  for (let r = 0; r < subRows; r++) {
    for (let j = 0; j < length; j += BLOCK_ELEMENTS) {
      const count = Math.min(BLOCK_ELEMENTS, length - j);
      for (let b = 0; b < reads.length; b++) {
        const at = reads[b] === "dy" ? s.dyAt : s.xAt;
        const stride = subRowStride(at);
        const start = subRowStart(layout, at, n, c, r) + j * stride;
        gatherBlock(blocks[b], reads[b] === "dy" ? s.dy! : s.x!, s, scratch, start, stride, count);
      }
      body(count);
      if (write) {
        const stride = subRowStride(s.outAt);
        const start = subRowStart(layout, s.outAt, n, c, r) + j * stride;
        scatterBlock(s.out!, s, scratch, start, stride, blocks[0], count);
      }
    }
  }
}

/** k[1] += sum(dy), k[2] += sum(dy * (x - k[0])) over row (n, c), any strides. */
export const sumsRowStrided: RowKernel = (s, n, c, k, scratch) => {
  const [dy, x] = fallbackBlocks(scratch, BLOCK_ELEMENTS);
  forEachBlock(s, n, c, ["dy", "x"], false, scratch, (count) => {
    let sum = 0;
    let dot = 0;
    for (let j = 0; j < count; j++) {
      sum += dy[j];
      dot += dy[j] * (x[j] - k[0]);
    }
    k[1] += sum;
    k[2] += dot;
  });
};

/** Merges row (n, c) into k[1] (sum), k[2] (m2), k[3] (count), any strides, by blocks. */
export const statsRowStrided: RowKernel = (s, n, c, k, scratch) => {
  const [x] = fallbackBlocks(scratch, BLOCK_ELEMENTS);
  forEachBlock(s, n, c, ["x"], false, scratch, (count) => {
    let sum = 0;
    for (let j = 0; j < count; j++) sum += x[j];
    const mean = sum / count;
    let m2 = 0;
    for (let j = 0; j < count; j++) m2 += (x[j] - mean) * (x[j] - mean);
    mergeMoments(k, 1, 2, k[3], sum, m2, count);
    k[3] += count;
  });
};

/** out = x * k[0] + k[1] over row (n, c), any strides (see {@linkcode affine}). */
export const normalizeRowStrided: RowKernel = (s, n, c, k, scratch) => {
  const [x] = fallbackBlocks(scratch, BLOCK_ELEMENTS);
  forEachBlock(s, n, c, ["x"], true, scratch, (count) => {
    for (let j = 0; j < count; j++) x[j] = affine(x[j], k[0], k[1]);
  });
};

/** out = dy * k[0] + (x * k[1] + k[2]) over row (n, c), any strides (see {@linkcode gradient}). */
export const gradientRowStrided: RowKernel = (s, n, c, k, scratch) => {
  const [dy, x] = fallbackBlocks(scratch, BLOCK_ELEMENTS);
  forEachBlock(s, n, c, ["dy", "x"], true, scratch, (count) => {
    for (let j = 0; j < count; j++) dy[j] = gradient(dy[j], x[j], k[0], k[1], k[2]);
  });
};

/** out = dy * k[0] over row (n, c), any strides. */
export const scaleRowStrided: RowKernel = (s, n, c, k, scratch) => {
  const [dy] = fallbackBlocks(scratch, BLOCK_ELEMENTS);
  forEachBlock(s, n, c, ["dy"], true, scratch, (count) => {
    for (let j = 0; j < count; j++) dy[j] = dy[j] * k[0];
  });
};
