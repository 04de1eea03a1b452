/**
 * Pixel kernels: channels-last blocks. Pixel q = n * inner + i of a tensor starts at
 * base + n * strideN + i * strideI and holds its C channels at unit stride; a kernel walks
 * pixels [q0, q1) and, inside each, the channels, with per-channel constants or accumulators
 * in `p` (one Float64Array of length C each: indexing p[j][c] measured 1.5x faster than
 * offsets into one packed array). One signature, `(s, q0, q1, p, scratch)`, for the drivers'
 * primed call sites (see drivers.ts); one kernel per dtype, as in row_kernels.ts.
 *
 * Worker-safe (see codecs.ts).
 *
 * @module
 */

import { bf16Block, bf16Exact, channelScratch, decodeTable, type ThreadScratch } from "./codecs.ts";
import { affine, gradient } from "./formulas.ts";
import type { PixelStage } from "./stage_types.ts";
import { BFLOAT16 } from "./stage_types.ts";

/**
 * Per channel over pixels [q0, q1): p[0][c] += sum(dy), p[1][c] += sum(dy * (x - p[2][c])),
 * float32. Four pixels per step share each channel's accumulator update (measured 1.4x
 * faster than one pixel per step; the sums' association is fixed by the pixel range).
 */
export function sumsPixelsF32(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  _scratch: ThreadScratch,
): void {
  const dy = s.dy as Float32Array;
  const x = s.x as Float32Array;
  const [sums, dots, means] = p;
  const channels = s.layout.C;
  const inner = s.layout.inner;
  const dyBase = s.dyAt.base;
  const dyN = s.dyAt.strideN;
  const dyI = s.dyAt.strideI;
  const xBase = s.xAt.base;
  const xN = s.xAt.strideN;
  const xI = s.xAt.strideI;
  let n = Math.floor(q0 / inner);
  let i = q0 - n * inner;
  let q = q0;
  for (; q + 3 < q1; q += 4) {
    const b0 = (dyBase + n * dyN + i * dyI) | 0;
    const x0 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const b1 = (dyBase + n * dyN + i * dyI) | 0;
    const x1 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const b2 = (dyBase + n * dyN + i * dyI) | 0;
    const x2 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const b3 = (dyBase + n * dyN + i * dyI) | 0;
    const x3 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    for (let c = 0; c < channels; c++) {
      const m = means[c];
      const d0 = dy[(b0 + c) | 0];
      const d1 = dy[(b1 + c) | 0];
      const d2 = dy[(b2 + c) | 0];
      const d3 = dy[(b3 + c) | 0];
      sums[c] += (d0 + d1) + (d2 + d3);
      dots[c] += (d0 * (x[(x0 + c) | 0] - m) + d1 * (x[(x1 + c) | 0] - m)) +
        (d2 * (x[(x2 + c) | 0] - m) + d3 * (x[(x3 + c) | 0] - m));
    }
  }
  for (; q < q1; q++) {
    const b0 = (dyBase + n * dyN + i * dyI) | 0;
    const x0 = (xBase + n * xN + i * xI) | 0;
    for (let c = 0; c < channels; c++) {
      const d = dy[(b0 + c) | 0];
      sums[c] += d;
      dots[c] += d * (x[(x0 + c) | 0] - means[c]);
    }
    if (++i === inner) {
      i = 0;
      n++;
    }
  }
}

