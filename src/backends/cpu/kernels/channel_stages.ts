/**
 * The BatchNorm family's stages (statistics, sums, and the normalize, gradient and scale
 * writes of every BatchNorm operator, GroupNormSilu/GroupNormSwish's swish write and
 * GroupNormSwishGrad's sums and write, rows only, the write reading the dYNew the sums kept
 * when they were given a cache) on their float32 WebAssembly kernels
 * (src/backends/cpu/wasm/channel_norms.wat, channel_pixels.wat with channel_pixel_blocks.wat,
 * channel_swish.wat, channel_swish_grad.wat), one kernel call per work item, on the tensors in
 * place in the host heap: `rows` (NCHW: each (n, c) a contiguous run) and dense `pixels`
 * (channels-last, C a multiple of 4, at most {@linkcode MAX_PIXEL_CHANNELS}). A call whose
 * tensors are elsewhere or laid out otherwise is staged into contiguous heap copies first
 * (channels/setup.ts), so these kernels are the family's one implementation. Items and partials
 * are the stage's (layout_types.ts, channels/merge.ts), so the results do not depend on which
 * thread runs which item.
 *
 * Part of the pool's worker script (see pool/worker_entry.ts).
 *
 * @module
 */

import type { Layout, TensorAddress } from "./layout_types.ts";
import {
  blocksPerSample,
  channelsPerItem,
  perSampleRowsPerItem,
  pixelsPerBlock,
  rowChunks,
  rowsInMemoryOrder,
  rowsPerItem,
} from "./layout_types.ts";
import type { StatsStage, SumsStage, WriteStage } from "./stage_types.ts";
import { type KernelCode, writeCode } from "./stage_types.ts";
import { regionHead, type WasmKernels } from "./wasm_instance.ts";
import { runUnits, unitsFit } from "./channel_units.ts";
import type { ChannelExports } from "./channel_exports.ts";

/**
 * The most channels of a channels-last call the kernels take in place: their per-channel
 * arrays (two float64 outputs, three float32 scratch arrays, four float32 constants: 44 bytes
 * a channel) fit this thread's region of the heap (wasm_instance.ts, 512 KiB).
 */
export const MAX_PIXEL_CHANNELS = 8192;

/** A BatchNorm-family stage the channel kernels run. */
export type ChannelStage = StatsStage | SumsStage | WriteStage;

/** Whether the channel kernels take tensors at `at` in `layout` in place (module doc). */
export function channelLayoutFits(layout: Layout, at: TensorAddress): boolean {
  if (layout.kind === "rows") return true;
  if (layout.kind !== "pixels") return false;
  const { C, inner } = layout;
  return C % 4 === 0 && C <= MAX_PIXEL_CHANNELS &&
    (inner === 1 || at.strideI === C) && (layout.N === 1 || at.strideN === inner * C);
}

/** Byte address of row (n, c) of a tensor at `at` whose heap array starts at `heap`. */
function rowAddress(heap: number, at: TensorAddress, n: number, c: number, es: number): number {
  return heap + (at.base + n * at.strideN + c * at.strideC) * es;
}

/** Per-channel constants of each write kind (formulas.ts: NORMALIZE_CONSTANTS etc.). */
function constantCount(op: ChannelStage["op"]): number {
  switch (op) {
    case "normalize":
      return 3;
    case "gradient":
    case "swish":
      return 4;
    case "scale":
      return 1;
    case "swishSums":
      return SWISH_SUMS_CONSTANTS;
    case "swishGrad":
      return SWISH_GRAD_CONSTANTS;
    default:
      return 0;
  }
}

/** Per-(n, c) constants of the "swishSums" stage (channel_swish_grad.wat k0..k5). */
export const SWISH_SUMS_CONSTANTS = 6;

/** Per-(n, c) constants of the "swishGrad" write (channel_swish_grad.wat k0..k8). */
export const SWISH_GRAD_CONSTANTS = 9;

/**
 * Floats of one (n, c) row in a GroupNormSwishGrad dYNew cache (the "swishSums" and
 * "swishGrad" stages' `cache`) of rows of `inner` elements: whole vectors of four, so that every
 * row starts 16-byte aligned. Row (n, c) of a rows layout starts at float
 * (n * C + c) * swishCacheRow(inner); the cache holds N * C such rows.
 */
