/**
 * Shared pieces of the conformance suite: THE tolerances (one place), the backends every case
 * runs on (the CPU backend, and the software CANN in build/sim when it has been built), and
 * small helpers to build inputs in a dtype and layout and compare outputs with a float64
 * reference.
 *
 * Tolerance rule, per output element: |actual - expected| <= atol * scale + rtol * |expected|,
 * where scale = max(1, max |expected| over the output). The scale makes atol relative to the
 * output's magnitude, which is what an NPU that accumulates in fp32 (or a kernel that stores
 * fp16/bf16) can promise for reductions and for gradInput's cancellations.
 *
 * Inputs are generated in their dtype first and the reference reads them back, so the
 * reference sees exactly the rounded values the kernel sees.
 *
 * @module
 */

import assert from "node:assert/strict";
import { type AscendDevice, type DType, openAscend, Tensor } from "../../mod.ts";

/** Conformance tolerances by output dtype (see the module doc for how they apply). */
export const TOLERANCE: Readonly<Record<"float32" | "float16" | "bfloat16", Tol>> = {
  // CANN accumulates in fp32; 1e-4 leaves room for that on reductions of ~1e5 elements.
  float32: { rtol: 1e-4, atol: 1e-4 },
  // fp16 storage: half an ulp is 4.9e-4 relative.
  float16: { rtol: 1e-3, atol: 1e-3 },
  // bf16 storage: half an ulp is 3.9e-3 relative.
  bfloat16: { rtol: 1e-2, atol: 1e-2 },
};

/** rtol/atol pair. */
export interface Tol {
  rtol: number;
  atol: number;
}

/** Tolerance for an output stored in `dtype`. */
export function tolFor(dtype: DType): Tol {
  if (dtype === "int32") return { rtol: 0, atol: 0 };
  return TOLERANCE[dtype];
}

/** Where the software CANN lives (built by `deno task build:sim`). */
export const SIM_DIR: string = Deno.env.get("ACLSIM_DIR") ??
  new URL("../../build/sim", import.meta.url).pathname;

function simBuilt(): boolean {
  try {
    return Deno.statSync(`${SIM_DIR}/libopapi.so`).isFile &&
      Deno.statSync(`${SIM_DIR}/libacl_rt.so`).isFile;
  } catch {
    return false;
  }
}

/** Whether the simulator libraries exist (the sim variants are ignored otherwise). */
export const SIM_AVAILABLE: boolean = simBuilt();

/** A place to run a case: the host, or an opened (simulated) NPU. */
export type Target = "cpu" | AscendDevice;

/**
 * Registers `name [cpu]` and `name [sim]`; the sim variant opens the software CANN for the
 * duration of the test (and is ignored when it has not been built).
 */
export function conformance(name: string, body: (target: Target) => void): void {
  Deno.test(`${name} [cpu]`, () => body("cpu"));
  Deno.test({
    name: `${name} [sim]`,
    ignore: !SIM_AVAILABLE,
    fn: () => {
      if (!Deno.env.get("ASCEND_OPP_PATH")) Deno.env.set("ASCEND_OPP_PATH", SIM_DIR);
      using npu = openAscend({ libDir: SIM_DIR });
      body(npu);
    },
  });
}

/** Moves a host tensor to the target (views keep their strides when dense). */
export function on(t: Tensor, target: Target): Tensor {
  return target === "cpu" ? t : t.to(target);
}

/** Same, for an optional tensor. */
export function onOpt(t: Tensor | undefined, target: Target): Tensor | undefined {
  return t === undefined ? undefined : on(t, target);
}

/** Seeded uniform data in [low, high), rounded to `dtype`. */
export function uniform(
  shape: readonly number[],
  dtype: DType,
  seed: number,
  low = -1,
  high = 1,
): Tensor {
  return Tensor.random(shape, { seed, dtype, low, high });
}

/** Values rounded to `dtype` (as a tensor of that dtype). */
export function fromValues(
  values: ArrayLike<number>,
  shape: readonly number[],
  dtype: DType,
): Tensor {
  return Tensor.fromArray(values, shape, dtype);
}

/** The float64 values of a tensor, in logical row-major order. */
export function f64(t: Tensor): Float64Array {
  return t.toFloat64Array();
}