/** {@linkcode sumsPixelsF32} for float16/bfloat16 (decoded through a table). */
export function sumsPixelsU16(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: ThreadScratch,
): void {
  const dy = s.dy as Uint16Array;
  const x = s.x as Uint16Array;
  const [sums, dots, means] = p;
  const channels = s.layout.C;
  const inner = s.layout.inner;
  const dyBase = s.dyAt.base;
  const dyN = s.dyAt.strideN;
  const dyI = s.dyAt.strideI;
  const xBase = s.xAt.base;
  const xN = s.xAt.strideN;
  const xI = s.xAt.strideI;
  const table = decodeTable(scratch, s.dtype === BFLOAT16);
  let n = Math.floor(q0 / inner);
  let i = q0 - n * inner;
  let q = q0;
  for (; q + 3 < q1; q += 4) {
    const b0 = (dyBase + n * dyN + i * dyI) | 0;
    const x0 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const b1 = (dyBase + n * dyN + i * dyI) | 0;
    const x1 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const b2 = (dyBase + n * dyN + i * dyI) | 0;
    const x2 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const b3 = (dyBase + n * dyN + i * dyI) | 0;
    const x3 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    for (let c = 0; c < channels; c++) {
      const m = means[c];
      const d0 = table[dy[(b0 + c) | 0]];
      const d1 = table[dy[(b1 + c) | 0]];
      const d2 = table[dy[(b2 + c) | 0]];
      const d3 = table[dy[(b3 + c) | 0]];
      sums[c] += (d0 + d1) + (d2 + d3);
      dots[c] += (d0 * (table[x[(x0 + c) | 0]] - m) + d1 * (table[x[(x1 + c) | 0]] - m)) +
        (d2 * (table[x[(x2 + c) | 0]] - m) + d3 * (table[x[(x3 + c) | 0]] - m));
    }
  }
  for (; q < q1; q++) {
    const b0 = (dyBase + n * dyN + i * dyI) | 0;
    const x0 = (xBase + n * xN + i * xI) | 0;
    for (let c = 0; c < channels; c++) {
      const d = table[dy[(b0 + c) | 0]];
      sums[c] += d;
      dots[c] += d * (table[x[(x0 + c) | 0]] - means[c]);
    }
    if (++i === inner) {
      i = 0;
      n++;
    }
  }
}

/**
 * Two-pass statistics per channel over pixels [q0, q1) (a block small enough to stay in
 * cache): p[0][c] = sum(x), p[1][c] = sum((x - m_c)^2) with m_c the block's channel mean.
 * Overwrites both, float32. Four pixels per step, as in {@linkcode sumsPixelsF32}.
 */
export function statsPixelsF32(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: ThreadScratch,
): void {
  const x = s.x as Float32Array;
  const [sums, m2s] = p;
  const channels = s.layout.C;
  const inner = s.layout.inner;
  const xBase = s.xAt.base;
  const xN = s.xAt.strideN;
  const xI = s.xAt.strideI;
  const means = channelScratch(scratch, channels);
  sums.fill(0, 0, channels);
  m2s.fill(0, 0, channels);
  const n0 = Math.floor(q0 / inner);
  const i0 = q0 - n0 * inner;
  let n = n0;
  let i = i0;
  let q = q0;
  for (; q + 3 < q1; q += 4) {
    const x0 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const x1 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const x2 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const x3 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    for (let c = 0; c < channels; c++) {
      sums[c] += (x[(x0 + c) | 0] + x[(x1 + c) | 0]) + (x[(x2 + c) | 0] + x[(x3 + c) | 0]);
    }
  }
  for (; q < q1; q++) {
    const x0 = (xBase + n * xN + i * xI) | 0;
    for (let c = 0; c < channels; c++) sums[c] += x[(x0 + c) | 0];
    if (++i === inner) {
      i = 0;
      n++;
    }
  }
  const count = q1 - q0;
  for (let c = 0; c < channels; c++) means[c] = sums[c] / count;
  n = n0;
  i = i0;
  q = q0;
  for (; q + 3 < q1; q += 4) {
    const x0 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const x1 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const x2 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const x3 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    for (let c = 0; c < channels; c++) {
      const m = means[c];
      const a = x[(x0 + c) | 0] - m;
      const b = x[(x1 + c) | 0] - m;
      const d = x[(x2 + c) | 0] - m;
      const e = x[(x3 + c) | 0] - m;
      m2s[c] += (a * a + b * b) + (d * d + e * e);
    }
  }
  for (; q < q1; q++) {
    const x0 = (xBase + n * xN + i * xI) | 0;
    for (let c = 0; c < channels; c++) {
      const a = x[(x0 + c) | 0] - means[c];
      m2s[c] += a * a;
    }
    if (++i === inner) {
      i = 0;
      n++;
    }
  }
}

