/**
 * Row kernels: one (n, c) row of a `rows` layout, i.e. `layout.inner` elements at unit
 * stride in every tensor. All share one signature, `(s, n, c, k, scratch)`, with `k` the
 * row's constants or accumulators, so that the drivers (drivers.ts) call them through one
 * primed, polymorphic call site (see drivers.ts for why).
 *
 * One kernel per dtype keeps every typed-array access monomorphic: float32 reads
 * Float32Arrays directly, float16/bfloat16 read Uint16Arrays through a decode table; float16
 * stores go through a Float16Array (native round-to-nearest-even), bfloat16 stores through a
 * float32 block (see {@linkcode bf16Block}). Sums accumulate in float64; each output is rounded once.
 *
 * Worker-safe (see codecs.ts).
 *
 * @module
 */

import { bf16Block, bf16Exact, decodeTable, type ThreadScratch } from "./codecs.ts";
import { affine, gradient } from "./formulas.ts";
import { SEGMENT_ELEMENTS } from "./layout_types.ts";
import { mergeMoments } from "./moments.ts";
import type { RowStage } from "./stage_types.ts";
import { BFLOAT16 } from "./stage_types.ts";

/**
 * k[1] += sum(dy), k[2] += sum(dy * (x - k[0])) over row (n, c), float32. The row is summed
 * in blocks of SEGMENT_ELEMENTS, each with eight chains (element j into chain j mod 8,
 * combined as ((s0 + s2) + (s4 + s6)) + ((s1 + s3) + (s5 + s7)), then the tail in order):
 * the association of the WebAssembly kernel (kernels.wat), which gives the same bits.
 */
export function sumsRowF32(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  _scratch: ThreadScratch,
): void {
  const dy = s.dy as Float32Array;
  const x = s.x as Float32Array;
  const dyAt = s.dyAt;
  const xAt = s.xAt;
  const d0 = (dyAt.base + n * dyAt.strideN + c * dyAt.strideC) | 0;
  const x0 = (xAt.base + n * xAt.strideN + c * xAt.strideC) | 0;
  const length = s.layout.inner | 0;
  const mean = k[0];
  for (let start = 0; start < length; start += SEGMENT_ELEMENTS) {
    const count = Math.min(SEGMENT_ELEMENTS, length - start);
    const ds = (d0 + start) | 0;
    const xs = (x0 + start) | 0;
    const end = count & ~7;
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    let t0 = 0, t1 = 0, t2 = 0, t3 = 0, t4 = 0, t5 = 0, t6 = 0, t7 = 0;
    let j = 0;
    for (; j < end; j += 8) {
      const a = (ds + j) | 0;
      const b = (xs + j) | 0;
      const e0 = dy[a], e1 = dy[a + 1], e2 = dy[a + 2], e3 = dy[a + 3];
      const e4 = dy[a + 4], e5 = dy[a + 5], e6 = dy[a + 6], e7 = dy[a + 7];
      s0 += e0;
      s1 += e1;
      s2 += e2;
      s3 += e3;
      s4 += e4;
      s5 += e5;
      s6 += e6;
      s7 += e7;
      t0 += e0 * (x[b] - mean);
      t1 += e1 * (x[b + 1] - mean);
      t2 += e2 * (x[b + 2] - mean);
      t3 += e3 * (x[b + 3] - mean);
      t4 += e4 * (x[b + 4] - mean);
      t5 += e5 * (x[b + 5] - mean);
      t6 += e6 * (x[b + 6] - mean);
      t7 += e7 * (x[b + 7] - mean);
    }
    let sum = ((s0 + s2) + (s4 + s6)) + ((s1 + s3) + (s5 + s7));
    let dot = ((t0 + t2) + (t4 + t6)) + ((t1 + t3) + (t5 + t7));
    for (; j < count; j++) {
      const e = dy[(ds + j) | 0];
      sum += e;
      dot += e * (x[(xs + j) | 0] - mean);
    }
    k[1] += sum;
    k[2] += dot;
  }
}

