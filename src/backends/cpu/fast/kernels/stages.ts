/**
 * The one entry point every thread calls: run items [from, to) of a stage, with the
 * kernels its layout and dtype select.
 *
 * Worker-safe (see codecs.ts).
 *
 * @module
 */

import type { ThreadScratch } from "./codecs.ts";
import {
  groupNormBackwardPixels,
  groupNormBackwardRows,
  groupNormPixels,
  groupNormRows,
  primeDrivers,
  reduceRows,
  statPixels,
  sumPixels,
  writePixels,
  writeRows,
} from "./drivers.ts";
import {
  type KernelFamily,
  kernelTables,
  STRIDED_ROW,
  WASM_PIXEL,
  WASM_ROW,
} from "./kernel_tables.ts";
import type { Stage } from "./stage_types.ts";
import { instantiateWasm } from "./wasm_kernels.ts";

/** Number of packed per-channel constants of a write stage. */
export function constantCount(op: "normalize" | "batchNormGrad" | "scale"): number {
  return op === "normalize" ? 3 : op === "batchNormGrad" ? 4 : 1;
}

/**
 * Rows shorter than this run the TypeScript kernels (the copies and the call into
 * WebAssembly cost more than they save).
 */
export const WASM_MIN_ROW = 64;

/**
 * Whether the WebAssembly kernel runs `family` on dtype code `dtype` (0 float32, 1 float16,
 * 2 bfloat16) when this thread has it. Both kernels give the same bits, so this only picks
 * the faster one, as measured side by side by `deno task bench:cpu` (its ts/fast column,
 * 2 threads, 2-vCPU AMD EPYC VM, 2026-11-23): WebAssembly wins only where it writes
 * bfloat16 (batchNormElemt 1.4-1.9x, batchNormElemtBackward 1.1-1.6x, the write passes of
 * batchNorm/Backward and groupNormBackward up to 1.4x), since TypeScript has no native
 * bfloat16 store and rounds each element in scalar code. Its copy in and out of its memory
 * costs more than it saves for every reduction (0.4-0.9x) and for float32 and float16
 * (0.3-0.9x: `Float32Array` and `Float16Array` stores are native).
 */
export function wasmWins(family: KernelFamily, dtype: number): boolean {
  return dtype === 2 && family !== "sums" && family !== "stats";
}

/** Whether this thread runs `family` of stage `s` in WebAssembly (see {@linkcode wasmWins}). */
export function runsWasm(s: Stage, family: KernelFamily, scratch: ThreadScratch): boolean {
  return scratch.wasm !== null && (scratch.wasmEverywhere || wasmWins(family, s.dtype));
}

/**
 * The row-table index of `family`'s kernel for stage `s`: the strided fallback, the
 * WebAssembly kernel where it wins (on rows long enough), else the dtype's TypeScript kernel.
 */
export function rowIndex(s: Stage, family: KernelFamily, scratch: ThreadScratch): number {
  if (s.layout.kind === "strided") return STRIDED_ROW;
  return s.layout.inner >= WASM_MIN_ROW && runsWasm(s, family, scratch) ? WASM_ROW : s.dtype;
}

/** The pixel-table index of `family`'s kernel for stage `s` (WebAssembly where it wins). */
export function pixelIndex(s: Stage, family: KernelFamily, scratch: ThreadScratch): number {
  return runsWasm(s, family, scratch) ? WASM_PIXEL : s.dtype;
}

/** Runs items [from, to) of `s` with this thread's scratch. */
export function runStage(s: Stage, from: number, to: number, scratch: ThreadScratch): void {
  if (scratch.wasm === undefined) scratch.wasm = instantiateWasm(scratch.wasmBytes);
  if (!scratch.tables) {
    scratch.tables = kernelTables();
    primeDrivers(scratch);
  }
  const { rows, pixels } = scratch.tables;
  const pixel = s.layout.kind === "pixels";
  switch (s.op) {
    case "sums":
      if (pixel) {
        return sumPixels(s, from, to, pixels.sums[pixelIndex(s, "sums", scratch)], scratch);
      }
      return reduceRows(s, from, to, rows.sums[rowIndex(s, "sums", scratch)], scratch);
    case "stats":
      if (pixel) {
        return statPixels(s, from, to, pixels.stats[pixelIndex(s, "stats", scratch)], scratch);
      }
      return reduceRows(s, from, to, rows.stats[rowIndex(s, "stats", scratch)], scratch);
    case "normalize":
    case "batchNormGrad":
    case "scale":
      if (pixel) {
        return writePixels(
          s,
          from,
          to,
          pixels[s.op][pixelIndex(s, s.op, scratch)],
          constantCount(s.op),
          scratch,
        );
      }
      return writeRows(
        s,
        from,
        to,
        rows[s.op][rowIndex(s, s.op, scratch)],
        constantCount(s.op),
        scratch,
      );
    case "groupNorm":
      if (pixel) {
        const stats = pixels.stats[pixelIndex(s, "stats", scratch)];
        return groupNormPixels(
          s,
          from,
          to,
          stats,
          pixels.normalize[pixelIndex(s, "normalize", scratch)],
          scratch,
        );
      }
      return groupNormRows(
        s,
        from,
        to,
        rows.stats[rowIndex(s, "stats", scratch)],
        rows.normalize[rowIndex(s, "normalize", scratch)],
        scratch,
      );
    case "groupNormBackward":
      if (pixel) {
        const sums = pixels.sums[pixelIndex(s, "sums", scratch)];
        const grad = pixels.groupNormGrad[pixelIndex(s, "groupNormGrad", scratch)];
        return groupNormBackwardPixels(s, from, to, sums, grad, scratch);
      }
      return groupNormBackwardRows(
        s,
        from,
        to,
        rows.sums[rowIndex(s, "sums", scratch)],
        rows.groupNormGrad[rowIndex(s, "groupNormGrad", scratch)],
        scratch,
      );
  }
}
