/**
 * The loops around the kernels: which rows or pixel blocks a work item covers, what goes in
 * a row's constants `k`, and where partials go. The kernels are passed in as values.
 *
 * Why kernels are values and every call site is primed: V8's mid tier (Maglev) inlines a
 * call whose target it knows (a constant, or monomorphic feedback) and runs that inlined
 * loop 2-5x slower than the optimizing tier would; a driver is called once per stage, so it
 * stays in the mid tier for 15-20 calls, and so does every kernel inlined into it (several
 * times slower for its first calls: bench/RESULTS.md ("Why the constants are what they are")). A call
 * site that has seen two targets is not inlined: the kernel runs its own optimized code,
 * which it reaches within the first call (it runs thousands of times). So every driver takes
 * its kernels as arguments (looked up from tables at run time, never constants), and
 * {@linkcode primeDrivers} calls each driver once with a no-op kernel when a thread starts.
 *
 * Part of the pool's worker script (see codecs.ts).
 *
 * @module
 */

import type { CodecScratch } from "./codecs.ts";
import { channelScratch, scratchFloat64 } from "./codecs.ts";
import type { Layout } from "./layout_types.ts";
import {
  blocksPerSample,
  groupsPerItem,
  PIXEL_SEGMENT_ELEMENTS,
  pixelsPerBlock,
  rowsPerItem,
  samplesPerItem,
} from "./layout_types.ts";
import { groupNormGradAffine, normalizeAffine } from "./formulas.ts";
import { mergeMoments } from "./moments.ts";
import type {
  GroupNormBackwardStage,
  GroupNormStage,
  PixelStage,
  RowStage,
  StatsStage,
  SumsStage,
  WriteStage,
} from "./stage_types.ts";
import { uniformStage } from "./stage_types.ts";

/** A row kernel (row_kernels.ts, strided_kernels.ts, wasm_kernels.ts) reading scratch S. */
export type RowKernel<S extends CodecScratch = CodecScratch> = (
  s: RowStage,
  n: number,
  c: number,
  k: Float64Array,
  scratch: S,
) => void;

/** A pixel kernel (pixel_kernels.ts, wasm_kernels.ts); `S` as for {@linkcode RowKernel}. */
export type PixelKernel<S extends CodecScratch = CodecScratch> = (
  s: PixelStage,
  q0: number,
  q1: number,
  p: readonly Float64Array[],
  scratch: S,
) => void;

/** The first row n0 and the channel c of BatchNorm row item `item`. */
function rowItem(layout: Layout, item: number): { c: number; n0: number; n1: number } {
  const rows = rowsPerItem(layout);
  const chunks = Math.ceil(layout.N / rows);
  const c = Math.floor(item / chunks);
  const n0 = (item - c * chunks) * rows;
  return { c, n0, n1: Math.min(layout.N, n0 + rows) };
}

/**
 * BatchNorm reduction over row items [from, to): per item, k = (mean[c] or 0, 0, 0, 0),
 * `kernel` on every row of the item, then partials[2 item] = k[1], [2 item + 1] = k[2].
 */
export function reduceRows<S extends CodecScratch>(
  s: SumsStage | StatsStage,
  from: number,
  to: number,
  kernel: RowKernel<S>,
  scratch: S,
): void {
  const k = scratch.k;
  const mean = s.op === "sums" ? s.mean : undefined;
  for (let item = from; item < to; item++) {
    const { c, n0, n1 } = rowItem(s.layout, item);
    k[0] = mean ? mean[c] : 0;
    k[1] = 0;
    k[2] = 0;
    k[3] = 0;
    for (let n = n0; n < n1; n++) kernel(s, n, c, k, scratch);
    s.partials[2 * item] = k[1];
    s.partials[2 * item + 1] = k[2];
  }
}

