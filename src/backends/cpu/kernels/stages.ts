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
  densePixels,
  HEAP_CHANNEL_ARRAYS,
  heapChannelsFit,
  instantiateHeapKernels,
} from "./heap_kernels.ts";
import {
  HEAP_PIXEL,
  HEAP_ROW,
  kernelTables,
  STRIDED_ROW,
  WASM_PIXEL,
  WASM_ROW,
} from "./kernel_tables.ts";
import { FLOAT32, type Stage, type WriteStage } from "./stage_types.ts";
import { instantiateWasm } from "./wasm_kernels.ts";
import { type RowNormExports, runRowNormItems } from "./row_norm_stage.ts";

/** Number of packed per-channel constants of a write stage. */
export function constantCount(op: WriteStage["op"]): number {
  return op === "normalize" ? 2 : op === "gradient" ? 3 : 1;
}

/**
 * Rows shorter than this run the TypeScript kernels rather than the copying WebAssembly
 * ones (the copies and the call into WebAssembly cost more than they save). Measured with
 * rows of 64 ([4,16,8,8], 2 threads, medians once warm, 2-vCPU AMD EPYC VM): TypeScript
 * against copying WebAssembly, batchNormBackward 35 vs 36 us (bfloat16) and 31 vs 46
 * (float16), batchNormReduceBackward 14 vs 16 and 28 vs 34, groupNormBackward 65 vs 75 and
 * 67 vs 83. Kernels in place (heap_kernels.ts) copy nothing and take rows of any length.
 */
export const WASM_MIN_ROW = 128;

/**
 * float32 rows shorter than this run the TypeScript kernels even in the heap: a call into
 * WebAssembly per row costs more than its vectors save on a few elements. Measured with
 * 16 KiB tensors in the heap (threshold lowered for the test) against the same outside it,
 * interleaved, 2-vCPU AMD EPYC VM, float32, in place vs TypeScript: rows of 2 0.85-0.97x
 * (batchNormBackward, batchNormReduceBackward, batchNorm), of 4 0.75-0.85x (groupNorm,
 * groupNormBackward, batchNormReduceBackward; batchNormBackward 1.30x), of 8 0.88-1.08x,
 * of 16 1.17-1.26x, of 32 1.39x. The 16-bit types gain in place at every length (bfloat16
 * rows of 2 1.07x, of 4 1.21-1.28x, of 8 1.44x): TypeScript decodes them through a table.
 */
export const HEAP_MIN_FLOAT32_ROW = 16;

/**
 * Whether the WebAssembly kernels run dtype code `dtype` (0 float32, 1 float16, 2 bfloat16)
 * when this thread has them. Both kernels give the same bits, so this only picks
 * the faster one, as measured side by side by `deno task bench:cpu` with WebAssembly for
 * every family (its ts/fast column: 8 ops x 2 shapes x 2 layouts, 2 threads, 2-vCPU AMD EPYC
 * VM, 2026-11-23):
 * - bfloat16: WebAssembly everywhere, 1.1-4.8x (geometric mean 2.5x): TypeScript decodes
 *   through a table and rounds each store in scalar code;
 * - float16: WebAssembly everywhere, geometric mean 1.16x (reductions 0.8-1.9x, writes
 *   1.3-2.2x on [32,64,56,56], 0.75-0.9x on [8,64,32,32]): its vector decoding beats the
 *   table, its vector rounding beats V8's `Float16Array` store (2-3 ns per element);
 * - float32: TypeScript everywhere: WebAssembly's copies in and out of its memory cost what
 *   its vectors save on reductions (0.8-1.3x) and more on writes (0.54-0.8x), since V8
 *   stores a `Float32Array` element natively.
 *
 * This is the choice for tensors outside the host heap; stages whose tensors are all in it
 * run the WebAssembly kernels in place for every dtype (see {@linkcode inHeap}).
 */
export function wasmWins(dtype: number): boolean {
  return dtype !== 0;
}

/** Whether this thread runs stage `s` in WebAssembly (see {@linkcode wasmWins}). */
export function runsWasm(s: Stage, scratch: ThreadScratch): boolean {
  return scratch.wasm !== null && (scratch.wasmEverywhere || wasmWins(s.dtype));
}

/**
 * Whether every tensor stage `s` touches lives in the host heap and this thread has the
 * kernels there, so they can run in place (heap_kernels.ts): for every dtype, as in place
 * they beat TypeScript's float32 kernels too (1.4-2.3x on rows, measured in the module).
 */
export function inHeap(s: Stage, scratch: ThreadScratch): boolean {
  if (scratch.heapOff || (s.dy !== undefined && s.dyHeap < 0)) return false;
  if ((s.x !== undefined && s.xHeap < 0) || (s.out !== undefined && s.outHeap < 0)) return false;
  if (scratch.heapKernels === undefined) {
    scratch.heapKernels = instantiateHeapKernels(
      scratch.wasmBytes,
      scratch.heapMemory,
      scratch.heapRegion,
    );
  }
  return scratch.heapKernels !== null;
}

