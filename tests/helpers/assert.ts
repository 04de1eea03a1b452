/**
 * Assertions for numeric results and aclnn errors.
 *
 * @module
 */

import assert from "node:assert/strict";
import { AclnnError } from "../../src/ffi/errors.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";

/** Relative and absolute tolerance: |a - e| <= atol + rtol * |e|. */
export interface Tolerance {
  rtol?: number;
  atol?: number;
}

/** Tolerances for results stored in `dtype` (computed in float64, rounded once). */
export function toleranceFor(dtype: DType): Required<Tolerance> {
  switch (dtype) {
    case "float32":
      return { rtol: 1e-5, atol: 1e-5 };
    case "float16":
      return { rtol: 2e-3, atol: 2e-3 };
    case "bfloat16":
      return { rtol: 1.6e-2, atol: 1.6e-2 };
    case "int32":
      return { rtol: 0, atol: 0 };
  }
}

function values(v: ArrayLike<number> | Tensor): ArrayLike<number> {
  return v instanceof Tensor ? v.toFloat64Array() : v;
}

/**
 * Element-wise closeness. NaN matches NaN and infinities must match exactly. The message
 * shows the first mismatching index and the worst error.
 */
export function assertClose(
  actual: ArrayLike<number> | Tensor,
  expected: ArrayLike<number> | Tensor,
  tolerance: Tolerance = {},
  message = "",
): void {
  const a = values(actual);
  const e = values(expected);
  const rtol = tolerance.rtol ?? 1e-6;
  const atol = tolerance.atol ?? 1e-9;
  assert.equal(a.length, e.length, `${message} length ${a.length} != expected ${e.length}`);
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = e[i];
    if (Number.isNaN(y)) {
      assert.ok(Number.isNaN(x), `${message} [${i}]: got ${x}, expected NaN`);
      continue;
    }
    if (!Number.isFinite(y)) {
      assert.equal(x, y, `${message} [${i}]: got ${x}, expected ${y}`);
      continue;
    }
    const err = Math.abs(x - y);
    if (!(err <= atol + rtol * Math.abs(y))) {
      assert.fail(
        `${message} [${i}]: got ${x}, expected ${y} (|err| ${err.toExponential(3)} > ` +
          `atol ${atol} + rtol ${rtol} * |expected|)`,
      );
    }
  }
}

/** The largest |a - e| / max(|e|, floor) over all elements. */
export function maxRelativeError(
  actual: ArrayLike<number> | Tensor,
  expected: ArrayLike<number> | Tensor,
  floor = 1,
): number {
  const a = values(actual);
  const e = values(expected);
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    worst = Math.max(worst, Math.abs(a[i] - e[i]) / Math.max(Math.abs(e[i]), floor));
  }
  return worst;
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
