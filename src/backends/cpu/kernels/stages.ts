/**
 * The one entry point every thread calls: run items [from, to) of a stage on this thread's
 * WebAssembly kernels, in place in the host heap (every call puts its tensors there first:
 * rows/row_staging.ts, channels/staging.ts). Row-norm stages run the row kernels
 * (row_norm_stage.ts), GroupNorm's fused stages theirs (group_norm_samples.ts), every other
 * stage the channel kernels (channel_stages.ts).
 *
 * Part of the pool's worker script (see pool/worker_entry.ts).
 *
 * @module
 */

import type { Stage } from "./stage_types.ts";
import { runRowNormItems } from "./row_norm_stage.ts";
import { runChannelItems } from "./channel_stages.ts";
import { runGroupNormSamples } from "./group_norm_samples.ts";
import {
  instantiateWasmKernels,
  WASM_REGION_BYTES,
  type WasmKernels,
  type WasmScratch,
} from "./wasm_instance.ts";

/**
 * Everything one thread keeps to run stages: its kernels (their bytes, the host heap and its
 * region there) and the policy it runs under.
 */
export interface ThreadState extends WasmScratch {
  /** The bytes of the WebAssembly kernels (kernels.wat), or undefined to use none. */
  wasmBytes: Uint8Array | undefined;
  /** The host heap's memory, once this thread has been given it (see wasm_instance.ts). */
  heapMemory: WebAssembly.Memory | undefined;
  /** Byte address of this thread's region of the heap (0: none yet). */
  heapRegion: number;
}

/** A fresh state for one thread, with the WebAssembly kernels' bytes (instantiated on its first stage). */
export function createThreadState(wasmBytes: Uint8Array | undefined): ThreadState {
  return {
    wasm: undefined,
    staged: false,
    wasmBytes,
    heapMemory: undefined,
    heapRegion: 0,
  };
}

/** This thread's WebAssembly kernels, instantiated on first use; null when it has none. */
export function wasmOf(thread: ThreadState): WasmKernels | null {
  if (thread.wasm === undefined) {
    thread.wasm = instantiateWasmKernels(thread.wasmBytes, thread.heapMemory, thread.heapRegion);
  }
  return thread.wasm;
}

/** Runs items [from, to) of `s` with this thread's state. */
export function runStage(s: Stage, from: number, to: number, thread: ThreadState): void {
  const wasm = wasmOf(thread);
  if (wasm === null) {
    const region = `${WASM_REGION_BYTES / 1024} KiB`;
    throw new Error(
      `${s.op}: no WebAssembly kernels on the host heap (they need WebAssembly SIMD, a shared ` +
        `WebAssembly.Memory and ${region} of it for this thread)`,
    );
  }
  switch (s.op) {
    case "layerNormRows":
    case "layerNormBackwardRows":
    case "rmsNormRows":
    case "rmsNormGradRows":
    case "addRmsNormRows":
    case "addLayerNormRows":
    case "addRmsNormCastRows":
    case "adaLayerNormRows":
    case "addLayerNormGradRows":
    case "adaLayerNormGradRows":
      return runRowNormItems(wasm.exports, s.op, s.constants, from, to, wasm.at);
    case "groupNormSamples":
    case "groupNormSwishSamples":
    case "groupNormBackwardSamples":
      return runGroupNormSamples(s, from, to, wasm);
    default:
      return runChannelItems(s, from, to, wasm);
  }
}
