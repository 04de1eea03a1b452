/**
 * What the kernel benchmarks (`deno task bench:fp16`, bench/kernel_ab.ts,
 * bench/pixel_memory_ab.ts) share: an instance of a kernels build with a smooth signal in its
 * dy and x blocks, the write constants, and the calls' shape in the cache: 4096 elements per
 * call in both layouts (4 rows of 1024; 64 pixels of 64 channels).
 *
 * @module
 */

import {
  blockAt,
  instantiateWasm,
  wasmReserve,
  type WasmState,
} from "../tests/fixtures/wasm_memory.ts";
import type { CallShape, KernelCall } from "../tests/fixtures/kernel_calls.ts";
import {
  BFLOAT16,
  BFLOAT16_NO_NAN_CONSTANTS,
  FLOAT32,
} from "../src/backends/cpu/kernels/stage_types.ts";
import { numberToBf16 } from "../src/tensor/dtype.ts";

/** The calls' shape: 4096 elements per call in both layouts (in L1/L2 as dy, x and out). */
export const SHAPE: CallShape = { rows: 4, n: 1024, C: 64, pix: 64 };

/** Elements per call and input. */
export const ELEMENTS = 4096;

/** Write constants k0..k3 (means, scales, shifts). */
export const K: readonly number[] = [0.1, 1.2345678912, 0.2345678913, -0.5];

/**
 * Writes a smooth signal (offset + 3 sin(0.37 i + phase)) into dy (phase 0) and x (phase 1) of
 * `w`, `elements` each, in kernel code dt's element type: float32 (0), float16 (1, 4) or the
 * bfloat16 bits (2, 3).
 */
export function writeSignal(w: WasmState, dt: number, elements: number, offset = 0): void {
  for (const [name, phase] of [["dy", 0], ["x", 1]] as const) {
    const at = blockAt(w, name);
    const value = (i: number) => offset + Math.sin(i * 0.37 + phase) * 3;
    if (dt === FLOAT32) {
      new Float32Array(w.memory.buffer, at, elements).forEach((_, i, a) => a[i] = value(i));
    } else if (dt === BFLOAT16 || dt === BFLOAT16_NO_NAN_CONSTANTS) {
      new Uint16Array(w.memory.buffer, at, elements).forEach((_, i, a) =>
        a[i] = numberToBf16(value(i))
      );
    } else {
      new Float16Array(w.memory.buffer, at, elements).forEach((_, i, a) => a[i] = value(i));
    }
  }
}

/** An instance of `bytes` with {@linkcode writeSignal}'s signal in dy and x (kernel code dt). */
export function signalInstance(bytes: Uint8Array, dt: number): WasmState {
  const w = instantiateWasm(bytes)!;
  wasmReserve(w, 2 * ELEMENTS, 4 * SHAPE.C + SHAPE.n + 8);
  writeSignal(w, dt, ELEMENTS);
  return w;
}

/** The median of `values`. */
export function median(values: readonly number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Nanoseconds per element of `call` on `w`: the median of `batches` batches of about 0.1 ms
 * each (the call's arrays written first).
 */
export function nsPerElement(call: KernelCall, w: WasmState, batches = 15): number {
  const calls = Math.max(1, Math.round(100_000 / ELEMENTS));
  const samples: number[] = [];
  call.setup(w);
  for (let r = 0; r < batches; r++) {
    const start = performance.now();
    for (let c = 0; c < calls; c++) call.run(w);
    samples.push((performance.now() - start) * 1e6 / (calls * call.elements));
  }
  return median(samples);
}
