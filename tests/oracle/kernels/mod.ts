/**
 * The float64 reference kernels: whole tensors read as Float64Array, computed, and rounded
 * once into each output. The CPU backend's fast kernels are tested against these.
 *
 * @module
 */

import type { Kernels } from "../../../src/backends/types.ts";
import {
  batchNormBackward,
  batchNormElemtBackward,
  batchNormReduceBackward,
} from "./batch_norm_backward.ts";
import {
  batchNorm,
  batchNormElemt,
  batchNormGatherStatsWithCounts,
  batchNormStats,
} from "./batch_norm_forward.ts";
import { groupNorm, groupNormBackward } from "./group_norm.ts";
import { layerNorm, layerNormBackward } from "./layer_norm.ts";
import { addRmsNorm, rmsNorm, rmsNormGrad } from "./rms_norm.ts";

/** Every operator's float64 reference kernel. */
export const referenceKernels: Kernels = {
  batchNormReduceBackward,
  batchNormBackward,
  groupNormBackward,
  batchNormStats,
  batchNormGatherStatsWithCounts,
  batchNormElemt,
  batchNormElemtBackward,
  batchNorm,
  groupNorm,
  layerNorm,
  layerNormBackward,
  rmsNorm,
  rmsNormGrad,
  addRmsNorm,
};