/** {@linkcode statsPixelsF32} for float16/bfloat16 (decoded through a table). */
export function statsPixelsU16(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: ThreadScratch,
): void {
  const x = s.x as Uint16Array;
  const [sums, m2s] = p;
  const channels = s.layout.C;
  const inner = s.layout.inner;
  const xBase = s.xAt.base;
  const xN = s.xAt.strideN;
  const xI = s.xAt.strideI;
  const table = decodeTable(scratch, s.dtype === BFLOAT16);
  const means = channelScratch(scratch, channels);
  sums.fill(0, 0, channels);
  m2s.fill(0, 0, channels);
  const n0 = Math.floor(q0 / inner);
  const i0 = q0 - n0 * inner;
  let n = n0;
  let i = i0;
  let q = q0;
  for (; q + 3 < q1; q += 4) {
    const x0 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const x1 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const x2 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const x3 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    for (let c = 0; c < channels; c++) {
      sums[c] += (table[x[(x0 + c) | 0]] + table[x[(x1 + c) | 0]]) +
        (table[x[(x2 + c) | 0]] + table[x[(x3 + c) | 0]]);
    }
  }
  for (; q < q1; q++) {
    const x0 = (xBase + n * xN + i * xI) | 0;
    for (let c = 0; c < channels; c++) sums[c] += table[x[(x0 + c) | 0]];
    if (++i === inner) {
      i = 0;
      n++;
    }
  }
  const count = q1 - q0;
  for (let c = 0; c < channels; c++) means[c] = sums[c] / count;
  n = n0;
  i = i0;
  q = q0;
  for (; q + 3 < q1; q += 4) {
    const x0 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const x1 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const x2 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const x3 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    for (let c = 0; c < channels; c++) {
      const m = means[c];
      const a = table[x[(x0 + c) | 0]] - m;
      const b = table[x[(x1 + c) | 0]] - m;
      const d = table[x[(x2 + c) | 0]] - m;
      const e = table[x[(x3 + c) | 0]] - m;
      m2s[c] += (a * a + b * b) + (d * d + e * e);
    }
  }
  for (; q < q1; q++) {
    const x0 = (xBase + n * xN + i * xI) | 0;
    for (let c = 0; c < channels; c++) {
      const a = table[x[(x0 + c) | 0]] - means[c];
      m2s[c] += a * a;
    }
    if (++i === inner) {
      i = 0;
      n++;
    }
  }
}

/**
 * Channels-last out = x * scale[c] + shift[c] (p = [scale, shift]; see {@linkcode affine}),
 * float32.
 */
export function normalizePixelsF32(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  _scratch: ThreadScratch,
): void {
  const out = s.out as Float32Array;
  const x = s.x as Float32Array;
  const [scale, shift] = p;
  const channels = s.layout.C;
  const inner = s.layout.inner;
  const outBase = s.outAt.base;
  const outN = s.outAt.strideN;
  const outI = s.outAt.strideI;
  const xBase = s.xAt.base;
  const xN = s.xAt.strideN;
  const xI = s.xAt.strideI;
  let n = Math.floor(q0 / inner);
  let i = q0 - n * inner;
  let q = q0;
  // Four pixels per step load each channel's constants once.
  for (; q + 3 < q1; q += 4) {
    const o0 = (outBase + n * outN + i * outI) | 0;
    const x0 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const o1 = (outBase + n * outN + i * outI) | 0;
    const x1 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const o2 = (outBase + n * outN + i * outI) | 0;
    const x2 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const o3 = (outBase + n * outN + i * outI) | 0;
    const x3 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    for (let c = 0; c < channels; c++) {
      const m0 = scale[c];
      const m1 = shift[c];
      out[(o0 + c) | 0] = affine(x[(x0 + c) | 0], m0, m1);
      out[(o1 + c) | 0] = affine(x[(x1 + c) | 0], m0, m1);
      out[(o2 + c) | 0] = affine(x[(x2 + c) | 0], m0, m1);
      out[(o3 + c) | 0] = affine(x[(x3 + c) | 0], m0, m1);
    }
  }
  for (; q < q1; q++) {
    const o0 = (outBase + n * outN + i * outI) | 0;
    const x0 = (xBase + n * xN + i * xI) | 0;
    for (let c = 0; c < channels; c++) {
      const m0 = scale[c];
      const m1 = shift[c];
      out[(o0 + c) | 0] = affine(x[(x0 + c) | 0], m0, m1);
    }
    if (++i === inner) {
      i = 0;
      n++;
    }
  }
}

