/**
 * How `deno task verify:npu` compares an NPU output with the CPU backend's output of the same
 * call: the tests' tolerance rule and table (tests/helpers/tolerance.ts), for two kernels
 * compared with each other (`betweenKernels`: each is within its table entry of the exact
 * value, so they are within twice that of each other), per output dtype. Per element:
 *
 * ```
 * |npu - cpu| <= atol * scale + rtol * |cpu|,   scale = max(1, max finite |cpu|)
 * ```
 *
 * NaN must meet NaN and an infinity the same infinity. The error reported for an element is
 * `|npu - cpu| / (scale + |cpu|)`, which the entry's `rtol` (= `atol`) bounds.
 *
 * @module
 */

import type { DType } from "../../mod.ts";
import {
  betweenKernels,
  HALF_ULP,
  TOLERANCE,
  type Tolerance,
} from "../../tests/helpers/tolerance.ts";

/** The tolerance of an output stored in `dtype`, NPU against CPU backend. */
export function toleranceOf(dtype: DType): Tolerance {
  return betweenKernels(TOLERANCE[dtype]);
}

/** The table as the report states it: dtype, tolerance, what it is made of. */
export function toleranceTable(): { dtype: DType; tolerance: number; halfUlp: number }[] {
  return (["float32", "float16", "bfloat16"] as const).map((dtype) => ({
    dtype,
    tolerance: toleranceOf(dtype).rtol,
    halfUlp: HALF_ULP[dtype],
  }));
}

/** One output of one case, compared. */
export interface OutputComparison {
  /** The output's name (e.g. gradInput, runningMean (in place)). */
  readonly output: string;
  /** Its dtype (the tolerance entry). */
  readonly dtype: DType;
  /** Its shape (the CPU backend's). */
  readonly shape: readonly number[];
  /** Elements compared. */
  readonly total: number;
  /** Elements outside the tolerance (or every element when the shapes differ). */
  readonly mismatches: number;
  /** Largest error, `|npu - cpu| / (scale + |cpu|)` (Infinity for a NaN/Inf mismatch). */
  readonly worstError: number;
  /** The element of the largest error relative to its bound, -1 when all are equal. */
  readonly worstIndex: number;
  /** The NPU's value there. */
  readonly npu: number;
  /** The CPU backend's value there. */
  readonly cpu: number;
  /** The tolerance (rtol = atol) of `dtype`. */
  readonly tolerance: number;
  /** Why the whole output fails (a shape or presence difference), if it does. */
  readonly problem?: string;
}

/** An output as a run returned it. */
export interface OutputValues {
  /** Its dtype. */
  readonly dtype: DType;
  /** Its shape. */
  readonly shape: readonly number[];
  /** Its values in logical row-major order. */
  readonly values: Float64Array;
}

/** Compares one output (`npu` vs `cpu`, either possibly absent). */
export function compareOutput(
  output: string,
  npu: OutputValues | null,
  cpu: OutputValues | null,
): OutputComparison {
  const dtype = (cpu ?? npu)?.dtype ?? "float32";
  const tolerance = toleranceOf(dtype);
  const base = { output, dtype, shape: (cpu ?? npu)?.shape ?? [], tolerance: tolerance.rtol };
  const whole = (problem: string, total: number): OutputComparison => ({
    ...base,
    total,
    mismatches: Math.max(total, 1),
    worstError: Infinity,
    worstIndex: -1,
    npu: NaN,
    cpu: NaN,
    problem,
  });
  if (npu === null || cpu === null) {
    if (npu === cpu) return { ...base, ...clean(0) };
    return whole(
      npu === null ? "the NPU returned no tensor" : "the CPU backend returned no tensor",
      (npu ?? cpu)!.values.length,
    );
  }
  if (npu.dtype !== cpu.dtype || npu.shape.join() !== cpu.shape.join()) {
    return whole(
      `NPU ${npu.dtype} [${npu.shape}] vs CPU ${cpu.dtype} [${cpu.shape}]`,
      cpu.values.length,
    );
  }
  const a = npu.values;
  const e = cpu.values;
  let scale = 1;
  for (let i = 0; i < e.length; i++) {
    if (Number.isFinite(e[i])) scale = Math.max(scale, Math.abs(e[i]));
  }
  let mismatches = 0;
  let worstError = 0;
  let worstRatio = -1;
  let worstIndex = -1;
  for (let i = 0; i < e.length; i++) {
    const x = a[i];
    const y = e[i];
    let error: number;
    let ratio: number;
    if (!Number.isFinite(y) || !Number.isFinite(x)) {
      const same = Object.is(x, y) || (Number.isNaN(x) && Number.isNaN(y));
      error = same ? 0 : Infinity;
      ratio = error;
    } else {
      const diff = Math.abs(x - y);
      const bound = tolerance.atol * scale + tolerance.rtol * Math.abs(y);
      error = diff / (scale + Math.abs(y));
      ratio = bound > 0 ? diff / bound : diff > 0 ? Infinity : 0;
    }
    if (!(ratio <= 1)) mismatches++;
    if (ratio > worstRatio) {
      worstRatio = ratio;
      worstError = error;
      worstIndex = i;
    }
  }
  return {
    ...base,
    total: e.length,
    mismatches,
    worstError,
    worstIndex: worstRatio > 0 ? worstIndex : -1,
    npu: worstRatio > 0 ? a[worstIndex] : NaN,
    cpu: worstRatio > 0 ? e[worstIndex] : NaN,
  };
}

function clean(total: number) {
  return { total, mismatches: 0, worstError: 0, worstIndex: -1, npu: NaN, cpu: NaN };
}