/** Per-channel write over row items [from, to): k[j] = constants[j C + c] for `count` j. */
export function writeRows<S extends CodecScratch>(
  s: WriteStage,
  from: number,
  to: number,
  kernel: RowKernel<S>,
  count: number,
  scratch: S,
): void {
  const k = scratch.k;
  const C = s.layout.C;
  for (let item = from; item < to; item++) {
    const { c, n0, n1 } = rowItem(s.layout, item);
    for (let j = 0; j < count; j++) k[j] = s.constants[j * C + c];
    for (let n = n0; n < n1; n++) kernel(s, n, c, k, scratch);
  }
}

/** Pixels [q0, q1) of pixel block `block` (numbered within each sample when `perSample`). */
export function pixelBlock(layout: Layout, block: number): [number, number] {
  const per = pixelsPerBlock(layout);
  if (!layout.perSample) return [block * per, Math.min(layout.N * layout.inner, (block + 1) * per)];
  const blocks = blocksPerSample(layout);
  const n = Math.floor(block / blocks);
  const q0 = n * layout.inner + (block - n * blocks) * per;
  return [q0, Math.min((n + 1) * layout.inner, q0 + per)];
}

/**
 * The per-channel entries of sample n in `values` (N * C entries) when the layout is
 * `perSample`, else `values` (C entries, shared by every sample).
 */
function sampleChannels(layout: Layout, values: Float64Array, q0: number): Float64Array {
  if (!layout.perSample) return values;
  const at = Math.floor(q0 / layout.inner) * layout.C;
  return values.subarray(at, at + layout.C);
}

/**
 * BatchNorm sums over pixel blocks [from, to): per block, `kernel` accumulates per-channel
 * (sum, dot) with the stage's means, copied to partials[2C block ...].
 */
export function sumPixels<S extends CodecScratch>(
  s: SumsStage,
  from: number,
  to: number,
  kernel: PixelKernel<S>,
  scratch: S,
): void {
  const C = s.layout.C;
  const sums = scratchFloat64(scratch, C);
  const dots = scratchFloat64(scratch, C);
  const p = [sums, dots, s.mean];
  for (let b = from; b < to; b++) {
    const [q0, q1] = pixelBlock(s.layout, b);
    p[2] = sampleChannels(s.layout, s.mean, q0);
    sums.fill(0);
    dots.fill(0);
    kernel(s, q0, q1, p, scratch);
    s.partials.set(sums, 2 * C * b);
    s.partials.set(dots, 2 * C * b + C);
  }
}

/**
 * Statistics over pixels [q0, q1) merged into into[at + c] (sum) and into[at + C + c] (m2)
 * per channel: `kernel` on sub-blocks small enough to stay in cache, merged with Chan's
 * update.
 */
function pixelMoments<S extends CodecScratch>(
  s: PixelStage,
  q0: number,
  q1: number,
  into: Float64Array,
  at: number,
  kernel: PixelKernel<S>,
  scratch: S,
): void {
  const C = s.layout.C;
  const sub = Math.max(1, Math.floor(PIXEL_SEGMENT_ELEMENTS / C));
  const part = [scratchFloat64(scratch, C), scratchFloat64(scratch, C)];
  let done = 0;
  for (let q = q0; q < q1; q += sub) {
    const qe = Math.min(q1, q + sub);
    kernel(s, q, qe, part, scratch);
    for (let c = 0; c < C; c++) {
      mergeMoments(into, at + c, at + C + c, done, part[0][c], part[1][c], qe - q);
    }
    done += qe - q;
  }
}

/** BatchNorm statistics over pixel blocks [from, to) into partials[2C block ...]. */
export function statPixels<S extends CodecScratch>(
  s: StatsStage,
  from: number,
  to: number,
  kernel: PixelKernel<S>,
  scratch: S,
): void {
  for (let b = from; b < to; b++) {
    const [q0, q1] = pixelBlock(s.layout, b);
    pixelMoments(s, q0, q1, s.partials, 2 * s.layout.C * b, kernel, scratch);
  }
}