/** {@linkcode sumsRowF32} for float16/bfloat16 (decoded through a table). */
export function sumsRowU16(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: ThreadScratch,
): void {
  const dy = s.dy as Uint16Array;
  const x = s.x as Uint16Array;
  const dyAt = s.dyAt;
  const xAt = s.xAt;
  const d0 = (dyAt.base + n * dyAt.strideN + c * dyAt.strideC) | 0;
  const x0 = (xAt.base + n * xAt.strideN + c * xAt.strideC) | 0;
  const length = s.layout.inner | 0;
  const mean = k[0];
  const table = decodeTable(scratch, s.dtype === BFLOAT16);
  for (let start = 0; start < length; start += SEGMENT_ELEMENTS) {
    const count = Math.min(SEGMENT_ELEMENTS, length - start);
    const ds = (d0 + start) | 0;
    const xs = (x0 + start) | 0;
    const end = count & ~7;
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    let t0 = 0, t1 = 0, t2 = 0, t3 = 0, t4 = 0, t5 = 0, t6 = 0, t7 = 0;
    let j = 0;
    for (; j < end; j += 8) {
      const a = (ds + j) | 0;
      const b = (xs + j) | 0;
      const e0 = table[dy[a]], e1 = table[dy[a + 1]], e2 = table[dy[a + 2]];
      const e3 = table[dy[a + 3]], e4 = table[dy[a + 4]], e5 = table[dy[a + 5]];
      const e6 = table[dy[a + 6]], e7 = table[dy[a + 7]];
      s0 += e0;
      s1 += e1;
      s2 += e2;
      s3 += e3;
      s4 += e4;
      s5 += e5;
      s6 += e6;
      s7 += e7;
      t0 += e0 * (table[x[b]] - mean);
      t1 += e1 * (table[x[b + 1]] - mean);
      t2 += e2 * (table[x[b + 2]] - mean);
      t3 += e3 * (table[x[b + 3]] - mean);
      t4 += e4 * (table[x[b + 4]] - mean);
      t5 += e5 * (table[x[b + 5]] - mean);
      t6 += e6 * (table[x[b + 6]] - mean);
      t7 += e7 * (table[x[b + 7]] - mean);
    }
    let sum = ((s0 + s2) + (s4 + s6)) + ((s1 + s3) + (s5 + s7));
    let dot = ((t0 + t2) + (t4 + t6)) + ((t1 + t3) + (t5 + t7));
    for (; j < count; j++) {
      const e = table[dy[(ds + j) | 0]];
      sum += e;
      dot += e * (table[x[(xs + j) | 0]] - mean);
    }
    k[1] += sum;
    k[2] += dot;
  }
}

/**
 * Merges the statistics of row (n, c) into k[1] (sum) and k[2] (squared deviations), which
 * hold k[3] elements (updated), float32. Segments of SEGMENT_ELEMENTS are read twice while in
 * cache (sum, then squared deviations from the segment mean) and merged with Chan's update.
 * Each pass sums in eight chains as {@linkcode sumsRowF32} does.
 */
export function statsRowF32(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  _scratch: ThreadScratch,
): void {
  const x = s.x as Float32Array;
  const xAt = s.xAt;
  const x0 = (xAt.base + n * xAt.strideN + c * xAt.strideC) | 0;
  const length = s.layout.inner | 0;
  for (let start = 0; start < length; start += SEGMENT_ELEMENTS) {
    const count = Math.min(SEGMENT_ELEMENTS, length - start);
    const first = (x0 + start) | 0;
    const end = (first + (count & ~7)) | 0;
    const last = (first + count) | 0;
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    let j = first;
    for (; j < end; j += 8) {
      s0 += x[j];
      s1 += x[j + 1];
      s2 += x[j + 2];
      s3 += x[j + 3];
      s4 += x[j + 4];
      s5 += x[j + 5];
      s6 += x[j + 6];
      s7 += x[j + 7];
    }
    let sum = ((s0 + s2) + (s4 + s6)) + ((s1 + s3) + (s5 + s7));
    for (; j < last; j++) sum += x[j];
    const mean = sum / count;
    s0 =
      s1 =
      s2 =
      s3 =
      s4 =
      s5 =
      s6 =
      s7 =
        0;
    for (j = first; j < end; j += 8) {
      const a0 = x[j] - mean, a1 = x[j + 1] - mean, a2 = x[j + 2] - mean;
      const a3 = x[j + 3] - mean, a4 = x[j + 4] - mean, a5 = x[j + 5] - mean;
      const a6 = x[j + 6] - mean, a7 = x[j + 7] - mean;
      s0 += a0 * a0;
      s1 += a1 * a1;
      s2 += a2 * a2;
      s3 += a3 * a3;
      s4 += a4 * a4;
      s5 += a5 * a5;
      s6 += a6 * a6;
      s7 += a7 * a7;
    }
    let m2 = ((s0 + s2) + (s4 + s6)) + ((s1 + s3) + (s5 + s7));
    for (; j < last; j++) {
      const a = x[j] - mean;
      m2 += a * a;
    }
    mergeMoments(k, 1, 2, k[3], sum, m2, count);
    k[3] += count;
  }
}

