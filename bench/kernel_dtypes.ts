/**
 * The `--dtype` flag of the kernel benchmarks (bench/kernel_ab.ts, bench/pixel_memory_ab.ts):
 * each dtype's code as the drivers pass it to the WebAssembly kernels (bfloat16 as when no
 * constant is NaN). A module of constants alone, so that a command answers `--help` and bad
 * flags before the kernels load.
 *
 * @module
 */

import { usageError } from "../scripts/cli.ts";
import {
  BFLOAT16_NO_NAN_CONSTANTS,
  FLOAT16,
  FLOAT32,
} from "../src/backends/cpu/kernels/stage_types.ts";

/** The kernels' code of each dtype `--dtype` names. */
const CODES: Readonly<Record<string, number>> = {
  float32: FLOAT32,
  float16: FLOAT16,
  bfloat16: BFLOAT16_NO_NAN_CONSTANTS,
};

/** The kernels' code of `--dtype text`, or a usage error of command `name`. */
export function kernelDtypeCode(name: string, text: string): number {
  const code = CODES[text];
  if (code === undefined) {
    usageError(name, `--dtype ${text}: must be ${Object.keys(CODES).join(", ")}`);
  }
  return code;
}