/**
 * The row-table index of stage `s`'s kernels: the strided fallback; the WebAssembly kernels
 * in place where the stage is in the heap (float32 rows from
 * {@linkcode HEAP_MIN_FLOAT32_ROW}; writes need rows of whole vectors: the kernels store
 * four elements at a time); the copying WebAssembly kernels where they win (on rows long
 * enough); else the dtype's TypeScript kernels.
 */
export function rowIndex(s: Stage, scratch: ThreadScratch): number {
  if (s.layout.kind === "strided") return STRIDED_ROW;
  const inner = s.layout.inner;
  const long = s.dtype !== FLOAT32 || inner >= HEAP_MIN_FLOAT32_ROW;
  if (long && (s.out === undefined || (inner & 3) === 0) && inHeap(s, scratch)) return HEAP_ROW;
  return inner >= WASM_MIN_ROW && runsWasm(s, scratch) ? WASM_ROW : s.dtype;
}

/**
 * The pixel-table index of stage `s`'s kernels: in place when the stage is in the heap, its
 * tensors' pixels are packed, its per-channel arrays fit this thread's region and (for
 * writes) C is a multiple of 4; else the copying WebAssembly kernels where they win.
 */
export function pixelIndex(s: Stage, scratch: ThreadScratch): number {
  const { layout } = s;
  const packed = (s.dy === undefined || densePixels(layout, s.dyAt)) &&
    (s.x === undefined || densePixels(layout, s.xAt)) &&
    (s.out === undefined || ((layout.C & 3) === 0 && densePixels(layout, s.outAt)));
  if (packed && heapChannelsFit(layout.C, HEAP_CHANNEL_ARRAYS) && inHeap(s, scratch)) {
    return HEAP_PIXEL;
  }
  return runsWasm(s, scratch) ? WASM_PIXEL : s.dtype;
}

/** Runs items [from, to) of `s` with this thread's scratch. */
export function runStage(s: Stage, from: number, to: number, scratch: ThreadScratch): void {
  if (
    s.op === "layerNormRows" || s.op === "layerNormBackwardRows" || s.op === "rmsNormRows" ||
    s.op === "rmsNormGradRows" || s.op === "addRmsNormRows"
  ) {
    // The row norms run only in place (their tensors are in the heap: rows/heap_rows.ts).
    if (!inHeap(s, scratch)) throw new Error(`${s.op}: no WebAssembly kernels on the heap`);
    const k = scratch.heapKernels!.exports as unknown as RowNormExports;
    return runRowNormItems(k, s.op, s.constants, from, to);
  }
  if (scratch.wasm === undefined) scratch.wasm = instantiateWasm(scratch.wasmBytes);
  if (!scratch.tables) {
    scratch.tables = kernelTables();
    primeDrivers(scratch);
  }
  const { rows, pixels } = scratch.tables;
  const pixel = s.layout.kind === "pixels";
  // One index for every kernel of the stage: the choice depends on the dtype and layout only.
  const at = pixel ? pixelIndex(s, scratch) : rowIndex(s, scratch);
  switch (s.op) {
    case "sums":
      if (pixel) {
        return sumPixels(s, from, to, pixels.sums[at], scratch);
      }
      return reduceRows(s, from, to, rows.sums[at], scratch);
    case "stats":
      if (pixel) {
        return statPixels(s, from, to, pixels.stats[at], scratch);
      }
      return reduceRows(s, from, to, rows.stats[at], scratch);
    case "normalize":
    case "gradient":
    case "scale":
      if (pixel) {
        return writePixels(
          s,
          from,
          to,
          pixels[s.op][at],
          constantCount(s.op),
          scratch,
        );
      }
      return writeRows(
        s,
        from,
        to,
        rows[s.op][at],
        constantCount(s.op),
        scratch,
      );
    case "groupNorm":
      if (pixel) {
        const stats = pixels.stats[at];
        return groupNormPixels(
          s,
          from,
          to,
          stats,
          pixels.normalize[at],
          scratch,
        );
      }
      return groupNormRows(
        s,
        from,
        to,
        rows.stats[at],
        rows.normalize[at],
        scratch,
      );
    case "groupNormBackward":
      if (pixel) {
        const sums = pixels.sums[at];
        const grad = pixels.gradient[at];
        return groupNormBackwardPixels(s, from, to, sums, grad, scratch);
      }
      return groupNormBackwardRows(
        s,
        from,
        to,
        rows.sums[at],
        rows.gradient[at],
        scratch,
      );
  }
}
