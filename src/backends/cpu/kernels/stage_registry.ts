/**
 * Every kind of stage the CPU backend runs, declared once: its code (its index here plus one)
 * is what the pool's job words carry (pool/job_words.ts) and what the governor's group keys
 * are built of (pool/governor.ts); kernels/stages.ts runs each. A new stage kind is a new
 * entry here, its fields in stage_types.ts and its runner in stages.ts.
 *
 * Part of the pool's worker script (see pool/worker_entry.ts).
 *
 * @module
 */

import type { Stage } from "./stage_types.ts";

/** The stage kinds, in code order. */
export const STAGE_OPS = [
  "sums",
  "stats",
  "normalize",
  "gradient",
  "scale",
  "layerNormRows",
  "layerNormBackwardRows",
  "rmsNormRows",
  "rmsNormGradRows",
  "addRmsNormRows",
  "addLayerNormRows",
  "addRmsNormCastRows",
  "adaLayerNormRows",
  "addLayerNormGradRows",
  "swish",
  "swishSums",
  "swishGrad",
  "adaLayerNormGradRows",
  "groupNormSamples",
  "groupNormSwishSamples",
  "groupNormBackwardSamples",
] as const satisfies readonly Stage["op"][];

/** One more than the largest stage code: the base of the digits of a governor key. */
export const STAGE_CODE_BASE = STAGE_OPS.length + 1;

/** The code of stage kind `op` (1 .. STAGE_OPS.length). */
export function stageCode(op: Stage["op"]): number {
  return STAGE_OPS.indexOf(op) + 1;
}

/** The stage kind of code `code`, or a RangeError naming it. */
export function stageOfCode(code: number): Stage["op"] {
  const op = STAGE_OPS[code - 1];
  if (op === undefined) throw new RangeError(`job words: no stage kind has code ${code}`);
  return op;
}