/** {@linkcode statsRowF32} for float16/bfloat16 (decoded through a table). */
export function statsRowU16(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: ThreadScratch,
): void {
  const x = s.x as Uint16Array;
  const xAt = s.xAt;
  const x0 = (xAt.base + n * xAt.strideN + c * xAt.strideC) | 0;
  const length = s.layout.inner | 0;
  const table = decodeTable(scratch, s.dtype === BFLOAT16);
  for (let start = 0; start < length; start += SEGMENT_ELEMENTS) {
    const count = Math.min(SEGMENT_ELEMENTS, length - start);
    const first = (x0 + start) | 0;
    const end = (first + (count & ~7)) | 0;
    const last = (first + count) | 0;
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    let j = first;
    for (; j < end; j += 8) {
      s0 += table[x[j]];
      s1 += table[x[j + 1]];
      s2 += table[x[j + 2]];
      s3 += table[x[j + 3]];
      s4 += table[x[j + 4]];
      s5 += table[x[j + 5]];
      s6 += table[x[j + 6]];
      s7 += table[x[j + 7]];
    }
    let sum = ((s0 + s2) + (s4 + s6)) + ((s1 + s3) + (s5 + s7));
    for (; j < last; j++) sum += table[x[j]];
    const mean = sum / count;
    s0 =
      s1 =
      s2 =
      s3 =
      s4 =
      s5 =
      s6 =
      s7 =
        0;
    for (j = first; j < end; j += 8) {
      const a0 = table[x[j]] - mean, a1 = table[x[j + 1]] - mean;
      const a2 = table[x[j + 2]] - mean, a3 = table[x[j + 3]] - mean;
      const a4 = table[x[j + 4]] - mean, a5 = table[x[j + 5]] - mean;
      const a6 = table[x[j + 6]] - mean, a7 = table[x[j + 7]] - mean;
      s0 += a0 * a0;
      s1 += a1 * a1;
      s2 += a2 * a2;
      s3 += a3 * a3;
      s4 += a4 * a4;
      s5 += a5 * a5;
      s6 += a6 * a6;
      s7 += a7 * a7;
    }
    let m2 = ((s0 + s2) + (s4 + s6)) + ((s1 + s3) + (s5 + s7));
    for (; j < last; j++) {
      const a = table[x[j]] - mean;
      m2 += a * a;
    }
    mergeMoments(k, 1, 2, k[3], sum, m2, count);
    k[3] += count;
  }
}

/** out = x * k[0] + k[1] over row (n, c), float32 (see {@linkcode affine}). */
export function normalizeRowF32(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  _scratch: ThreadScratch,
): void {
  const out = s.out as Float32Array;
  const outAt = s.outAt;
  const o0 = (outAt.base + n * outAt.strideN + c * outAt.strideC) | 0;
  const x = s.x as Float32Array;
  const xAt = s.xAt;
  const x0 = (xAt.base + n * xAt.strideN + c * xAt.strideC) | 0;
  const length = s.layout.inner | 0;
  const k0 = k[0];
  const k1 = k[1];
  for (let j = 0; j < length; j++) out[(o0 + j) | 0] = affine(x[(x0 + j) | 0], k0, k1);
}

/** {@linkcode normalizeRowF32} for float16. */
export function normalizeRowF16(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: ThreadScratch,
): void {
  const out = s.out as Float16Array;
  const outAt = s.outAt;
  const o0 = (outAt.base + n * outAt.strideN + c * outAt.strideC) | 0;
  const x = s.x as Uint16Array;
  const xAt = s.xAt;
  const x0 = (xAt.base + n * xAt.strideN + c * xAt.strideC) | 0;
  const length = s.layout.inner | 0;
  const k0 = k[0];
  const k1 = k[1];
  const table = decodeTable(scratch, s.dtype === BFLOAT16);
  for (let j = 0; j < length; j++) {
    out[(o0 + j) | 0] = affine(table[x[(x0 + j) | 0]], k0, k1);
  }
}

