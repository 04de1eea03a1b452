/**
 * Which build of the WebAssembly kernels this process runs: the FP16 build
 * (kernels_fp16_wasm.ts: kernels.wat with the FP16 proposal's float16 conversions) when the
 * engine validates it, else the baseline build (kernels_wasm.ts). Both give the same bits
 * for every input (kernels_fp16.wat says why; tests/cpu/wasm_fp16.test.ts checks it in a
 * child process started with V8's `--experimental-wasm-fp16`), so the choice changes only
 * the speed of float16 kernels.
 *
 * The choice is made once, on the thread that loads the CPU backend (the pool, pool.ts),
 * which hands the same bytes to every worker it starts: every thread runs the same build.
 *
 * @module
 */

import { kernelsWasmBytes as baselineWasmBytes } from "./kernels_wasm.ts";
import { kernelsFp16WasmBytes } from "./kernels_fp16_wasm.ts";

/** The two builds of the kernels. */
export type KernelsWasmBuild = "fp16" | "baseline";

let chosen: KernelsWasmBuild | undefined;
let forced: KernelsWasmBuild | undefined;

/**
 * The build this process runs: "fp16" when `WebAssembly.validate` accepts the FP16 build's
 * bytes (the engine has the FP16 proposal), else "baseline" (also without WebAssembly).
 * Decided on the first call.
 */
export function kernelsWasmBuild(): KernelsWasmBuild {
  chosen ??= typeof WebAssembly === "object" &&
      WebAssembly.validate(kernelsFp16WasmBytes() as Uint8Array<ArrayBuffer>)
    ? "fp16"
    : "baseline";
  return chosen;
}

/** The bytes of the build this process runs (see {@linkcode kernelsWasmBuild}; a fresh copy). */
export function kernelsWasmBytes(): Uint8Array {
  return (forced ?? kernelsWasmBuild()) === "fp16" ? kernelsFp16WasmBytes() : baselineWasmBytes();
}

/**
 * Benchmarks: makes {@linkcode kernelsWasmBytes} return `build`'s bytes (undefined: the
 * engine's choice again), to time both builds in one process. Threads take the bytes when
 * they start: renewCpuThreads (pool.ts) starts them afresh.
 * The FP16 build on an engine that rejects it is a RangeError.
 */
export function useKernelsWasmBuild(build: KernelsWasmBuild | undefined): void {
  if (build === "fp16" && kernelsWasmBuild() !== "fp16") {
    throw new RangeError("useKernelsWasmBuild: this engine rejects the FP16 build");
  }
  forced = build;
}