/** {@linkcode normalizePixelsF32} for float16. */
export function normalizePixelsF16(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: ThreadScratch,
): void {
  const out = s.out as Float16Array;
  const x = s.x as Uint16Array;
  const [scale, shift] = p;
  const channels = s.layout.C;
  const inner = s.layout.inner;
  const outBase = s.outAt.base;
  const outN = s.outAt.strideN;
  const outI = s.outAt.strideI;
  const xBase = s.xAt.base;
  const xN = s.xAt.strideN;
  const xI = s.xAt.strideI;
  const table = decodeTable(scratch, s.dtype === BFLOAT16);
  let n = Math.floor(q0 / inner);
  let i = q0 - n * inner;
  let q = q0;
  // Four pixels per step load each channel's constants once.
  for (; q + 3 < q1; q += 4) {
    const o0 = (outBase + n * outN + i * outI) | 0;
    const x0 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const o1 = (outBase + n * outN + i * outI) | 0;
    const x1 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const o2 = (outBase + n * outN + i * outI) | 0;
    const x2 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const o3 = (outBase + n * outN + i * outI) | 0;
    const x3 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    for (let c = 0; c < channels; c++) {
      const m0 = scale[c];
      const m1 = shift[c];
      out[(o0 + c) | 0] = affine(table[x[(x0 + c) | 0]], m0, m1);
      out[(o1 + c) | 0] = affine(table[x[(x1 + c) | 0]], m0, m1);
      out[(o2 + c) | 0] = affine(table[x[(x2 + c) | 0]], m0, m1);
      out[(o3 + c) | 0] = affine(table[x[(x3 + c) | 0]], m0, m1);
    }
  }
  for (; q < q1; q++) {
    const o0 = (outBase + n * outN + i * outI) | 0;
    const x0 = (xBase + n * xN + i * xI) | 0;
    for (let c = 0; c < channels; c++) {
      const m0 = scale[c];
      const m1 = shift[c];
      out[(o0 + c) | 0] = affine(table[x[(x0 + c) | 0]], m0, m1);
    }
    if (++i === inner) {
      i = 0;
      n++;
    }
  }
}

/** {@linkcode normalizePixelsF32} for bfloat16 (see {@linkcode bf16Block}). */
export function normalizePixelsBf16(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: ThreadScratch,
): void {
  const out = s.out as Uint16Array;
  const x = s.x as Uint16Array;
  const [scale, shift] = p;
  const channels = s.layout.C;
  const inner = s.layout.inner;
  const outBase = s.outAt.base;
  const outN = s.outAt.strideN;
  const outI = s.outAt.strideI;
  const xBase = s.xAt.base;
  const xN = s.xAt.strideN;
  const xI = s.xAt.strideI;
  const table = decodeTable(scratch, s.dtype === BFLOAT16);
  const { aliasF32, aliasI32 } = scratch;
  const [block, bits] = bf16Block(scratch);
  const chunk = Math.max(1, Math.floor(block.length / channels));
  for (let first = q0; first < q1; first += chunk) {
    const last = Math.min(q1, first + chunk);
    let n = Math.floor(first / inner);
    let i = first - n * inner;
    let m = 0;
    for (let q = first; q < last; q++) {
      const xb = (xBase + n * xN + i * xI) | 0;
      for (let c = 0; c < channels; c++) {
        block[m++] = affine(table[x[(xb + c) | 0]], scale[c], shift[c]);
      }
      if (++i === inner) {
        i = 0;
        n++;
      }
    }
    n = Math.floor(first / inner);
    i = first - n * inner;
    m = 0;
    for (let q = first; q < last; q++) {
      const ob = (outBase + n * outN + i * outI) | 0;
      const xb = (xBase + n * xN + i * xI) | 0;
      for (let c = 0; c < channels; c++) {
        const f = bits[m++];
        out[(ob + c) | 0] = (f & 0xffff) !== 0x8000 && (f & 0x7f800000) !== 0x7f800000
          ? (f + 0x7fff + ((f >> 16) & 1)) >> 16
          : bf16Exact(
            affine(table[x[(xb + c) | 0]], scale[c], shift[c]),
            aliasF32,
            aliasI32,
          );
      }
      if (++i === inner) {
        i = 0;
        n++;
      }
    }
  }
}