export function swishCacheRow(inner: number): number {
  return Math.ceil(inner / 4) * 4;
}

/**
 * Runs items [from, to) of the BatchNorm-family stage `s` on this thread's kernels `w`. A
 * `perSample` layout (GroupNorm) has per-(n, c) means and constants: sample n's j-th
 * constant of channel c at (n * count + j) * C + c, its means at n * C + c; its rows items
 * are runs of (n, c) rows (layout_types.ts perSampleRowsPerItem), each row's results at its own
 * partials.
 */
export function runChannelItems(s: ChannelStage, from: number, to: number, w: WasmKernels): void {
  const layout = s.layout;
  const C = layout.C;
  if (rowsInMemoryOrder(layout)) {
    // Units: each (n, c) row of the item, u = n * C + c, its results at its own partials.
    const per = perSampleRowsPerItem(layout);
    return runChannelRows(s, from * per, Math.min(to * per, layout.N * C), w);
  }
  const es = s.dtype === 0 ? 4 : 2;
  const count = constantCount(s.op);
  if (layout.kind === "rows") {
    // Channel items: item u holds channels [u * per, ...) whole where several fit an item,
    // their results at slot c; else item c * chunks + k holds rows [k * chunkRows, ...) of
    // channel c, its results at slot u.
    const per = channelsPerItem(layout);
    if (per > 1) {
      for (let c = from * per, end = Math.min(C, to * per); c < end; c++) {
        runRows(s, w, es, count, c, c, 0, layout.N);
      }
      return;
    }
    const chunkRows = rowsPerItem(layout);
    const chunks = rowChunks(layout);
    for (let u = from; u < to; u++) {
      const c = Math.floor(u / chunks);
      const n0 = (u - c * chunks) * chunkRows;
      runRows(s, w, es, count, u, c, n0, Math.min(layout.N, n0 + chunkRows) - n0);
    }
    return;
  }
  runPixelBlocks(s, from, to, w, es, count);
}

/**
 * Rows [u0, u1) of a rows stage taken in memory order (layout_types.ts rowsInMemoryOrder), row
 * u = n * C + c, its results at its own partials: by the units kernels where they fit
 * (channel_units.ts), else one kernel call per row.
 */
export function runChannelRows(s: ChannelStage, u0: number, u1: number, w: WasmKernels): void {
  const count = constantCount(s.op);
  if (unitsFit(s)) return runUnits(s, u0, u1, w, count);
  const es = s.dtype === 0 ? 4 : 2;
  const C = s.layout.C;
  for (let u = u0; u < u1; u++) {
    const n = Math.floor(u / C);
    runRows(s, w, es, count, u, u - n * C, n, 1);
  }
}

/**
 * `rows` rows of channel c from row n0 of a rows stage, as one kernel call whose results go to
 * unit u's partials (`es` bytes an element, `count` constants a channel).
 */
