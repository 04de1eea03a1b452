/**
 * Row access for the LayerNorm / RMSNorm kernels: a tensor of any layout seen as `rows` rows of
 * `cols` elements (the normalized, trailing dims), each row decoded into a float64 scratch row
 * and encoded back from one. A row's storage indices are `base(r) + i * step` when the
 * normalized dims collapse to one stride (contiguous rows: step 1), else `base(r) + offsets[i]`.
 * Row bases come from one row stride when the leading dims collapse too, else from the row's
 * multi-index.
 *
 * Decoding: float32 directly, float16 and bfloat16 through 65536-entry tables (faster than
 * Float16Array reads in V8). Encoding rounds once to nearest even: float32 and float16 by the
 * typed arrays' own stores, bfloat16 through a float32 block whose bits are rounded again,
 * exact except on the tie pattern and Inf/NaN, which {@linkcode bf16Exact} redoes.
 *
 * @module
 */

import type { Tensor } from "../../../tensor/tensor.ts";
import {
  bf16Exact,
  type CodecScratch,
  createCodecScratch,
  decodeTable,
} from "../kernels/codecs.ts";
import { MAX_STORAGE_ELEMENTS } from "../fast/aliasing.ts";
import { hostData } from "../fast/tensor_arrays.ts";

/** Element type codes of the row access. */
const F32 = 0;
const F16 = 1;
const BF16 = 2;

/** How the kernels reach the rows of one tensor. */
export interface RowAccess {
  /** 0 float32, 1 float16, 2 bfloat16. */
  readonly code: number;
  /** float32 data, or the 16-bit patterns of float16/bfloat16 data. */
  readonly bits: Float32Array | Uint16Array;
  /** The float16 storage itself (its stores round natively); undefined for other dtypes. */
  readonly f16: Float16Array | undefined;
  /** Storage index of row 0's first element. */
  readonly offset: number;
  /** Storage distance between consecutive rows, or -1 when the leading dims do not collapse. */
  readonly rowStride: number;
  /** Leading dims and their strides (for rows whose bases need the multi-index). */
  readonly leadShape: readonly number[];
  readonly leadStrides: readonly number[];
  /** Distance between consecutive row elements, or 0 when {@linkcode RowAccess.offsets} is used. */
  readonly step: number;
  /** Per element of a row: its storage distance from the row's base (non-collapsible rows). */
  readonly offsets: Int32Array | undefined;
}

/**
 * (shape, strides) with size-1 dims dropped, merged where a dim is contiguous over the next:
 * the single stride of the whole range, or undefined when it needs more than one.
 */
function collapsedStride(shape: readonly number[], strides: readonly number[]): number | undefined {
  let stride: number | undefined;
  let extent = 0;
  for (let i = shape.length - 1; i >= 0; i--) {
    if (shape[i] === 1) continue;
    if (stride === undefined) {
      stride = strides[i];
      extent = shape[i];
    } else if (strides[i] === stride * extent) {
      extent *= shape[i];
    } else {
      return undefined;
    }
  }
  return stride ?? 1;
}

/**
 * Whether the row kernels can index `t` with int32 arithmetic (every storage index below
 * 2^31); the others run on scratch copies (fast/staging.ts).
 */
export function rowAddressable(t: Tensor): boolean {
  return hostData(t).length <= MAX_STORAGE_ELEMENTS;
}

/** The row access of host tensor `t` split at `axis` (rows = dims before it). */
export function rowAccess(t: Tensor, axis: number): RowAccess {
  const data = hostData(t);
  const code = t.dtype === "float16" ? F16 : t.dtype === "bfloat16" ? BF16 : F32;
  const f16 = data instanceof Float16Array ? data : undefined;
  const bits = f16
    ? new Uint16Array(f16.buffer, f16.byteOffset, f16.length)
    : data as Float32Array | Uint16Array;
  const innerShape = t.shape.slice(axis);
  const innerStrides = t.strides.slice(axis);
  const step = collapsedStride(innerShape, innerStrides);
  let offsets: Int32Array | undefined;
  if (step === undefined) {
    const cols = innerShape.reduce((a, b) => a * b, 1);
    offsets = new Int32Array(cols);
    const index = new Array<number>(innerShape.length).fill(0);
    for (let i = 0; i < cols; i++) {
      let at = 0;
      for (let d = 0; d < index.length; d++) at += index[d] * innerStrides[d];
      offsets[i] = at;
      for (let d = index.length - 1; d >= 0; d--) {
        if (++index[d] < innerShape[d]) break;
        index[d] = 0;
      }
    }
  }
  const leadShape = t.shape.slice(0, axis);
  const leadStrides = t.strides.slice(0, axis);
  return {
    code,
    bits,
    f16,
    offset: t.offset,
    rowStride: collapsedStride(leadShape, leadStrides) ?? -1,
    leadShape,
    leadStrides,
    step: step ?? 0,
    offsets,
  };
}