/**
 * Channels-last out = dy * ka[c] + (x * kb[c] + kc[c]) (p = [ka, kb, kc]; see
 * {@linkcode gradient}), float32.
 */
export function gradientPixelsF32(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  _scratch: ThreadScratch,
): void {
  const out = s.out as Float32Array;
  const dy = s.dy as Float32Array;
  const x = s.x as Float32Array;
  const [ka, kb, kc] = p;
  const channels = s.layout.C;
  const inner = s.layout.inner;
  const outBase = s.outAt.base;
  const outN = s.outAt.strideN;
  const outI = s.outAt.strideI;
  const dyBase = s.dyAt.base;
  const dyN = s.dyAt.strideN;
  const dyI = s.dyAt.strideI;
  const xBase = s.xAt.base;
  const xN = s.xAt.strideN;
  const xI = s.xAt.strideI;
  let n = Math.floor(q0 / inner);
  let i = q0 - n * inner;
  let q = q0;
  // Four pixels per step load each channel's constants once.
  for (; q + 3 < q1; q += 4) {
    const o0 = (outBase + n * outN + i * outI) | 0;
    const d0 = (dyBase + n * dyN + i * dyI) | 0;
    const x0 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const o1 = (outBase + n * outN + i * outI) | 0;
    const d1 = (dyBase + n * dyN + i * dyI) | 0;
    const x1 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const o2 = (outBase + n * outN + i * outI) | 0;
    const d2 = (dyBase + n * dyN + i * dyI) | 0;
    const x2 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const o3 = (outBase + n * outN + i * outI) | 0;
    const d3 = (dyBase + n * dyN + i * dyI) | 0;
    const x3 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    for (let c = 0; c < channels; c++) {
      const m0 = ka[c];
      const m1 = kb[c];
      const m2 = kc[c];
      out[(o0 + c) | 0] = gradient(dy[(d0 + c) | 0], x[(x0 + c) | 0], m0, m1, m2);
      out[(o1 + c) | 0] = gradient(dy[(d1 + c) | 0], x[(x1 + c) | 0], m0, m1, m2);
      out[(o2 + c) | 0] = gradient(dy[(d2 + c) | 0], x[(x2 + c) | 0], m0, m1, m2);
      out[(o3 + c) | 0] = gradient(dy[(d3 + c) | 0], x[(x3 + c) | 0], m0, m1, m2);
    }
  }
  for (; q < q1; q++) {
    const o0 = (outBase + n * outN + i * outI) | 0;
    const d0 = (dyBase + n * dyN + i * dyI) | 0;
    const x0 = (xBase + n * xN + i * xI) | 0;
    for (let c = 0; c < channels; c++) {
      const m0 = ka[c];
      const m1 = kb[c];
      const m2 = kc[c];
      out[(o0 + c) | 0] = gradient(dy[(d0 + c) | 0], x[(x0 + c) | 0], m0, m1, m2);
    }
    if (++i === inner) {
      i = 0;
      n++;
    }
  }
}