/** Per-channel write over pixel blocks [from, to) with the stage's `count` constants. */
export function writePixels<S extends CodecScratch>(
  s: WriteStage,
  from: number,
  to: number,
  kernel: PixelKernel<S>,
  count: number,
  scratch: S,
): void {
  const C = s.layout.C;
  // Constant j of channel c at constants[j C + c], or [(n count + j) C + c] per sample.
  const p: Float64Array[] = [];
  for (let j = 0; j < count; j++) p.push(s.constants.subarray(j * C, (j + 1) * C));
  for (let b = from; b < to; b++) {
    const [q0, q1] = pixelBlock(s.layout, b);
    if (s.layout.perSample) {
      const at = Math.floor(q0 / s.layout.inner) * count * C;
      for (let j = 0; j < count; j++) p[j] = s.constants.subarray(at + j * C, at + (j + 1) * C);
    }
    kernel(s, q0, q1, p, scratch);
  }
}

/**
 * GroupNorm item of rows/strided layouts: its sample chunk, its groups [g0, g1) and its
 * samples [n0, n1).
 */
function groupItem(
  layout: Layout,
  group: number,
  item: number,
): { chunk: number; g0: number; g1: number; n0: number; n1: number } {
  const samples = samplesPerItem(layout);
  const per = groupsPerItem(layout, group);
  const blocks = Math.ceil(group / per);
  const chunk = Math.floor(item / blocks);
  const g0 = (item - chunk * blocks) * per;
  const n0 = chunk * samples;
  return { chunk, g0, g1: Math.min(group, g0 + per), n0, n1: Math.min(layout.N, n0 + samples) };
}

/**
 * GroupNorm forward over row items [from, to): per (n, g), `stats` merges the group's D rows
 * into k, then mean and rstd, then `normalize` writes each row with k = (scale, shift) of
 * (x - mean) * rstd * gamma[c] + beta[c] (see formulas.ts).
 */
export function groupNormRows<S extends CodecScratch>(
  s: GroupNormStage,
  from: number,
  to: number,
  stats: RowKernel<S>,
  normalize: RowKernel<S>,
  scratch: S,
): void {
  const { layout, group, eps, gamma, beta } = s;
  const D = layout.C / group;
  const count = D * layout.inner;
  const k = scratch.k;
  for (let item = from; item < to; item++) {
    const { g0, g1, n0, n1 } = groupItem(layout, group, item);
    for (let n = n0; n < n1; n++) {
      for (let g = g0; g < g1; g++) {
        k[1] = 0;
        k[2] = 0;
        k[3] = 0;
        for (let c = g * D; c < (g + 1) * D; c++) stats(s, n, c, k, scratch);
        const mean = k[1] / count;
        const rstd = 1 / Math.sqrt(k[2] / count + eps);
        s.stats[2 * (n * group + g)] = mean;
        s.stats[2 * (n * group + g) + 1] = rstd;
        for (let c = g * D; c < (g + 1) * D; c++) {
          k[0] = rstd * gamma[c];
          k[1] = normalizeAffine(mean, k[0], beta[c]);
          normalize(s, n, c, k, scratch);
        }
      }
    }
  }
}

/**
 * GroupNorm forward over sample chunks [from, to) of a channels-last layout: per sample,
 * per-channel moments (`stats`) merged into per-group ones, then `normalize` over the
 * sample's pixels with (scale, shift) per channel, as {@linkcode groupNormRows}.
 */
