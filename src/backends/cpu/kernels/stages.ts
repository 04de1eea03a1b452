/**
 * The one entry point every thread calls: run items [from, to) of a stage, with the
 * kernels its layout and dtype select.
 *
 * Part of the pool's worker script (see codecs.ts).
 *
 * @module
 */

import type { KernelPolicy } from "../policy.ts";
import { createCodecScratch } from "./codecs.ts";
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
  type KernelName,
  kernelOf,
  type KernelScratch,
  type KernelSets,
  kernelSets,
} from "./kernel_tables.ts";
import { FLOAT32, type Stage, type WriteStage } from "./stage_types.ts";
import { type RowNormExports, runRowNormItems } from "./row_norm_stage.ts";
import { runChannelItems } from "./channel_stages.ts";
import { densePixels } from "./wasm_kernels.ts";
import {
  channelsFit,
  instantiateWasmKernels,
  stagedPixelsFit,
  type WasmKernels,
} from "./wasm_instance.ts";

/**
 * Everything one thread keeps to run stages: the scratch the kernels read (codecs.ts,
 * wasm_instance.ts), the kernel sets, and what it was given to run the WebAssembly kernels
 * with (their bytes, the host heap and its region there).
 */
export interface ThreadState extends KernelScratch {
  /** The kernel sets, built (and the drivers primed) by the first stage this thread runs. */
  sets: KernelSets | undefined;
  /** The bytes of the WebAssembly kernels (kernels.wat), or undefined to use none. */
  wasmBytes: Uint8Array | undefined;
  /** The host heap's memory, once this thread has been given it (see wasm_instance.ts). */
  heapMemory: WebAssembly.Memory | undefined;
  /** Byte address of this thread's region of the heap (0: none yet). */
  heapRegion: number;
  /** Which kernels this thread may choose. */
  readonly policy: KernelPolicy;
}

/**
 * A fresh state for one thread under `policy`, with the WebAssembly kernels' bytes when this
 * thread may use them (instantiated on its first stage).
 */
export function createThreadState(
  wasmBytes: Uint8Array | undefined,
  policy: KernelPolicy,
): ThreadState {
  return {
    ...createCodecScratch(),
    sets: undefined,
    wasmBytes,
    wasm: undefined,
    staged: false,
    heapMemory: undefined,
    heapRegion: 0,
    policy,
  };
}

/** Number of packed per-channel constants of a write stage. */
function constantCount(op: WriteStage["op"]): number {
  return op === "normalize" ? 2 : op === "gradient" ? 3 : 1;
}

/**
 * Rows shorter than this run the TypeScript kernels rather than the staged WebAssembly
 * ones (the copies and the call into WebAssembly cost more than they save on rows of 64:
 * bench/RESULTS.md ("Why the constants are what they are")). Kernels in place copy nothing and take rows of any length.
 */
export const WASM_MIN_ROW = 128;

/**
 * float32 rows shorter than this run the TypeScript kernels even in the heap: a call into
 * WebAssembly per row costs more than its vectors save on a few elements (float32 gains
 * from rows of 16). The 16-bit types gain in place at every length: TypeScript decodes them
 * through a table. Figures: bench/RESULTS.md ("Why the constants are what they are").
 */
const HEAP_MIN_FLOAT32_ROW = 16;

/**
 * Whether the WebAssembly kernels run dtype code `dtype` (0 float32, 1 float16, 2 bfloat16)
 * when this thread has them. Both kernels give the same bits, so this only picks the faster
 * one, by `deno task bench:cpu --kernels both` (its ts/fast column; figures in
 * bench/RESULTS.md):
 * - bfloat16 and float16: WebAssembly: TypeScript decodes them through a table and rounds
 *   each store in scalar code (or V8's `Float16Array` store), slower than the vectors;
 * - float32: TypeScript: the copies in and out of the region cost what the vectors save on
 *   reductions and more on writes, since V8 stores a `Float32Array` element natively.
 *
 * This is the choice for tensors outside the host heap; stages whose tensors are all in it
 * run the WebAssembly kernels in place for every dtype (see {@linkcode inPlace}).
 */
