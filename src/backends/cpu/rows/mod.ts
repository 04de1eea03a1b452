/**
 * The row kernels of the CPU backend: LayerNorm and RMSNorm (and their fused adds), whose normalized dims are the
 * trailing ones, so that a row of them is the unit of work (access.ts, items.ts).
 *
 * @module
 */

import type { RowNormKernels } from "../../types.ts";
import { adaLayerNorm } from "./ada_layer_norm.ts";
import { adaLayerNormBackward } from "./ada_layer_norm_grad.ts";
import { addLayerNorm, deepNorm } from "./add_layer_norm.ts";
import { addRmsNormCast } from "./add_rms_norm_cast.ts";
import { addLayerNormGrad, deepNormGrad } from "./add_layer_norm_grad.ts";
import { layerNorm, layerNormBackward } from "./layer_norm.ts";
import { addRmsNorm, gemmaRmsNorm, inplaceAddRmsNorm, rmsNorm, rmsNormGrad } from "./rms_norm.ts";

/** The row kernels, by operator. */
export const rowKernels: RowNormKernels = {
  layerNorm,
  layerNormBackward,
  rmsNorm,
  rmsNormGrad,
  addRmsNorm,
  gemmaRmsNorm,
  addRmsNormCast,
  adaLayerNorm,
  adaLayerNormV2: adaLayerNorm,
  adaLayerNormBackward,
  inplaceAddRmsNorm,
  addLayerNorm,
  deepNorm,
  addLayerNormGrad,
  deepNormGrad,
  // aclnnFastLayerNorm computes aclnnLayerNorm's statistics and output (ops-nn
  // aclnn_fast_layer_norm.cpp runs l0op::LayerNormV4, whose float32 mean/rstd this kernel forms).
  fastLayerNorm: layerNorm,
};
