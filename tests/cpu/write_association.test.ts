/**
 * Every kernel that writes an input gradient evaluates it as formulas.ts documents it,
 * dy * a + (x * b + c) in float64, and not in another association. Elsewhere the fast
 * kernels are compared with each other (bits) and with the textbook reference (1 ulp), and
 * neither check sees an association change: it moves a float64 result by about an ulp,
 * which almost never crosses a float32 rounding boundary. Here the constants make the two
 * associations differ in float32: with dy * a = 2^30, x * b = -2^30 and c = 2^-30,
 * x * b + c rounds to -2^30 (c is below half an ulp of 2^30), so the documented form
 * gives 0 where (dy * a + x * b) + c gives 2^-30.
 *
 * Each path is run on a stage of its own: the TypeScript row and pixel kernels, the
 * strided fallback, and the WebAssembly kernels staged and in place on the host heap (the
 * kernels of GroupNorm's stages).
 */

import assert from "node:assert/strict";
import { gradient } from "../../src/backends/cpu/kernels/formulas.ts";
import { createThreadState, type ThreadState } from "../../src/backends/cpu/kernels/stages.ts";
import { DEFAULT_CPU_POLICY } from "../../src/backends/cpu/policy.ts";
import type { KernelName } from "../../src/backends/cpu/kernels/kernel_tables.ts";
import { batchNormItems, type Layout } from "../../src/backends/cpu/kernels/layout_types.ts";
import { choose, runStage } from "../../src/backends/cpu/kernels/stages.ts";
import {
  FLOAT32,
  uniformStage,
  type WriteStage,
} from "../../src/backends/cpu/kernels/stage_types.ts";
import { WASM_REGION_BYTES } from "../../src/backends/cpu/kernels/wasm_instance.ts";
import { kernelsWasmBytes } from "../../src/backends/cpu/wasm/kernels_wasm.ts";
import { heapStorage } from "../fixtures/cpu_cases.ts";
import { heapAddress, heapAllocate, hostHeapMemory } from "../../src/tensor/host_heap.ts";

/** Channels, and elements per channel (enough for the WebAssembly row kernels). */
const C = 4;
const PER_CHANNEL = 256;

/** (dy, x) pairs, repeated: the cancelling one, and others around it. */
const PAIRS = [[1, 1], [1, 0], [0, 1], [1, 0.5], [-1, 1], [1, -1], [2, 2], [0.5, 1]];

/** Per-channel (a, b, c): channel 0 cancels as the module says; the others too, scaled. */
const CONSTANTS = [[2 ** 30, -(2 ** 30), 2 ** -30], [2 ** 40, -(2 ** 40), 2 ** -20], [
  3 * 2 ** 28,
  -3 * 2 ** 28,
  2 ** -31,
], [-(2 ** 30), 2 ** 30, -(2 ** -30)]];

/** A float32 array of `length` in the host heap (for the in-place kernels) or not. */
function float32(length: number, heap: boolean): Float32Array {
  const data = new Float32Array(length + 16);
  return heap ? heapStorage(data) : data;
}

