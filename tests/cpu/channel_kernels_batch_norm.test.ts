/**
 * The CPU backend's BatchNorm-family channel kernels against the float64 oracle's kernels
 * (tests/oracle/kernels): batchNormReduceBackward, batchNormBackward (training and evaluation,
 * masks, absent tensors), batchNormElemtBackward, batchNormStats, batchNormElemt and batchNorm,
 * every dtype (float32 statistics for float16/bfloat16 data every other case), ranks 2-8,
 * contiguous, channels-last, sliced, strided and transposed views.
 *
 * @module
 */

import {
  backwardCase,
  batchNormCase,
  elemtBackwardCase,
  elemtCase,
  MASKS,
  reduceCase,
  statsCase,
  sweep,
} from "../fixtures/channel_kernel_cases.ts";

Deno.test("fast batchNormReduceBackward = reference: dtypes, layouts, ranks 2-8, masks", () => {
  sweep((shape, dtype, layout, i) => reduceCase(shape, dtype, layout, i, MASKS[i % MASKS.length]));
});

Deno.test("fast batchNormBackward = reference: training/eval, masks, absent tensors", () => {
  sweep((shape, dtype, layout, i) => {
    backwardCase(shape, dtype, layout, i, { training: i % 2 === 0, mask: MASKS[i % 7] });
  });
});

Deno.test("fast batchNormElemtBackward = reference", () => {
  sweep((shape, dtype, layout, i) => elemtBackwardCase(shape, dtype, layout, i));
});

Deno.test("fast batchNormStats = reference (large channel means stay accurate)", () => {
  sweep((shape, dtype, layout, i) => statsCase(shape, dtype, layout, i));
});

Deno.test("fast batchNormElemt = reference", () => {
  sweep((shape, dtype, layout, i) => elemtCase(shape, dtype, layout, i));
});

Deno.test("fast batchNorm = reference: training and evaluation", () => {
  sweep((shape, dtype, layout, i) => batchNormCase(shape, dtype, layout, i, i % 3 !== 2));
});