export function groupNormPixels<S extends CodecScratch>(
  s: GroupNormStage,
  from: number,
  to: number,
  stats: PixelKernel<S>,
  normalize: PixelKernel<S>,
  scratch: S,
): void {
  const { layout, group, eps, gamma, beta } = s;
  const C = layout.C;
  const I = layout.inner;
  const D = C / group;
  const count = D * I;
  const samples = samplesPerItem(layout);
  const moments = scratchFloat64(scratch, 2 * C);
  const groups = scratchFloat64(scratch, 2 * group);
  const scale = scratchFloat64(scratch, C);
  const shift = scratchFloat64(scratch, C);
  const p = [scale, shift];
  for (let item = from; item < to; item++) {
    const nEnd = Math.min(layout.N, (item + 1) * samples);
    for (let n = item * samples; n < nEnd; n++) {
      pixelMoments(s, n * I, (n + 1) * I, moments, 0, stats, scratch);
      for (let g = 0; g < group; g++) {
        for (let d = 0; d < D; d++) {
          const c = g * D + d;
          mergeMoments(groups, 2 * g, 2 * g + 1, d * I, moments[c], moments[C + c], I);
        }
        const m = groups[2 * g] / count;
        const rstd = 1 / Math.sqrt(groups[2 * g + 1] / count + eps);
        s.stats[2 * (n * group + g)] = m;
        s.stats[2 * (n * group + g) + 1] = rstd;
        for (let c = g * D; c < (g + 1) * D; c++) {
          scale[c] = rstd * gamma[c];
          shift[c] = normalizeAffine(m, scale[c], beta[c]);
        }
      }
      normalize(s, n * I, (n + 1) * I, p, scratch);
    }
  }
}

/**
 * GroupNorm backward over row items [from, to): per (n, g), `sums` gives each channel's
 * sum(dy) and sum(dy * (x - mean)); they feed the chunk's partials and the group's
 * constants, then `grad` (when there is an output) writes each row with the gradient's
 * constants k = (a, b, c) (see formulas.ts).
 */
export function groupNormBackwardRows<S extends CodecScratch>(
  s: GroupNormBackwardStage,
  from: number,
  to: number,
  sums: RowKernel<S>,
  grad: RowKernel<S>,
  scratch: S,
): void {
  const { layout, group, gamma, partials } = s;
  const C = layout.C;
  const D = C / group;
  const count = D * layout.inner;
  const k = scratch.k;
  for (let item = from; item < to; item++) {
    const { chunk, g0, g1, n0, n1 } = groupItem(layout, group, item);
    partials.fill(0, 2 * (chunk * C + g0 * D), 2 * (chunk * C + g1 * D));
    for (let n = n0; n < n1; n++) {
      for (let g = g0; g < g1; g++) {
        const mean = s.mean[n * group + g];
        const rstd = s.rstd[n * group + g];
        let s1 = 0;
        let s2 = 0;
        for (let c = g * D; c < (g + 1) * D; c++) {
          k[0] = mean;
          k[1] = 0;
          k[2] = 0;
          sums(s, n, c, k, scratch);
          const sdy = k[1];
          const sdyXhat = k[2] * rstd;
          partials[2 * (chunk * C + c)] += sdyXhat;
          partials[2 * (chunk * C + c) + 1] += sdy;
          s1 += sdy * gamma[c];
          s2 += sdyXhat * gamma[c];
        }
        if (!s.out) continue;
        const a = s1 / count;
        const b = s2 / count;
        for (let c = g * D; c < (g + 1) * D; c++) {
          groupNormGradAffine(mean, rstd, gamma[c], a, b, k, 0, 1);
          grad(s, n, c, k, scratch);
        }
      }
    }
  }
}

/**
 * GroupNorm backward over sample chunks [from, to) of a channels-last layout: per sample,
 * `sums` over its pixels with each channel's group mean, the group constants, then `grad`
 * over its pixels with the gradient's (a, b, c) per channel.
 */
