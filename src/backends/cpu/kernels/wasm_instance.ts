/**
 * One thread's WebAssembly kernels (src/backends/cpu/wasm/kernels.wat): an instance whose
 * memory is the host heap (src/tensor/host_heap.ts), so that a kernel reads and writes the
 * tensors that live there in place (every call puts its tensors there first), and this
 * thread's region of the heap, which holds a kernel call's results and per-channel arrays
 * (kernels/channel_stages.ts says where; tfjs-backend-wasm's kernels likewise take heap
 * addresses only).
 *
 * Part of the pool's worker script (see pool/worker_entry.ts).
 *
 * @module
 */

import type { ChannelExports, ChannelUnitsExports } from "./channel_exports.ts";
import type { RowNormExports } from "./row_exports.ts";
import type { WriteArray } from "./stage_types.ts";
import { forEachSection, writeLeb } from "./wasm_binary.ts";

/**
 * The codecs the kernels use, exported alone for the tests (byte addresses; n a multiple of
 * 4; dt 0 float32, 1 float16, 2 bfloat16).
 */
export interface CodecExports {
  /** n elements of dt at src widened exactly to float32 at dst. */
  decode(src: number, dst: number, n: number, dt: number): void;
  /** n float32 at src rounded once to dt (nearest even) at dst. */
  encode(src: number, dst: number, n: number, dt: number): void;
  /**
   * The same for a 16-bit dt, eight lanes at a time (the kernels' paired stores; n a multiple
   * of 8): the bits of `encode`.
   */
  encode8(src: number, dst: number, n: number, dt: number): void;
}

/** The exports of kernels.wat: the row norms' and channel kernels, and the codecs. */
export type WasmExports = RowNormExports & ChannelExports & ChannelUnitsExports & CodecExports;

/**
 * Byte address of the vector constants the kernels keep in their memory, written by the
 * module's data segment (see `constantsToMemory` in scripts/wat_text.ts, which places
 * them here): in the heap's first page, which holds no tensor.
 */
export const WASM_CONSTANTS_AT = 64;

/** End of the constants' room (exclusive). */
export const WASM_CONSTANTS_END = 1024;

/** Bytes of each thread's region of the heap (module doc). */
export const WASM_REGION_BYTES = 524288;

/** This thread's instance of the kernels on the heap, and views of its region. */
export interface WasmKernels {
  /** The kernels (their memory is the heap). */
  readonly exports: WasmExports;
  /** Byte address of this thread's region in the heap. */
  readonly at: number;
  /** float64 view of the region. */
  readonly f64: Float64Array;
  /** float32 view of the region. */
  readonly f32: Float32Array;
  /** 16-bit view of the region. */
  readonly u16: Uint16Array;
  /** The last Float16Array output and its bits (float16 outputs are copied as bits). */
  outOf: WriteArray | undefined;
  /** Bits of {@linkcode WasmKernels.outOf}. */
  outBits: Uint16Array | undefined;
  /** The last view {@linkcode regionHead} made (see there). */
  f64Head: Float64Array | undefined;
}

/**
 * The first `length` float64s of `w`'s region, as the same view while `length` stays the same:
 * the channel stages copy each work item's sums out of the region, and a new view per item was
 * a quarter of the garbage a groupNormBackward call made (bench/RESULTS.md, twelfth session).
 * The region's views stay valid when the heap grows (its memory is shared, so an old buffer
 * keeps its bytes).
 */
export function regionHead(w: WasmKernels, length: number): Float64Array {
  const head = w.f64Head;
  if (head !== undefined && head.length === length) return head;
  return w.f64Head = w.f64.subarray(0, length);
}

/** The scratch of a thread that runs the WebAssembly kernels. */
export interface WasmScratch {
  /**
   * This thread's kernels: undefined until a stage first needs them, null when unavailable
   * (no WebAssembly kernels, no heap or no region, or no WebAssembly SIMD).
   */
  wasm: WasmKernels | null | undefined;
  /**
   * Whether the stage this thread runs stages its blocks through the region (some tensor
   * is outside the heap, or cannot be read or written there in place); set by stages.ts.
   */
  staged: boolean;
}

/**
 * Instantiates the kernels on `memory`: the host heap's shared memory, of the size the module
 * imports, or a smaller growable one where that could not be made (host_heap.ts), for which the
 * module's import is lowered first ({@linkcode fitMemoryImport}).
 */
export function instantiateOn(bytes: Uint8Array, memory: WebAssembly.Memory): WasmExports {
  const pages = memory.buffer.byteLength / 65536;
  const module = new WebAssembly.Module(fitMemoryImport(bytes, pages) as Uint8Array<ArrayBuffer>);
  return new WebAssembly.Instance(module, { env: { memory } }).exports as unknown as WasmExports;
}

/**
 * The kernels' module `bytes` as they are when their memory import's minimum is at most
 * `pages`, else a copy whose minimum is 1 page, rewritten in place as a padded LEB128 of the
 * same length (the maximum kept): the host heap's growable fallback, where 4 GiB of address
 * space could not be had (V8 then compiles the slower bounds checks of a growable memory,
 * bench/RESULTS.md seventeenth session, but the kernels run). Throws when the module imports
 * anything but its memory, or a memory without a maximum.
 */
export function fitMemoryImport(bytes: Uint8Array, pages: number): Uint8Array {
  let minimum: { at: number; length: number; value: number } | undefined;
  forEachSection(bytes, (id, r) => {
    if (id !== 2) return;
    for (let count = r.u32(); count > 0; count--) {
      r.skip(r.u32()); // module name
      r.skip(r.u32()); // field name
      if (r.byte() !== 2) throw new Error("kernels module: an import other than its memory");
      if ((r.byte() & 1) === 0) throw new Error("kernels module: a memory without a maximum");
      const at = r.at;
      const value = r.u32();
      minimum = { at, length: r.at - at, value };
      r.u32(); // maximum
    }
  });
  if (!minimum) throw new Error("kernels module: no memory import");
  if (minimum.value <= pages) return bytes;
  const lowered = bytes.slice();
  writeLeb(lowered, minimum.at, 1, minimum.length);
  return lowered;
}

/**
 * Instantiates the kernels on the heap's memory, with this thread's region at byte `at`;
 * null without bytes, memory or region, or when instantiation fails.
 */
export function instantiateWasmKernels(
  bytes: Uint8Array | undefined,
  memory: WebAssembly.Memory | undefined,
  at: number,
): WasmKernels | null {
  if (!bytes || !memory || at <= 0) return null;
  try {
    const exports = instantiateOn(bytes, memory);
    const buffer = memory.buffer;
    return {
      exports,
      at,
      f64: new Float64Array(buffer, at, WASM_REGION_BYTES / 8),
      f32: new Float32Array(buffer, at, WASM_REGION_BYTES / 4),
      u16: new Uint16Array(buffer, at, WASM_REGION_BYTES / 2),
      outOf: undefined,
      outBits: undefined,
      f64Head: undefined,
    };
  } catch {
    return null;
  }
}
