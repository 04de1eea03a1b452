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
import { batchNormGrad, groupNormGrad, normalized } from "./formulas.ts";
import { SEGMENT_ELEMENTS } from "./layout_types.ts";
import { mergeMoments } from "./moments.ts";
import type { RowStage } from "./stage_types.ts";
import { BFLOAT16 } from "./stage_types.ts";

/** k[1] += sum(dy), k[2] += sum(dy * (x - k[0])) over row (n, c), float32. */
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
  // One chain per sum measured fastest here (the loop is bound by memory, not by the
  // float64 add latency; unrolling into two chains was 10% slower).
  let sum = 0;
  let dot = 0;
  for (let j = 0; j < length; j++) {
    const d = dy[(d0 + j) | 0];
    sum += d;
    dot += d * (x[(x0 + j) | 0] - mean);
  }
  k[1] += sum;
  k[2] += dot;
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
  // One chain per sum measured fastest here (the loop is bound by memory, not by the
  // float64 add latency; unrolling into two chains was 10% slower).
  let sum = 0;
  let dot = 0;
  for (let j = 0; j < length; j++) {
    const d = table[dy[(d0 + j) | 0]];
    sum += d;
    dot += d * (table[x[(x0 + j) | 0]] - mean);
  }
  k[1] += sum;
  k[2] += dot;
}

/**
 * Merges the statistics of row (n, c) into k[1] (sum) and k[2] (squared deviations), which
 * hold k[3] elements (updated), float32. Segments of SEGMENT_ELEMENTS are read twice while in
 * cache (sum, then squared deviations from the segment mean) and merged with Chan's update.
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
    const end = x0 + Math.min(length, start + SEGMENT_ELEMENTS);
    const first = (x0 + start) | 0;
    // Four independent chains per sum (float64 add latency), combined in a fixed order.
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    let j = first;
    for (; j + 3 < end; j += 4) {
      s0 += x[j];
      s1 += x[j + 1];
      s2 += x[j + 2];
      s3 += x[j + 3];
    }
    for (; j < end; j++) s0 += x[j];
    const sum = (s0 + s1) + (s2 + s3);
    const count = end - first;
    const mean = sum / count;
    let q0 = 0;
    let q1 = 0;
    let q2 = 0;
    let q3 = 0;
    for (j = first; j + 3 < end; j += 4) {
      const a = x[j] - mean;
      const b = x[j + 1] - mean;
      const c = x[j + 2] - mean;
      const d = x[j + 3] - mean;
      q0 += a * a;
      q1 += b * b;
      q2 += c * c;
      q3 += d * d;
    }
    for (; j < end; j++) {
      const a = x[j] - mean;
      q0 += a * a;
    }
    const m2 = (q0 + q1) + (q2 + q3);
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
    const end = x0 + Math.min(length, start + SEGMENT_ELEMENTS);
    const first = (x0 + start) | 0;
    // Four independent chains per sum (float64 add latency), combined in a fixed order.
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    let j = first;
    for (; j + 3 < end; j += 4) {
      s0 += table[x[j]];
      s1 += table[x[j + 1]];
      s2 += table[x[j + 2]];
      s3 += table[x[j + 3]];
    }
    for (; j < end; j++) s0 += table[x[j]];
    const sum = (s0 + s1) + (s2 + s3);
    const count = end - first;
    const mean = sum / count;
    let q0 = 0;
    let q1 = 0;
    let q2 = 0;
    let q3 = 0;
    for (j = first; j + 3 < end; j += 4) {
      const a = table[x[j]] - mean;
      const b = table[x[j + 1]] - mean;
      const c = table[x[j + 2]] - mean;
      const d = table[x[j + 3]] - mean;
      q0 += a * a;
      q1 += b * b;
      q2 += c * c;
      q3 += d * d;
    }
    for (; j < end; j++) {
      const a = table[x[j]] - mean;
      q0 += a * a;
    }
    const m2 = (q0 + q1) + (q2 + q3);
    mergeMoments(k, 1, 2, k[3], sum, m2, count);
    k[3] += count;
  }
}

/** out = (x - k[0]) * k[1] + k[2] over row (n, c), float32. */
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
  const k2 = k[2];
  for (let j = 0; j < length; j++) out[(o0 + j) | 0] = normalized(x[(x0 + j) | 0], k0, k1, k2);
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
  const k2 = k[2];
  const table = decodeTable(scratch, s.dtype === BFLOAT16);
  for (let j = 0; j < length; j++) {
    out[(o0 + j) | 0] = normalized(table[x[(x0 + j) | 0]], k0, k1, k2);
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
  const k2 = k[2];
  const table = decodeTable(scratch, true);
  const { aliasF32, aliasI32 } = scratch;
  const [block, bits] = bf16Block(scratch);
  for (let start = 0; start < length; start += SEGMENT_ELEMENTS) {
    const count = Math.min(SEGMENT_ELEMENTS, length - start);
    const os = (o0 + start) | 0;
    const xs = (x0 + start) | 0;
    for (let j = 0; j < count; j++) {
      block[j] = normalized(table[x[(xs + j) | 0]], k0, k1, k2);
    }
    for (let j = 0; j < count; j++) {
      const w = bits[j];
      out[(os + j) | 0] = (w & 0xffff) !== 0x8000 && (w & 0x7f800000) !== 0x7f800000
        ? (w + 0x7fff + ((w >> 16) & 1)) >> 16
        : bf16Exact(normalized(table[x[(xs + j) | 0]], k0, k1, k2), aliasF32, aliasI32);
    }
  }
}