/** Storage index of the first element of row `r`. */
export function rowBase(a: RowAccess, r: number): number {
  if (a.rowStride >= 0) return a.offset + r * a.rowStride;
  let base = a.offset;
  let rest = r;
  for (let d = a.leadShape.length - 1; d >= 0; d--) {
    const n = a.leadShape[d];
    base += (rest % n) * a.leadStrides[d];
    rest = Math.floor(rest / n);
  }
  return base;
}

/** Decode tables and bfloat16 store blocks of this thread (the kernels run on one thread). */
const scratch: CodecScratch = createCodecScratch();

/** Decodes row `r` of `a` (`cols` elements) into `dst[0..cols)` as float64. */
export function loadRow(a: RowAccess, r: number, dst: Float64Array, cols: number): void {
  const base = rowBase(a, r) | 0;
  const step = a.step | 0;
  const off = a.offsets;
  if (a.code === F32) {
    const src = a.bits as Float32Array;
    if (step === 1) { for (let i = 0; i < cols; i++) dst[i] = src[(base + i) | 0]; }
    else if (off) { for (let i = 0; i < cols; i++) dst[i] = src[(base + off[i]) | 0]; }
    else for (let i = 0; i < cols; i++) dst[i] = src[(base + i * step) | 0];
    return;
  }
  const table = decodeTable(scratch, a.code === BF16);
  const src = a.bits as Uint16Array;
  if (step === 1) { for (let i = 0; i < cols; i++) dst[i] = table[src[(base + i) | 0]]; }
  else if (off) { for (let i = 0; i < cols; i++) dst[i] = table[src[(base + off[i]) | 0]]; }
  else for (let i = 0; i < cols; i++) dst[i] = table[src[(base + i * step) | 0]];
}

/** Rows shorter than this are stored element by element (a subarray costs more). */
const SET_MIN = 64;

/** Encodes `src[0..cols)` into row `r` of `a`, rounding each value once to its dtype. */
export function storeRow(a: RowAccess, r: number, src: Float64Array, cols: number): void {
  const base = rowBase(a, r) | 0;
  const step = a.step | 0;
  const off = a.offsets;
  if (a.code === BF16) return storeBf16(a.bits as Uint16Array, base, step, off, src, cols);
  const dst = a.code === F16 ? a.f16! : a.bits as Float32Array;
  if (step === 1) {
    if (cols >= SET_MIN) dst.set(src.subarray(0, cols), base);
    else for (let i = 0; i < cols; i++) dst[(base + i) | 0] = src[i];
  } else if (off) {
    for (let i = 0; i < cols; i++) dst[(base + off[i]) | 0] = src[i];
  } else {
    for (let i = 0; i < cols; i++) dst[(base + i * step) | 0] = src[i];
  }
}

/** A float32 block of bfloat16 stores and its bits. */
let block = new Float32Array(1024);
let blockBits = new Int32Array(block.buffer);

function storeBf16(
  dst: Uint16Array,
  base: number,
  step: number,
  off: Int32Array | undefined,
  src: Float64Array,
  cols: number,
): void {
  if (block.length < cols) {
    block = new Float32Array(cols);
    blockBits = new Int32Array(block.buffer);
  }
  const b = block;
  const w = blockBits;
  for (let i = 0; i < cols; i++) b[i] = src[i];
  // The float32 store rounded once; a second rounding of its bits is exact unless the float32
  // is a tie pattern it rounded to (not the value itself), or Inf/NaN: bf16Exact redoes those
  // from the float64 value.
  const f = scratch.aliasF32;
  const k = scratch.aliasI32;
  if (step === 1) {
    for (let i = 0; i < cols; i++) {
      const v = w[i];
      dst[(base + i) | 0] =
        ((v & 0xffff) !== 0x8000 || b[i] === src[i]) && (v & 0x7f800000) !== 0x7f800000
          ? (v + 0x7fff + ((v >> 16) & 1)) >> 16
          : bf16Exact(src[i], f, k);
    }
  } else if (off) {
    for (let i = 0; i < cols; i++) {
      const v = w[i];
      dst[(base + off[i]) | 0] =
        ((v & 0xffff) !== 0x8000 || b[i] === src[i]) && (v & 0x7f800000) !== 0x7f800000
          ? (v + 0x7fff + ((v >> 16) & 1)) >> 16
          : bf16Exact(src[i], f, k);
    }
  } else {
    for (let i = 0; i < cols; i++) {
      const v = w[i];
      dst[(base + i * step) | 0] =
        ((v & 0xffff) !== 0x8000 || b[i] === src[i]) && (v & 0x7f800000) !== 0x7f800000
          ? (v + 0x7fff + ((v >> 16) & 1)) >> 16
          : bf16Exact(src[i], f, k);
    }
  }
}

/** A float64 scratch row per slot, grown on demand (contents undefined). */
const rowsScratch: Float64Array[] = [];

/** Scratch row number `slot` of at least `cols` elements. */
export function scratchRow(slot: number, cols: number): Float64Array {
  let row = rowsScratch[slot];
  if (!row || row.length < cols) {
    row = new Float64Array(Math.max(cols, 64));
    rowsScratch[slot] = row;
  }
  return row;
}