export function wasmWins(dtype: number): boolean {
  return dtype !== 0;
}

/** This thread's WebAssembly kernels, instantiated on first use; null when it has none. */
export function wasmOf(thread: ThreadState): WasmKernels | null {
  if (thread.wasm === undefined) {
    thread.wasm = instantiateWasmKernels(thread.wasmBytes, thread.heapMemory, thread.heapRegion);
  }
  return thread.wasm;
}

/**
 * Whether every tensor stage `s` touches lives in the host heap where its kernel can read
 * and write it in place: float32 rows from {@linkcode HEAP_MIN_FLOAT32_ROW}; writes need
 * rows (or the channels of a pixel) of whole vectors, as the kernels store four elements at
 * a time; pixels must be packed and their per-channel arrays fit the region.
 */
function inPlace(s: Stage, thread: ThreadState): boolean {
  if (!thread.policy.inPlace || (s.dy !== undefined && s.dyHeap < 0)) return false;
  if ((s.x !== undefined && s.xHeap < 0) || (s.out !== undefined && s.outHeap < 0)) return false;
  const { layout } = s;
  if (layout.kind === "rows") {
    const long = s.dtype !== FLOAT32 || layout.inner >= HEAP_MIN_FLOAT32_ROW;
    return long && (s.out === undefined || (layout.inner & 3) === 0);
  }
  return (s.dy === undefined || densePixels(layout, s.dyAt)) &&
    (s.x === undefined || densePixels(layout, s.xAt)) &&
    (s.out === undefined || ((layout.C & 3) === 0 && densePixels(layout, s.outAt))) &&
    channelsFit(layout.C);
}

/**
 * The kernel that runs stage `s` on this thread: the strided fallback for strided layouts;
 * the WebAssembly kernel in place where {@linkcode inPlace}; the WebAssembly kernel staged
 * where it wins ({@linkcode wasmWins}, or every dtype under the policy's `wasmEverywhere`)
 * on rows of {@linkcode WASM_MIN_ROW} or more, or pixels whose blocks fit the region; else
 * the dtype's TypeScript kernel. Sets `thread.staged` for the WebAssembly kernel.
 */
export function choose(s: Stage, thread: ThreadState): KernelName {
  const { layout } = s;
  if (layout.kind === "strided") return "strided";
  const ts: KernelName = s.dtype === FLOAT32 ? "float32" : s.dtype === 1 ? "float16" : "bfloat16";
  if (!thread.policy.wasm || wasmOf(thread) === null) return ts;
  if (inPlace(s, thread)) {
    thread.staged = false;
    return "wasm";
  }
  if (!thread.policy.wasmEverywhere && !wasmWins(s.dtype)) return ts;
  const fits = layout.kind === "rows"
    ? layout.inner >= WASM_MIN_ROW
    : stagedPixelsFit(layout.C, s.dtype);
  if (!fits) return ts;
  thread.staged = true;
  return "wasm";
}

/** Runs items [from, to) of `s` with this thread's state. */
export function runStage(s: Stage, from: number, to: number, thread: ThreadState): void {
  // Every stage runs in place in the heap (its call staged what was elsewhere).
  const wasm = wasmOf(thread);
  if (wasm === null) throw new Error(`${s.op}: no WebAssembly kernels on the heap`);
  switch (s.op) {
    case "layerNormRows":
    case "layerNormBackwardRows":
    case "rmsNormRows":
    case "rmsNormGradRows":
    case "addRmsNormRows":
      return runRowNormItems(
        wasm.exports as unknown as RowNormExports,
        s.op,
        s.constants,
        from,
        to,
      );
    case "groupNorm":
    case "groupNormBackward":
      // GroupNorm runs as per-sample stages of the channel kernels (fast/group_norm.ts).
      throw new Error(`${s.op}: no longer a stage of the CPU backend (internal error)`);
    default:
      // The BatchNorm family and GroupNorm: the float32 channel kernels.
      return runChannelItems(s, from, to, wasm);
  }
}