/** out = k[1] * (dy - k[2] - (x - k[0]) * k[3]) over row (n, c), float32. */
export function batchNormGradRowF32(
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
  const k3 = k[3];
  for (let j = 0; j < length; j++) {
    out[(o0 + j) | 0] = batchNormGrad(dy[(d0 + j) | 0], x[(x0 + j) | 0], k0, k1, k2, k3);
  }
}

/** {@linkcode batchNormGradRowF32} for float16. */
export function batchNormGradRowF16(
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
  const k3 = k[3];
  const table = decodeTable(scratch, s.dtype === BFLOAT16);
  for (let j = 0; j < length; j++) {
    out[(o0 + j) | 0] = batchNormGrad(
      table[dy[(d0 + j) | 0]],
      table[x[(x0 + j) | 0]],
      k0,
      k1,
      k2,
      k3,
    );
  }
}

/** {@linkcode batchNormGradRowF32} for bfloat16 (see {@linkcode bf16Block}). */
export function batchNormGradRowBf16(
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
  const k3 = k[3];
  const table = decodeTable(scratch, true);
  const { aliasF32, aliasI32 } = scratch;
  const [block, bits] = bf16Block(scratch);
  for (let start = 0; start < length; start += SEGMENT_ELEMENTS) {
    const count = Math.min(SEGMENT_ELEMENTS, length - start);
    const os = (o0 + start) | 0;
    const xs = (x0 + start) | 0;
    const ds = (d0 + start) | 0;
    for (let j = 0; j < count; j++) {
      block[j] = batchNormGrad(
        table[dy[(ds + j) | 0]],
        table[x[(xs + j) | 0]],
        k0,
        k1,
        k2,
        k3,
      );
    }
    for (let j = 0; j < count; j++) {
      const w = bits[j];
      out[(os + j) | 0] = (w & 0xffff) !== 0x8000 && (w & 0x7f800000) !== 0x7f800000
        ? (w + 0x7fff + ((w >> 16) & 1)) >> 16
        : bf16Exact(
          batchNormGrad(table[dy[(ds + j) | 0]], table[x[(xs + j) | 0]], k0, k1, k2, k3),
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

/** out = k[1] * (dy * k[2] - k[3] - (x - k[0]) * k[1] * k[4]) over row (n, c), float32. */
export function groupNormGradRowF32(
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
  const k3 = k[3];
  const k4 = k[4];
  for (let j = 0; j < length; j++) {
    out[(o0 + j) | 0] = groupNormGrad(dy[(d0 + j) | 0], x[(x0 + j) | 0], k0, k1, k2, k3, k4);
  }
}

/** {@linkcode groupNormGradRowF32} for float16. */
export function groupNormGradRowF16(
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
  const k3 = k[3];
  const k4 = k[4];
  const table = decodeTable(scratch, s.dtype === BFLOAT16);
  for (let j = 0; j < length; j++) {
    out[(o0 + j) | 0] = groupNormGrad(
      table[dy[(d0 + j) | 0]],
      table[x[(x0 + j) | 0]],
      k0,
      k1,
      k2,
      k3,
      k4,
    );
  }
}

/** {@linkcode groupNormGradRowF32} for bfloat16 (see {@linkcode bf16Block}). */
export function groupNormGradRowBf16(
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
  const k3 = k[3];
  const k4 = k[4];
  const table = decodeTable(scratch, true);
  const { aliasF32, aliasI32 } = scratch;
  const [block, bits] = bf16Block(scratch);
  for (let start = 0; start < length; start += SEGMENT_ELEMENTS) {
    const count = Math.min(SEGMENT_ELEMENTS, length - start);
    const os = (o0 + start) | 0;
    const xs = (x0 + start) | 0;
    const ds = (d0 + start) | 0;
    for (let j = 0; j < count; j++) {
      block[j] = groupNormGrad(
        table[dy[(ds + j) | 0]],
        table[x[(xs + j) | 0]],
        k0,
        k1,
        k2,
        k3,
        k4,
      );
    }
    for (let j = 0; j < count; j++) {
      const w = bits[j];
      out[(os + j) | 0] = (w & 0xffff) !== 0x8000 && (w & 0x7f800000) !== 0x7f800000
        ? (w + 0x7fff + ((w >> 16) & 1)) >> 16
        : bf16Exact(
          groupNormGrad(table[dy[(ds + j) | 0]], table[x[(xs + j) | 0]], k0, k1, k2, k3, k4),
          aliasF32,
          aliasI32,
        );
    }
  }
}