function runRows(
  s: ChannelStage,
  w: WasmKernels,
  es: number,
  count: number,
  u: number,
  c: number,
  n0: number,
  rows: number,
): void {
  const k: ChannelExports = w.exports;
  const dt = s.dtype;
  const layout = s.layout;
  const C = layout.C;
  const inner = layout.inner;
  const out = w.at;
  const f64 = w.f64;
  // Where channel c's constants and mean are: per channel, or per (n, c).
  const kc = layout.perSample ? n0 * count * C + c : c;
  const mc = layout.perSample ? n0 * C + c : c;
  const row = (heap: number, at: TensorAddress) => rowAddress(heap, at, n0, c, es);
  const xs = s.xAt.strideN * es;
  const dys = s.dyAt.strideN * es;
  const os = s.outAt.strideN * es;
  switch (s.op) {
    case "stats":
      k.bn_stats_rows(row(s.xHeap, s.xAt), xs, inner, dt, rows, out);
      s.partials[2 * u] = f64[0];
      s.partials[2 * u + 1] = f64[1];
      break;
    case "sums":
      k.bn_sums_rows(
        row(s.dyHeap, s.dyAt),
        dys,
        row(s.xHeap, s.xAt),
        xs,
        inner,
        dt,
        rows,
        s.mean[mc],
        out,
      );
      s.partials[2 * u] = f64[0];
      s.partials[2 * u + 1] = f64[1];
      break;
    case "swishSums":
    case "swishGrad": {
      // GroupNormSwishGrad (channel_swish_grad.wat): constant j at q[j * C + kc].
      const q = s.constants!;
      const kq = (j: number) => q[j * C + kc];
      const xRow = row(s.xHeap, s.xAt);
      // The dYNew cache (a view of the heap: its byteOffset is its heap address): row
      // (n0, c), rows of one channel C rows apart (swishCacheRow).
      const cache = s.cache;
      const cacheRow = swishCacheRow(inner) * 4;
      // The write's code: its nine constants (the sums stage stores nothing).
      const wdt = s.op === "swishGrad" ? writeCode(dt, q, kc, C, 9, s.dataSums) : dt;
      const cs = cache ? C * cacheRow : 0;
      const cRow = cache ? cache.byteOffset + (n0 * C + c) * cacheRow : 0;
      if (s.op === "swishGrad" && cache) {
        const o = row(s.outHeap, s.outAt);
        k.gs_grad_cached_rows(
          cRow,
          cs,
          xRow,
          xs,
          o,
          os,
          inner,
          wdt,
          rows,
          kq(0),
          kq(1),
          kq(6),
          kq(7),
          kq(8),
        );
        break;
      }
      const dyRow = row(s.dyHeap, s.dyAt);
      const k6 = [kq(0), kq(1), kq(2), kq(3), kq(4), kq(5)] as const;
      if (s.op === "swishSums") {
        k.gs_sums_rows(dyRow, dys, xRow, xs, inner, dt, rows, ...k6, out, cRow, cs);
        s.partials[2 * u] = f64[0];
        s.partials[2 * u + 1] = f64[1];
      } else {
        const o = row(s.outHeap, s.outAt);
        k.gs_grad_rows(
          dyRow,
          dys,
          xRow,
          xs,
          o,
          os,
          inner,
          wdt,
          rows,
          ...k6,
          kq(6),
          kq(7),
          kq(8),
        );
      }
      break;
    }
    case "normalize":
    case "swish": {
      // The swish write is the normalize write and -swishScale (channel_swish.wat).
      const q = s.constants;
      const args = [
        row(s.xHeap, s.xAt),
        xs,
        row(s.outHeap, s.outAt),
        os,
        inner,
        writeCode(dt, q, kc, C, s.op === "swish" ? 4 : 3, s.dataSums),
        rows,
        q[kc],
        q[C + kc],
        q[2 * C + kc],
      ] as const;
      if (s.op === "swish") k.bn_swish_rows(...args, q[3 * C + kc]);
      else k.bn_norm_rows(...args);
      break;
    }
    case "gradient": {
      const q = s.constants;
      k.bn_grad_rows(
        row(s.dyHeap, s.dyAt),
        dys,
        row(s.xHeap, s.xAt),
        xs,
        row(s.outHeap, s.outAt),
        os,
        inner,
        writeCode(dt, q, kc, C, 4, s.dataSums),
        rows,
        q[kc],
        q[C + kc],
        q[2 * C + kc],
        q[3 * C + kc],
      );
      break;
    }
    case "scale":
      k.bn_scale_rows(
        row(s.dyHeap, s.dyAt),
        dys,
        row(s.outHeap, s.outAt),
        os,
        inner,
        writeCode(dt, s.constants, kc, C, 1, s.dataSums),
        rows,
        s.constants[kc],
      );
      break;
  }
}

/**
 * The most bytes a channels-last statistics or sums stage reads (x, or dy and x) for its
 * kernel to take the data as in the caches: a call this small finds it in the last-level cache
 * of common machines. There float32 sums and statistics take four pixels a step (sums 15-25%
 * faster than two, statistics 8%; from memory 50% and 14-33% slower), and 16-bit statistics skip
 * their reads of each run's lines in memory order (12% faster: those reads serve the column
 * order of the block loops from memory). The same bits either way (bench/RESULTS.md,
 * fourteenth and twentieth sessions).
 */
export const CACHED_CALL_MAX_BYTES = 16 << 20;