/** {@linkcode normalizeRowF32} for bfloat16 (see {@linkcode bf16Block}). */
export function normalizeRowBf16(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: ThreadScratch,
): void {
  const out = s.out as Uint16Array;
  const outAt = s.outAt;
  const o0 = (outAt.base + n * outAt.strideN + c * outAt.strideC) | 0;
  const x = s.x as Uint16Array;
  const xAt = s.xAt;
  const x0 = (xAt.base + n * xAt.strideN + c * xAt.strideC) | 0;
  const length = s.layout.inner | 0;
  const k0 = k[0];
  const k1 = k[1];
  const table = decodeTable(scratch, true);
  const { aliasF32, aliasI32 } = scratch;
  const [block, bits] = bf16Block(scratch);
  for (let start = 0; start < length; start += SEGMENT_ELEMENTS) {
    const count = Math.min(SEGMENT_ELEMENTS, length - start);
    const os = (o0 + start) | 0;
    const xs = (x0 + start) | 0;
    for (let j = 0; j < count; j++) {
      block[j] = affine(table[x[(xs + j) | 0]], k0, k1);
    }
    for (let j = 0; j < count; j++) {
      const w = bits[j];
      out[(os + j) | 0] = (w & 0xffff) !== 0x8000 && (w & 0x7f800000) !== 0x7f800000
        ? (w + 0x7fff + ((w >> 16) & 1)) >> 16
        : bf16Exact(affine(table[x[(xs + j) | 0]], k0, k1), aliasF32, aliasI32);
    }
  }
}

/** out = dy * k[0] + (x * k[1] + k[2]) over row (n, c), float32 (see {@linkcode gradient}). */
export function gradientRowF32(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  _scratch: ThreadScratch,
): void {
  const out = s.out as Float32Array;
  const outAt = s.outAt;
  const o0 = (outAt.base + n * outAt.strideN + c * outAt.strideC) | 0;
  const dy = s.dy as Float32Array;
  const dyAt = s.dyAt;
  const d0 = (dyAt.base + n * dyAt.strideN + c * dyAt.strideC) | 0;
  const x = s.x as Float32Array;
  const xAt = s.xAt;
  const x0 = (xAt.base + n * xAt.strideN + c * xAt.strideC) | 0;
  const length = s.layout.inner | 0;
  const k0 = k[0];
  const k1 = k[1];
  const k2 = k[2];
  for (let j = 0; j < length; j++) {
    out[(o0 + j) | 0] = gradient(dy[(d0 + j) | 0], x[(x0 + j) | 0], k0, k1, k2);
  }
}

/** {@linkcode gradientRowF32} for float16. */
export function gradientRowF16(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: ThreadScratch,
): void {
  const out = s.out as Float16Array;
  const outAt = s.outAt;
  const o0 = (outAt.base + n * outAt.strideN + c * outAt.strideC) | 0;
  const dy = s.dy as Uint16Array;
  const dyAt = s.dyAt;
  const d0 = (dyAt.base + n * dyAt.strideN + c * dyAt.strideC) | 0;
  const x = s.x as Uint16Array;
  const xAt = s.xAt;
  const x0 = (xAt.base + n * xAt.strideN + c * xAt.strideC) | 0;
  const length = s.layout.inner | 0;
  const k0 = k[0];
  const k1 = k[1];
  const k2 = k[2];
  const table = decodeTable(scratch, s.dtype === BFLOAT16);
  for (let j = 0; j < length; j++) {
    out[(o0 + j) | 0] = gradient(table[dy[(d0 + j) | 0]], table[x[(x0 + j) | 0]], k0, k1, k2);
  }
}

