/**
 * The rows stages taken in memory order (layout_types.ts rowsInMemoryOrder: GroupNorm's
 * per-sample rows, and BatchNorm's long rows; statistics, sums, and the normalize, gradient,
 * swish and scale writes) with one WebAssembly call per work item instead of one per (n, c)
 * row (src/backends/cpu/wasm/channel_units.wat loops over the rows inside the module): the
 * bits of channel_stages.ts's per-row calls, which cost more than a small row's work (GroupNorm
 * [4,16,8,8]: 64 elements a row, 128 calls a forward). Used where the rows are evenly spaced in
 * every tensor of the stage (strideN = C * strideC: NCHW order).
 *
 * Part of the pool's worker script (see pool/worker_entry.ts).
 *
 * @module
 */

import type { TensorAddress } from "./layout_types.ts";
import { rowsInMemoryOrder } from "./layout_types.ts";
import type { StatsStage, SumsStage, WriteStage } from "./stage_types.ts";
import { writeCode } from "./stage_types.ts";
import { regionHead, type WasmKernels } from "./wasm_instance.ts";
import type { ChannelUnitsExports } from "./channel_exports.ts";

/** Rows a units call takes at most: four float64 constants each fit the thread's region. */
const MAX_UNITS = 8192;

/** A stage the units kernels run. */
type UnitsStage = StatsStage | SumsStage | WriteStage;

/** The stages the units kernels run. */
const UNITS_OPS: ReadonlySet<string> = new Set([
  "stats",
  "sums",
  "normalize",
  "gradient",
  "swish",
  "scale",
]);

/**
 * Whether the units kernels run rows stage `s` taken in memory order: statistics, sums or a
 * write (normalize, gradient, swish, scale), with its (n, c) rows evenly spaced in every
 * tensor (strideN = C * strideC).
 */
export function unitsFit(s: UnitsStage): boolean {
  if (!rowsInMemoryOrder(s.layout)) return false;
  if (!UNITS_OPS.has(s.op)) return false;
  const C = s.layout.C;
  const even = (at: TensorAddress) => at.strideN === C * at.strideC;
  return even(s.xAt) && even(s.dyAt) && even(s.outAt);
}

/**
 * Rows [first, end) of a rows stage that {@linkcode unitsFit}, one units call per run of at
 * most {@linkcode MAX_UNITS} rows, row u = n * C + c at its tensors' base + u * strideC;
 * `count` constants per row (normalize 3, gradient and swish 4, scale 1) at
 * (n * count + j) * C + c per sample (GroupNorm), at j * C + c per channel (BatchNorm); means
 * at u, or at c.
 */
export function runUnits(
  s: UnitsStage,
  first: number,
  end: number,
  w: WasmKernels,
  count: number,
): void {
  const k: ChannelUnitsExports = w.exports;
  const layout = s.layout;
  const { C, inner } = layout;
  const dt = s.dtype;
  const es = dt === 0 ? 4 : 2;
  const perSample = layout.perSample;
  const f64 = w.f64;
  const at = (heap: number, a: TensorAddress, u: number) => heap + (a.base + u * a.strideC) * es;
  for (let u0 = first; u0 < end; u0 += MAX_UNITS) {
    const units = Math.min(MAX_UNITS, end - u0);
    if (s.op === "stats") {
      k.bn_stats_units(at(s.xHeap, s.xAt, u0), s.xAt.strideC * es, inner, dt, units, w.at);
      s.partials.set(regionHead(w, 2 * units), 2 * u0);
    } else if (s.op === "sums") {
      // The means after the results' room (16 bytes a row).
      if (perSample) f64.set(s.mean.subarray(u0, u0 + units), 2 * units);
      else {
        // Channel c of row u0 + i, counted up (a division per row cost more than a short
        // row's sums: bench/RESULTS.md, twentieth session).
        const mean = s.mean;
        for (let i = 0, c = u0 % C; i < units; i++) {
          f64[2 * units + i] = mean[c];
          if (++c === C) c = 0;
        }
      }
      k.bn_sums_units(
        at(s.dyHeap, s.dyAt, u0),
        s.dyAt.strideC * es,
        at(s.xHeap, s.xAt, u0),
        s.xAt.strideC * es,
        inner,
        dt,
        units,
        w.at + 16 * units,
        w.at,
      );
      s.partials.set(regionHead(w, 2 * units), 2 * u0);
    } else {
      // Row u = n * C + c: its j-th constant at (n * count + j) * C + c (per sample) or
      // j * C + c, here at 4u + j (the unused ones of a row zero).
      const write = s as WriteStage;
      const q = write.constants;
      // Row u0 + i = n * C + c, with n and c counted up (no division per row).
      let c = u0 % C;
      let from = perSample ? ((u0 - c) / C) * count * C : 0;
      for (let i = 0; i < units; i++) {
        const base = from + c;
        const r = 4 * i;
        f64[r] = q[base];
        f64[r + 1] = count > 1 ? q[base + C] : 0;
        f64[r + 2] = count > 2 ? q[base + 2 * C] : 0;
        f64[r + 3] = count > 3 ? q[base + 3 * C] : 0;
        if (++c === C) {
          c = 0;
          if (perSample) from += count * C;
        }
      }
      const wdt = writeCode(dt, f64, 0, 1, 4 * units, write.dataSums);
      const o = at(s.outHeap, s.outAt, u0);
      const os = s.outAt.strideC * es;
      const x = at(s.xHeap, s.xAt, u0);
      const xs = s.xAt.strideC * es;
      const dy = at(s.dyHeap, s.dyAt, u0);
      const dys = s.dyAt.strideC * es;
      if (s.op === "normalize") k.bn_norm_units(x, xs, o, os, inner, wdt, units, w.at);
      else if (s.op === "swish") k.bn_swish_units(x, xs, o, os, inner, wdt, units, w.at);
      else if (s.op === "scale") k.bn_scale_units(dy, dys, o, os, inner, wdt, units, w.at);
      else k.bn_grad_units(dy, dys, x, xs, o, os, inner, wdt, units, w.at);
    }
  }
}
