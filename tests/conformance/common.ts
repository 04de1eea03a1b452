/**
 * Shared pieces of the conformance suite: building inputs in a dtype and layout (from
 * tests/fixtures/conformance/build.ts, where the case data lives too), and comparing outputs
 * with the float64 oracle (tests/oracle/) under the one tolerance table
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
import type { Tensor } from "../../mod.ts";
import { assertClose } from "../helpers/assert.ts";
import type { Tolerance } from "../helpers/tolerance.ts";

export { on, onOpt } from "../helpers/backends.ts";
export {
  capShape,
  channelsLast,
  f64,
  fromValues,
  strided,
  uniform,
} from "../fixtures/conformance/build.ts";

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
