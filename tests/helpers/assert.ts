/**
 * Assertions for numeric results and aclnn errors. Numeric comparisons take their tolerance
 * from the one table, tests/helpers/tolerance.ts.
 *
 * @module
 */

import assert from "node:assert/strict";
import { AclnnError } from "../../src/errors.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { TOLERANCE, type Tolerance, toleranceFor } from "./tolerance.ts";
import { startHostHeap } from "../../src/tensor/host_heap.ts";

// Every test that asserts results also catches an output element no kernel wrote: reused
// host blocks handed out without zero-filling come filled with NaN (the heap is created
// under that policy before any test allocates).
startHostHeap({ poisonReused: true });

export type { Tolerance } from "./tolerance.ts";

function values(v: ArrayLike<number> | Tensor): ArrayLike<number> {
  return v instanceof Tensor ? v.toFloat64Array() : v;
}

/**
 * Element-wise closeness under the tolerance table's rule (tests/helpers/tolerance.ts):
 * |actual - expected| <= atol * scale + rtol * |expected| with scale = max(1, max finite
 * |expected|). NaN must match NaN and infinities must match exactly. The tolerance defaults to
 * the table's entry for `actual`'s dtype (float32 for plain arrays). The message names the
 * first mismatching index and the worst one.
 */
export function assertClose(
  actual: ArrayLike<number> | Tensor | null | undefined,
  expected: ArrayLike<number> | Tensor,
  tolerance?: Tolerance,
  message = "",
): void {
  assert.ok(actual, `${message}: the output is ${actual}`);
  const tol = tolerance ??
    (actual instanceof Tensor ? toleranceFor(actual.dtype) : TOLERANCE.float32);
  const a = values(actual);
  const e = values(expected);
  assert.equal(a.length, e.length, `${message}: ${a.length} values, expected ${e.length}`);
  let scale = 1;
  for (let i = 0; i < e.length; i++) {
    if (Number.isFinite(e[i])) scale = Math.max(scale, Math.abs(e[i]));
  }
  let firstBad = -1;
  let worst = 0;
  let worstAt = -1;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = e[i];
    if (Number.isNaN(y) || !Number.isFinite(y)) {
      if (!Object.is(x, y) && !(Number.isNaN(x) && Number.isNaN(y)) && firstBad < 0) {
        firstBad = i;
      }
      continue;
    }
    const err = Math.abs(x - y);
    const bound = tol.atol * scale + tol.rtol * Math.abs(y);
    if (!(err <= bound)) {
      if (firstBad < 0) firstBad = i;
      const ratio = Number.isNaN(err) ? Infinity : err / bound;
      if (ratio > worst) {
        worst = ratio;
        worstAt = i;
      }
    }
  }
  if (firstBad < 0) return;
  const dtype = actual instanceof Tensor ? `${actual.dtype}, ` : "";
  const w = worstAt >= 0
    ? `; worst at [${worstAt}]: got ${a[worstAt]}, expected ${e[worstAt]} ` +
      `(${worst.toPrecision(3)}x the bound)`
    : "";
  assert.fail(
    `${message} (${dtype}rtol ${tol.rtol.toPrecision(3)}, atol ${tol.atol.toPrecision(3)} x ` +
      `scale ${scale.toPrecision(4)}): first mismatch at [${firstBad}]: got ${a[firstBad]}, ` +
      `expected ${e[firstBad]}${w}`,
  );
}

/**
 * Asserts that `fn` throws an AclnnError with `code`, and (when given) that it names
 * `argument` and carries the InfiniOp `status`. Returns the error for further checks.
 */
export function assertAclnnError(
  fn: () => unknown,
  code: number,
  argument?: string,
  status?: string,
): AclnnError {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof AclnnError)) {
      assert.fail(`expected AclnnError ${code}, got ${e instanceof Error ? e.stack : String(e)}`);
    }
    assert.equal(e.code, code, `code of: ${e.message}`);
    if (argument !== undefined) {
      assert.equal(e.argument, argument, `argument of: ${e.message}`);
      assert.ok(e.message.includes(argument), `message names ${argument}: ${e.message}`);
    }
    if (status !== undefined) assert.equal(e.status, status, `status of: ${e.message}`);
    return e;
  }
  assert.fail(
    `expected AclnnError ${code}${argument ? ` on ${argument}` : ""}, nothing was thrown`,
  );
}