/** Blocks [from, to) of a dense pixels stage (channels-last). */
function runPixelBlocks(
  s: ChannelStage,
  from: number,
  to: number,
  w: WasmKernels,
  es: number,
  count: number,
): void {
  const k: ChannelExports = w.exports;
  const dt = s.dtype;
  const layout = s.layout;
  const C = layout.C;
  // Dense pixels: pixel q of the call at base + q * C. Region: o1, o2 (float64 C each), the
  // scratch (float32 3C; statistics take 4C, into the room of the constants they do not use),
  // the per-channel float32 constants or means (4C).
  if (s.op === "swishSums" || s.op === "swishGrad") {
    throw new Error(`${s.op}: rows only (channels/group_norm_swish_grad.ts stages the rest)`);
  }
  const o1 = w.at;
  const o2 = w.at + 8 * C;
  const acc = w.at + 16 * C;
  const kAt = w.at + 28 * C;
  const kf = w.f32.subarray(7 * C, 11 * C);
  const per = pixelsPerBlock(layout);
  const total = layout.N * layout.inner;
  const blocks = layout.perSample ? blocksPerSample(layout) : 0;
  const reads = s.op === "stats" ? 1 : 2;
  const cached = reads * total * C * es <= CACHED_CALL_MAX_BYTES ? 1 : 0;
  /**
   * Sample n's means (sums: C float32) or constants (writes: interleaved per four channels,
   * constant j of channel 4i + l at 16i + 4j + l, as bn_write_pix reads them) into the
   * region, as float32.
   */
  const load = (n: number) => {
    if (s.op === "sums") {
      // A loop, not set() of a subarray: a view per sample was garbage of every call.
      const mean = s.mean;
      for (let c = 0, i = n * C; c < C; c++, i++) kf[c] = mean[i];
    } else if (s.op !== "stats") {
      const from = n * count * C;
      for (let j = 0; j < count; j++) {
        for (let c = 0; c < C; c++) {
          kf[4 * (c & ~3) + 4 * j + (c & 3)] = s.constants![from + j * C + c];
        }
      }
      // The write's code: the sample's constants, all of them a run from `from`.
      wdt = writeCode(dt, s.constants!, from, 1, count * C, (s as WriteStage).dataSums);
    }
  };
  let wdt: KernelCode = dt;
  if (!layout.perSample) load(0);
  let loaded = -1;
  const pixel = (heap: number, at: TensorAddress, q: number) => heap + (at.base + q * C) * es;
  for (let block = from; block < to; block++) {
    let q0 = block * per;
    let q1 = Math.min(total, q0 + per);
    if (layout.perSample) {
      const n = Math.floor(block / blocks);
      q0 = n * layout.inner + (block - n * blocks) * per;
      q1 = Math.min((n + 1) * layout.inner, q0 + per);
      if (n !== loaded) load(loaded = n);
    }
    const pix = q1 - q0;
    switch (s.op) {
      case "stats":
      case "sums": {
        if (s.op === "stats") {
          k.bn_stats_pix(pixel(s.xHeap, s.xAt, q0), C, dt, pix, o1, o2, acc, cached);
        } else {
          const dy = pixel(s.dyHeap, s.dyAt, q0);
          k.bn_sums_pix(dy, pixel(s.xHeap, s.xAt, q0), C, dt, pix, kAt, o1, o2, acc, cached);
        }
        s.partials.set(regionHead(w, 2 * C), 2 * C * block);
        break;
      }
      case "normalize":
        k.bn_norm_pix(pixel(s.xHeap, s.xAt, q0), pixel(s.outHeap, s.outAt, q0), C, wdt, pix, kAt);
        break;
      case "swish":
        k.bn_swish_pix(pixel(s.xHeap, s.xAt, q0), pixel(s.outHeap, s.outAt, q0), C, wdt, pix, kAt);
        break;
      case "gradient":
        k.bn_grad_pix(
          pixel(s.dyHeap, s.dyAt, q0),
          pixel(s.xHeap, s.xAt, q0),
          pixel(s.outHeap, s.outAt, q0),
          C,
          wdt,
          pix,
          kAt,
        );
        break;
      case "scale":
        k.bn_scale_pix(
          pixel(s.dyHeap, s.dyAt, q0),
          pixel(s.outHeap, s.outAt, q0),
          C,
          wdt,
          pix,
          kAt,
        );
        break;
    }
  }
}