/** A gradient stage over C channels of PER_CHANNEL elements in `kind` order. */
function stage(
  kind: Layout["kind"],
  heap: boolean,
): { s: WriteStage; dy: Float32Array; x: Float32Array } {
  const n = C * PER_CHANNEL;
  const dy = float32(n, heap);
  const x = float32(n, heap);
  const out = float32(n, heap);
  const pixels = kind === "pixels";
  const strided = kind === "strided";
  // Rows: [1, C, PER_CHANNEL]; pixels: channels last; strided: rows split as [16, 16].
  const layout: Layout = {
    kind,
    N: 1,
    C,
    inner: PER_CHANNEL,
    innerShape: strided ? [16, 16] : [PER_CHANNEL],
    // Per-sample constants (one sample here): GroupNorm's stages, which these kernels run (the
    // BatchNorm family's have float32 kernels of their own, channel_norms.wat).
    perSample: true,
  };
  const address = {
    base: 0,
    strideN: n,
    strideC: pixels ? 1 : PER_CHANNEL,
    strideI: pixels ? C : strided ? 0 : 1,
    innerStrides: pixels ? [C] : strided ? [16, 1] : [1],
  };
  for (let c = 0; c < C; c++) {
    for (let i = 0; i < PER_CHANNEL; i++) {
      const at = pixels ? i * C + c : c * PER_CHANNEL + i;
      [dy[at], x[at]] = PAIRS[i % PAIRS.length];
    }
  }
  const constants = new Float64Array(3 * C);
  CONSTANTS.forEach(([a, b, k], c) => {
    constants[c] = a;
    constants[C + c] = b;
    constants[2 * C + c] = k;
  });
  const s = uniformStage<WriteStage>({
    op: "gradient",
    layout,
    dtype: FLOAT32,
    items: batchNormItems(layout),
    dy,
    dyAt: address,
    x,
    xAt: address,
    out,
    outAt: address,
    constants,
  });
  s.dyHeap = heapAddress(dy);
  s.xHeap = heapAddress(x);
  s.outHeap = heapAddress(out);
  return { s, dy, x };
}

/** A thread's state with the WebAssembly kernels everywhere, in place or staged. */
function wasmScratch(inPlace: boolean): ThreadState {
  const scratch = createThreadState(kernelsWasmBytes(), {
    wasm: true,
    wasmEverywhere: true,
    inPlace,
  });
  const region = heapAllocate(WASM_REGION_BYTES)!;
  region.adopt(scratch);
  scratch.heapMemory = hostHeapMemory()!;
  scratch.heapRegion = region.at;
  return scratch;
}

Deno.test("every gradient write evaluates dy * a + (x * b + c), in that association", () => {
  // Each path: its name, layout, whether its tensors are in the heap, its thread state, the
  // kernel it must choose and whether it stages its blocks.
  const paths: [string, Layout["kind"], boolean, () => ThreadState, KernelName, boolean][] = [
    [
      "TypeScript rows",
      "rows",
      false,
      () => createThreadState(undefined, DEFAULT_CPU_POLICY),
      "float32",
      false,
    ],
    [
      "TypeScript pixels",
      "pixels",
      false,
      () => createThreadState(undefined, DEFAULT_CPU_POLICY),
      "float32",
      false,
    ],
    [
      "strided",
      "strided",
      false,
      () => createThreadState(undefined, DEFAULT_CPU_POLICY),
      "strided",
      false,
    ],
    ["WebAssembly rows staged", "rows", false, () => wasmScratch(false), "wasm", true],
    ["WebAssembly pixels staged", "pixels", false, () => wasmScratch(false), "wasm", true],
    ["WebAssembly rows in place", "rows", true, () => wasmScratch(true), "wasm", false],
    ["WebAssembly pixels in place", "pixels", true, () => wasmScratch(true), "wasm", false],
  ];
  for (const [name, kind, heap, makeScratch, kernel, staged] of paths) {
    const { s, dy, x } = stage(kind, heap);
    const scratch = makeScratch();
    runStage(s, 0, s.items, scratch);
    assert.equal(choose(s, scratch), kernel, `${name}: the path under test ran`);
    assert.equal(scratch.staged, staged, `${name}: staged or in place`);
    let differs = 0;
    for (let c = 0; c < C; c++) {
      const [a, b, k] = CONSTANTS[c];
      for (let i = 0; i < PER_CHANNEL; i++) {
        const at = kind === "pixels" ? i * C + c : c * PER_CHANNEL + i;
        // The documented form, written out here (formulas.ts's gradient is what it tests).
        const want = Math.fround(dy[at] * a + (x[at] * b + k));
        assert.equal(Math.fround(gradient(dy[at], x[at], a, b, k)), want, "formulas.ts");
        const other = Math.fround((dy[at] * a + x[at] * b) + k);
        if (want !== other) differs++;
        assert.equal(s.out![at], want, `${name}: channel ${c}, element ${i}`);
      }
    }
    // The data can tell the associations apart (else this test could not fail).
    assert.ok(differs >= C * (PER_CHANNEL / PAIRS.length), `${name}: ${differs} differ`);
  }
});
