/**
 * Shared pieces of the conformance suite: building inputs in a dtype and layout, and
 * comparing outputs with the float64 oracle (tests/oracle/) under the one tolerance table
 * (tests/helpers/tolerance.ts). Every case runs on every backend through `forEachBackend`
 * (tests/helpers/backends.ts): the CPU backend, and the software CANN as Ascend 950 and as
 * Atlas A2 when it has been built.
 *
 * Inputs are generated in their dtype first and the oracle reads them back, so it sees
 * exactly the rounded values the kernel sees.
 *
 * @module
 */

import assert from "node:assert/strict";
import { type DType, Tensor } from "../../mod.ts";
import { assertClose } from "../helpers/assert.ts";
import type { Tolerance } from "../helpers/tolerance.ts";

export { on, onOpt } from "../helpers/backends.ts";

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
 * An output compared with its oracle values under the output dtype's table entry (or `tol`),
 * with the case's label in the message.
 */
export function expectClose(
  actual: Tensor | null,
  expected: ArrayLike<number>,
  label: string,
  tol?: Tolerance,
): void {
  assertClose(actual, expected, tol, label);
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