/** {@linkcode gradientRowF32} for bfloat16 (see {@linkcode bf16Block}). */
export function gradientRowBf16(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: ThreadScratch,
): void {
  const out = s.out as Uint16Array;
  const outAt = s.outAt;
  const o0 = (outAt.base + n * outAt.strideN + c * outAt.strideC) | 0;
  const dy = s.dy as Uint16Array;
  const dyAt = s.dyAt;
  const d0 = (dyAt.base + n * dyAt.strideN + c * dyAt.strideC) | 0;
  const x = s.x as Uint16Array;
  const xAt = s.xAt;
  const x0 = (xAt.base + n * xAt.strideN + c * xAt.strideC) | 0;
  const length = s.layout.inner | 0;
  const k0 = k[0];
  const k1 = k[1];
  const k2 = k[2];
  const table = decodeTable(scratch, true);
  const { aliasF32, aliasI32 } = scratch;
  const [block, bits] = bf16Block(scratch);
  for (let start = 0; start < length; start += SEGMENT_ELEMENTS) {
    const count = Math.min(SEGMENT_ELEMENTS, length - start);
    const os = (o0 + start) | 0;
    const xs = (x0 + start) | 0;
    const ds = (d0 + start) | 0;
    for (let j = 0; j < count; j++) {
      block[j] = gradient(table[dy[(ds + j) | 0]], table[x[(xs + j) | 0]], k0, k1, k2);
    }
    for (let j = 0; j < count; j++) {
      const w = bits[j];
      out[(os + j) | 0] = (w & 0xffff) !== 0x8000 && (w & 0x7f800000) !== 0x7f800000
        ? (w + 0x7fff + ((w >> 16) & 1)) >> 16
        : bf16Exact(
          gradient(table[dy[(ds + j) | 0]], table[x[(xs + j) | 0]], k0, k1, k2),
          aliasF32,
          aliasI32,
        );
    }
  }
}

/** out = dy * k[0] over row (n, c), float32. */
export function scaleRowF32(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  _scratch: ThreadScratch,
): void {
  const out = s.out as Float32Array;
  const outAt = s.outAt;
  const o0 = (outAt.base + n * outAt.strideN + c * outAt.strideC) | 0;
  const dy = s.dy as Float32Array;
  const dyAt = s.dyAt;
  const d0 = (dyAt.base + n * dyAt.strideN + c * dyAt.strideC) | 0;
  const length = s.layout.inner | 0;
  const k0 = k[0];
  for (let j = 0; j < length; j++) out[(o0 + j) | 0] = dy[(d0 + j) | 0] * k0;
}

/** {@linkcode scaleRowF32} for float16. */
export function scaleRowF16(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: ThreadScratch,
): void {
  const out = s.out as Float16Array;
  const outAt = s.outAt;
  const o0 = (outAt.base + n * outAt.strideN + c * outAt.strideC) | 0;
  const dy = s.dy as Uint16Array;
  const dyAt = s.dyAt;
  const d0 = (dyAt.base + n * dyAt.strideN + c * dyAt.strideC) | 0;
  const length = s.layout.inner | 0;
  const k0 = k[0];
  const table = decodeTable(scratch, s.dtype === BFLOAT16);
  for (let j = 0; j < length; j++) out[(o0 + j) | 0] = table[dy[(d0 + j) | 0]] * k0;
}

/** {@linkcode scaleRowF32} for bfloat16 (see {@linkcode bf16Block}). */
export function scaleRowBf16(
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: ThreadScratch,
): void {
  const out = s.out as Uint16Array;
  const outAt = s.outAt;
  const o0 = (outAt.base + n * outAt.strideN + c * outAt.strideC) | 0;
  const dy = s.dy as Uint16Array;
  const dyAt = s.dyAt;
  const d0 = (dyAt.base + n * dyAt.strideN + c * dyAt.strideC) | 0;
  const length = s.layout.inner | 0;
  const k0 = k[0];
  const table = decodeTable(scratch, true);
  const { aliasF32, aliasI32 } = scratch;
  const [block, bits] = bf16Block(scratch);
  for (let start = 0; start < length; start += SEGMENT_ELEMENTS) {
    const count = Math.min(SEGMENT_ELEMENTS, length - start);
    const os = (o0 + start) | 0;
    const ds = (d0 + start) | 0;
    for (let j = 0; j < count; j++) block[j] = table[dy[(ds + j) | 0]] * k0;
    for (let j = 0; j < count; j++) {
      const w = bits[j];
      out[(os + j) | 0] = (w & 0xffff) !== 0x8000 && (w & 0x7f800000) !== 0x7f800000
        ? (w + 0x7fff + ((w >> 16) & 1)) >> 16
        : bf16Exact(table[dy[(ds + j) | 0]] * k0, aliasF32, aliasI32);
    }
  }
}