/** {@linkcode gradientPixelsF32} for float16. */
export function gradientPixelsF16(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: ThreadScratch,
): void {
  const out = s.out as Float16Array;
  const dy = s.dy as Uint16Array;
  const x = s.x as Uint16Array;
  const [ka, kb, kc] = p;
  const channels = s.layout.C;
  const inner = s.layout.inner;
  const outBase = s.outAt.base;
  const outN = s.outAt.strideN;
  const outI = s.outAt.strideI;
  const dyBase = s.dyAt.base;
  const dyN = s.dyAt.strideN;
  const dyI = s.dyAt.strideI;
  const xBase = s.xAt.base;
  const xN = s.xAt.strideN;
  const xI = s.xAt.strideI;
  const table = decodeTable(scratch, s.dtype === BFLOAT16);
  let n = Math.floor(q0 / inner);
  let i = q0 - n * inner;
  let q = q0;
  // Four pixels per step load each channel's constants once.
  for (; q + 3 < q1; q += 4) {
    const o0 = (outBase + n * outN + i * outI) | 0;
    const d0 = (dyBase + n * dyN + i * dyI) | 0;
    const x0 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const o1 = (outBase + n * outN + i * outI) | 0;
    const d1 = (dyBase + n * dyN + i * dyI) | 0;
    const x1 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const o2 = (outBase + n * outN + i * outI) | 0;
    const d2 = (dyBase + n * dyN + i * dyI) | 0;
    const x2 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const o3 = (outBase + n * outN + i * outI) | 0;
    const d3 = (dyBase + n * dyN + i * dyI) | 0;
    const x3 = (xBase + n * xN + i * xI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    for (let c = 0; c < channels; c++) {
      const m0 = ka[c];
      const m1 = kb[c];
      const m2 = kc[c];
      out[(o0 + c) | 0] = gradient(table[dy[(d0 + c) | 0]], table[x[(x0 + c) | 0]], m0, m1, m2);
      out[(o1 + c) | 0] = gradient(table[dy[(d1 + c) | 0]], table[x[(x1 + c) | 0]], m0, m1, m2);
      out[(o2 + c) | 0] = gradient(table[dy[(d2 + c) | 0]], table[x[(x2 + c) | 0]], m0, m1, m2);
      out[(o3 + c) | 0] = gradient(table[dy[(d3 + c) | 0]], table[x[(x3 + c) | 0]], m0, m1, m2);
    }
  }
  for (; q < q1; q++) {
    const o0 = (outBase + n * outN + i * outI) | 0;
    const d0 = (dyBase + n * dyN + i * dyI) | 0;
    const x0 = (xBase + n * xN + i * xI) | 0;
    for (let c = 0; c < channels; c++) {
      const m0 = ka[c];
      const m1 = kb[c];
      const m2 = kc[c];
      out[(o0 + c) | 0] = gradient(table[dy[(d0 + c) | 0]], table[x[(x0 + c) | 0]], m0, m1, m2);
    }
    if (++i === inner) {
      i = 0;
      n++;
    }
  }
}

/** {@linkcode gradientPixelsF32} for bfloat16 (see {@linkcode bf16Block}). */
export function gradientPixelsBf16(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: ThreadScratch,
): void {
  const out = s.out as Uint16Array;
  const dy = s.dy as Uint16Array;
  const x = s.x as Uint16Array;
  const [ka, kb, kc] = p;
  const channels = s.layout.C;
  const inner = s.layout.inner;
  const outBase = s.outAt.base;
  const outN = s.outAt.strideN;
  const outI = s.outAt.strideI;
  const dyBase = s.dyAt.base;
  const dyN = s.dyAt.strideN;
  const dyI = s.dyAt.strideI;
  const xBase = s.xAt.base;
  const xN = s.xAt.strideN;
  const xI = s.xAt.strideI;
  const table = decodeTable(scratch, s.dtype === BFLOAT16);
  const { aliasF32, aliasI32 } = scratch;
  const [block, bits] = bf16Block(scratch);
  const chunk = Math.max(1, Math.floor(block.length / channels));
  for (let first = q0; first < q1; first += chunk) {
    const last = Math.min(q1, first + chunk);
    let n = Math.floor(first / inner);
    let i = first - n * inner;
    let m = 0;
    for (let q = first; q < last; q++) {
      const db = (dyBase + n * dyN + i * dyI) | 0;
      const xb = (xBase + n * xN + i * xI) | 0;
      for (let c = 0; c < channels; c++) {
        block[m++] = gradient(table[dy[(db + c) | 0]], table[x[(xb + c) | 0]], ka[c], kb[c], kc[c]);
      }
      if (++i === inner) {
        i = 0;
        n++;
      }
    }
    n = Math.floor(first / inner);
    i = first - n * inner;
    m = 0;
    for (let q = first; q < last; q++) {
      const ob = (outBase + n * outN + i * outI) | 0;
      const db = (dyBase + n * dyN + i * dyI) | 0;
      const xb = (xBase + n * xN + i * xI) | 0;
      for (let c = 0; c < channels; c++) {
        const f = bits[m++];
        out[(ob + c) | 0] = (f & 0xffff) !== 0x8000 && (f & 0x7f800000) !== 0x7f800000
          ? (f + 0x7fff + ((f >> 16) & 1)) >> 16
          : bf16Exact(
            gradient(table[dy[(db + c) | 0]], table[x[(xb + c) | 0]], ka[c], kb[c], kc[c]),
            aliasF32,
            aliasI32,
          );
      }
      if (++i === inner) {
        i = 0;
        n++;
      }
    }
  }
}

/** Channels-last out = dy * scale[c] (p = [scale]), float32. */
export function scalePixelsF32(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  _scratch: ThreadScratch,
): void {
  const out = s.out as Float32Array;
  const dy = s.dy as Float32Array;
  const [scale] = p;
  const channels = s.layout.C;
  const inner = s.layout.inner;
  const outBase = s.outAt.base;
  const outN = s.outAt.strideN;
  const outI = s.outAt.strideI;
  const dyBase = s.dyAt.base;
  const dyN = s.dyAt.strideN;
  const dyI = s.dyAt.strideI;
  let n = Math.floor(q0 / inner);
  let i = q0 - n * inner;
  let q = q0;
  // Four pixels per step load each channel's constants once.
  for (; q + 3 < q1; q += 4) {
    const o0 = (outBase + n * outN + i * outI) | 0;
    const d0 = (dyBase + n * dyN + i * dyI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const o1 = (outBase + n * outN + i * outI) | 0;
    const d1 = (dyBase + n * dyN + i * dyI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const o2 = (outBase + n * outN + i * outI) | 0;
    const d2 = (dyBase + n * dyN + i * dyI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const o3 = (outBase + n * outN + i * outI) | 0;
    const d3 = (dyBase + n * dyN + i * dyI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    for (let c = 0; c < channels; c++) {
      const m0 = scale[c];
      out[(o0 + c) | 0] = dy[(d0 + c) | 0] * m0;
      out[(o1 + c) | 0] = dy[(d1 + c) | 0] * m0;
      out[(o2 + c) | 0] = dy[(d2 + c) | 0] * m0;
      out[(o3 + c) | 0] = dy[(d3 + c) | 0] * m0;
    }
  }
  for (; q < q1; q++) {
    const o0 = (outBase + n * outN + i * outI) | 0;
    const d0 = (dyBase + n * dyN + i * dyI) | 0;
    for (let c = 0; c < channels; c++) {
      const m0 = scale[c];
      out[(o0 + c) | 0] = dy[(d0 + c) | 0] * m0;
    }
    if (++i === inner) {
      i = 0;
      n++;
    }
  }
}

/** {@linkcode scalePixelsF32} for float16. */
export function scalePixelsF16(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: ThreadScratch,
): void {
  const out = s.out as Float16Array;
  const dy = s.dy as Uint16Array;
  const [scale] = p;
  const channels = s.layout.C;
  const inner = s.layout.inner;
  const outBase = s.outAt.base;
  const outN = s.outAt.strideN;
  const outI = s.outAt.strideI;
  const dyBase = s.dyAt.base;
  const dyN = s.dyAt.strideN;
  const dyI = s.dyAt.strideI;
  const table = decodeTable(scratch, s.dtype === BFLOAT16);
  let n = Math.floor(q0 / inner);
  let i = q0 - n * inner;
  let q = q0;
  // Four pixels per step load each channel's constants once.
  for (; q + 3 < q1; q += 4) {
    const o0 = (outBase + n * outN + i * outI) | 0;
    const d0 = (dyBase + n * dyN + i * dyI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const o1 = (outBase + n * outN + i * outI) | 0;
    const d1 = (dyBase + n * dyN + i * dyI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const o2 = (outBase + n * outN + i * outI) | 0;
    const d2 = (dyBase + n * dyN + i * dyI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    const o3 = (outBase + n * outN + i * outI) | 0;
    const d3 = (dyBase + n * dyN + i * dyI) | 0;
    if (++i === inner) {
      i = 0;
      n++;
    }
    for (let c = 0; c < channels; c++) {
      const m0 = scale[c];
      out[(o0 + c) | 0] = table[dy[(d0 + c) | 0]] * m0;
      out[(o1 + c) | 0] = table[dy[(d1 + c) | 0]] * m0;
      out[(o2 + c) | 0] = table[dy[(d2 + c) | 0]] * m0;
      out[(o3 + c) | 0] = table[dy[(d3 + c) | 0]] * m0;
    }
  }
  for (; q < q1; q++) {
    const o0 = (outBase + n * outN + i * outI) | 0;
    const d0 = (dyBase + n * dyN + i * dyI) | 0;
    for (let c = 0; c < channels; c++) {
      const m0 = scale[c];
      out[(o0 + c) | 0] = table[dy[(d0 + c) | 0]] * m0;
    }
    if (++i === inner) {
      i = 0;
      n++;
    }
  }
}

/** {@linkcode scalePixelsF32} for bfloat16 (see {@linkcode bf16Block}). */
export function scalePixelsBf16(
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: ThreadScratch,
): void {
  const out = s.out as Uint16Array;
  const dy = s.dy as Uint16Array;
  const [scale] = p;
  const channels = s.layout.C;
  const inner = s.layout.inner;
  const outBase = s.outAt.base;
  const outN = s.outAt.strideN;
  const outI = s.outAt.strideI;
  const dyBase = s.dyAt.base;
  const dyN = s.dyAt.strideN;
  const dyI = s.dyAt.strideI;
  const table = decodeTable(scratch, s.dtype === BFLOAT16);
  const { aliasF32, aliasI32 } = scratch;
  const [block, bits] = bf16Block(scratch);
  const chunk = Math.max(1, Math.floor(block.length / channels));
  for (let first = q0; first < q1; first += chunk) {
    const last = Math.min(q1, first + chunk);
    let n = Math.floor(first / inner);
    let i = first - n * inner;
    let m = 0;
    for (let q = first; q < last; q++) {
      const db = (dyBase + n * dyN + i * dyI) | 0;
      for (let c = 0; c < channels; c++) block[m++] = table[dy[(db + c) | 0]] * scale[c];
      if (++i === inner) {
        i = 0;
        n++;
      }
    }
    n = Math.floor(first / inner);
    i = first - n * inner;
    m = 0;
    for (let q = first; q < last; q++) {
      const ob = (outBase + n * outN + i * outI) | 0;
      const db = (dyBase + n * dyN + i * dyI) | 0;
      for (let c = 0; c < channels; c++) {
        const f = bits[m++];
        out[(ob + c) | 0] = (f & 0xffff) !== 0x8000 && (f & 0x7f800000) !== 0x7f800000
          ? (f + 0x7fff + ((f >> 16) & 1)) >> 16
          : bf16Exact(table[dy[(db + c) | 0]] * scale[c], aliasF32, aliasI32);
      }
      if (++i === inner) {
        i = 0;
        n++;
      }
    }
  }
}