/**
 * The same logical tensor stored channels-last (dim 1 innermost): a permuted view over dense
 * storage, as `x.contiguous(memory_format=channels_last)` gives in PyTorch.
 */
export function channelsLast(t: Tensor): Tensor {
  const r = t.rank;
  const toLast = [0, ...Array.from({ length: r - 2 }, (_, i) => i + 2), 1];
  const back = [0, r - 1, ...Array.from({ length: r - 2 }, (_, i) => i + 1)];
  return t.permute(toLast).contiguous().permute(back);
}

/** A non-contiguous view with the same values: every other element along the last dim. */
export function strided(t: Tensor): Tensor {
  const shape = [...t.shape];
  const last = shape.length - 1;
  const wide = [...shape];
  wide[last] = shape[last] * 2;
  const big = Tensor.zeros(wide, t.dtype);
  const view = big.slice(last, 0, wide[last], 2);
  view.copy_(t);
  return view;
}

/**
 * Compares an output tensor with its float64 reference under the dtype's tolerance
 * (module doc), with a message naming the case, the first failing index and the worst error.
 */
export function expectClose(
  actual: Tensor | null,
  expected: ArrayLike<number>,
  label: string,
  tol: Tol = tolFor(actual?.dtype ?? "float32"),
): void {
  assert.ok(actual, `${label}: output is null`);
  const a = actual.toFloat64Array();
  assert.equal(
    a.length,
    expected.length,
    `${label}: ${a.length} values, expected ${expected.length}`,
  );
  let scale = 1;
  for (let i = 0; i < expected.length; i++) {
    if (Number.isFinite(expected[i])) scale = Math.max(scale, Math.abs(expected[i]));
  }
  let worst = 0;
  let worstAt = -1;
  let firstBad = -1;
  for (let i = 0; i < a.length; i++) {
    const e = expected[i];
    const x = a[i];
    if (Number.isNaN(e)) {
      if (!Number.isNaN(x) && firstBad < 0) firstBad = i;
      continue;
    }
    if (!Number.isFinite(e)) {
      if (x !== e && firstBad < 0) firstBad = i;
      continue;
    }
    const err = Math.abs(x - e);
    const bound = tol.atol * scale + tol.rtol * Math.abs(e);
    if (!(err <= bound)) {
      if (firstBad < 0) firstBad = i;
      const ratio = Number.isNaN(err) ? Infinity : err / bound;
      if (ratio > worst) {
        worst = ratio;
        worstAt = i;
      }
    }
  }
  if (firstBad >= 0) {
    const w = worstAt >= 0
      ? ` worst at [${worstAt}]: got ${a[worstAt]}, expected ` +
        `${expected[worstAt]} (${worst.toFixed(1)}x the bound)`
      : "";
    assert.fail(
      `${label} (${actual.dtype}, rtol ${tol.rtol}, atol ${tol.atol} x scale ${
        scale.toPrecision(4)
      }):` +
        ` first mismatch at [${firstBad}]: got ${a[firstBad]}, expected ${expected[firstBad]};${w}`,
    );
  }
}

/** Keeps a peer's large shape under ~`cap` elements by shrinking its leading dims. */
export function capShape(shape: readonly number[], cap = 3e5): number[] {
  const s = [...shape];
  const total = () => s.reduce((a, b) => a * b, 1);
  // Shrink the largest non-channel dims first (dim 1 is the channel dim and stays).
  while (total() > cap) {
    let k = -1;
    for (let i = 0; i < s.length; i++) {
      if (i === 1) continue;
      if (k < 0 || s[i] > s[k]) k = i;
    }
    if (k < 0 || s[k] <= 1) break;
    s[k] = Math.max(1, Math.ceil(s[k] / 2));
  }
  return s;
}

/**
 * Runs every case (so one failure does not hide the others) and fails once, listing each
 * failing case's message.
 */
export function runAll<T>(cases: readonly T[], run: (c: T, index: number) => void): void {
  const failures: string[] = [];
  cases.forEach((c, i) => {
    try {
      run(c, i);
    } catch (e) {
      failures.push(e instanceof Error ? e.message.split("\n")[0] : String(e));
    }
  });
  if (failures.length > 0) {
    assert.fail(
      `${failures.length} of ${cases.length} cases failed:\n` +
        failures.map((f) => `  - ${f}`).join("\n"),
    );
  }
}