export function groupNormBackwardPixels<S extends CodecScratch>(
  s: GroupNormBackwardStage,
  from: number,
  to: number,
  sums: PixelKernel<S>,
  grad: PixelKernel<S>,
  scratch: S,
): void {
  const { layout, group, gamma, partials } = s;
  const C = layout.C;
  const I = layout.inner;
  const D = C / group;
  const count = D * I;
  const samples = samplesPerItem(layout);
  const sumDy = scratchFloat64(scratch, C);
  const sumDot = scratchFloat64(scratch, C);
  const mean = scratchFloat64(scratch, C);
  const rstd = scratchFloat64(scratch, C);
  const k = scratch.k;
  const acc = [sumDy, sumDot, mean];
  // Three arrays of C, not one of 3C: each stays a slab view (at most 1 KiB) up to C = 128.
  const p = [scratchFloat64(scratch, C), scratchFloat64(scratch, C), scratchFloat64(scratch, C)];
  const [ka, kb, kc] = p;
  for (let item = from; item < to; item++) {
    partials.fill(0, 2 * item * C, 2 * (item + 1) * C);
    const nEnd = Math.min(layout.N, (item + 1) * samples);
    for (let n = item * samples; n < nEnd; n++) {
      for (let c = 0; c < C; c++) {
        const ng = n * group + Math.floor(c / D);
        mean[c] = s.mean[ng];
        rstd[c] = s.rstd[ng];
      }
      sumDy.fill(0);
      sumDot.fill(0);
      sums(s, n * I, (n + 1) * I, acc, scratch);
      for (let g = 0; g < group; g++) {
        let s1 = 0;
        let s2 = 0;
        for (let c = g * D; c < (g + 1) * D; c++) {
          const sdy = sumDy[c];
          const sdyXhat = sumDot[c] * rstd[c];
          partials[2 * (item * C + c)] += sdyXhat;
          partials[2 * (item * C + c) + 1] += sdy;
          s1 += sdy * gamma[c];
          s2 += sdyXhat * gamma[c];
        }
        const a = s1 / count;
        const b = s2 / count;
        for (let c = g * D; c < (g + 1) * D; c++) {
          groupNormGradAffine(mean[c], rstd[c], gamma[c], a, b, k, 0, 1);
          ka[c] = k[0];
          kb[c] = k[1];
          kc[c] = k[2];
        }
      }
      if (s.out) grad(s, n * I, (n + 1) * I, p, scratch);
    }
  }
}

/** A kernel that does nothing, to prime the drivers' call sites. */
function noopKernel(): void {}

/**
 * Calls every driver once with no-op kernels on a one-element stage, so that each kernel
 * call site has seen two targets before the first real call (see the module comment).
 */
export function primeDrivers(scratch: CodecScratch): void {
  const layout: Layout = { kind: "rows", N: 1, C: 1, inner: 1, innerShape: [], perSample: false };
  const at = { base: 0, strideN: 0, strideC: 0, strideI: 0, innerStrides: [] };
  const one = () => scratchFloat64(scratch, 1);
  const eight = () => scratchFloat64(scratch, 8);
  const base = { layout, dtype: 0 as const, dyAt: at, xAt: at, outAt: at };
  const noop = noopKernel as RowKernel & PixelKernel;
  const sums = uniformStage<SumsStage>({
    ...base,
    op: "sums",
    items: 1,
    mean: one(),
    partials: eight(),
  });
  const stats = uniformStage<StatsStage>({ ...base, op: "stats", items: 1, partials: eight() });
  const write = uniformStage<WriteStage>({ ...base, op: "scale", items: 1, constants: eight() });
  const gn = uniformStage<GroupNormStage>({
    ...base,
    op: "groupNorm",
    items: 1,
    group: 1,
    eps: 1,
    gamma: one(),
    beta: one(),
    stats: eight(),
  });
  const gnb = uniformStage<GroupNormBackwardStage>({
    ...base,
    op: "groupNormBackward",
    items: 1,
    group: 1,
    mean: one(),
    rstd: one(),
    gamma: one(),
    partials: eight(),
    out: new Float32Array(1),
  });
  reduceRows(sums, 0, 1, noop, scratch);
  writeRows(write, 0, 1, noop, 1, scratch);
  sumPixels(sums, 0, 1, noop, scratch);
  statPixels(stats, 0, 1, noop, scratch);
  writePixels(write, 0, 1, noop, 1, scratch);
  groupNormRows(gn, 0, 1, noop, noop, scratch);
  groupNormPixels(gn, 0, 1, noop, noop, scratch);
  groupNormBackwardRows(gnb, 0, 1, noop, noop, scratch);
  groupNormBackwardPixels(gnb, 0, 1, noop, noop, scratch);
  channelScratch(scratch, 1);
}
