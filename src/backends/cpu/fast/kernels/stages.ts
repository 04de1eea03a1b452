/**
 * The one entry point every thread calls: run items [from, to) of a stage, with the
 * kernels its layout and dtype select.
 *
 * Worker-safe (see codecs.ts).
 *
 * @module
 */

import type { ThreadScratch } from "./codecs.ts";
import {
  groupNormBackwardPixels,
  groupNormBackwardRows,
  groupNormPixels,
  groupNormRows,
  primeDrivers,
  reduceRows,
  statPixels,
  sumPixels,
  writePixels,
  writeRows,
} from "./drivers.ts";
import { kernelTables } from "./kernel_tables.ts";
import type { Stage } from "./stage_types.ts";

/** Number of packed per-channel constants of a write stage. */
export function constantCount(op: "normalize" | "batchNormGrad" | "scale"): number {
  return op === "normalize" ? 3 : op === "batchNormGrad" ? 4 : 1;
}

/** Runs items [from, to) of `s` with this thread's scratch. */
export function runStage(s: Stage, from: number, to: number, scratch: ThreadScratch): void {
  if (!scratch.tables) {
    scratch.tables = kernelTables();
    primeDrivers(scratch);
  }
  const { rows, pixels } = scratch.tables;
  const pixel = s.layout.kind === "pixels";
  const row = s.layout.kind === "strided" ? 3 : s.dtype;
  switch (s.op) {
    case "sums":
      if (pixel) return sumPixels(s, from, to, pixels.sums[s.dtype], scratch);
      return reduceRows(s, from, to, rows.sums[row], scratch);
    case "stats":
      if (pixel) return statPixels(s, from, to, pixels.stats[s.dtype], scratch);
      return reduceRows(s, from, to, rows.stats[row], scratch);
    case "normalize":
    case "batchNormGrad":
    case "scale":
      if (pixel) {
        return writePixels(s, from, to, pixels[s.op][s.dtype], constantCount(s.op), scratch);
      }
      return writeRows(s, from, to, rows[s.op][row], constantCount(s.op), scratch);
    case "groupNorm":
      if (pixel) {
        const { stats, normalize } = pixels;
        return groupNormPixels(s, from, to, stats[s.dtype], normalize[s.dtype], scratch);
      }
      return groupNormRows(s, from, to, rows.stats[row], rows.normalize[row], scratch);
    case "groupNormBackward":
      if (pixel) {
        const { sums, groupNormGrad } = pixels;
        return groupNormBackwardPixels(s, from, to, sums[s.dtype], groupNormGrad[s.dtype], scratch);
      }
      return groupNormBackwardRows(s, from, to, rows.sums[row], rows.groupNormGrad[row], scratch);
  }
}
