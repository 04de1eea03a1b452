/**
 * What the kernel benchmarks (`deno task bench:fp16`, bench/kernel_ab.ts) share: an instance
 * of a kernels build with a smooth signal in its dy and x blocks, and the calls' shape, in
 * the cache: 4096 elements per call in both layouts (4 rows of 1024; 64 pixels of 64
 * channels).
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

/** The calls' shape: 4096 elements per call in both layouts (in L1/L2 as dy, x and out). */
export const SHAPE: CallShape = { rows: 4, n: 1024, C: 64, pix: 64 };

/** Elements per call and input. */
export const ELEMENTS = 4096;

/** Write constants k0..k3 (means, scales, shifts). */
export const K: readonly number[] = [0.1, 1.2345678912, 0.2345678913, -0.5];

/** An instance of `bytes` with a smooth signal in dy and x (dtype dt: 0 float32, 1 float16). */
export function signalInstance(bytes: Uint8Array, dt: number): WasmState {
  const w = instantiateWasm(bytes)!;
  wasmReserve(w, 2 * ELEMENTS, 4 * SHAPE.C + SHAPE.n + 8);
  const value = (i: number, phase: number) => Math.sin(i * 0.37 + phase) * 3;
  for (const [name, phase] of [["dy", 0], ["x", 1]] as const) {
    const at = blockAt(w, name);
    const view = dt === 0
      ? new Float32Array(w.memory.buffer, at, ELEMENTS)
      : new Float16Array(w.memory.buffer, at, ELEMENTS);
    view.forEach((_, i, a) => a[i] = value(i, phase));
  }
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
