/**
 * The CPU kernels of aclnnAddLayerNormGrad and aclnnDeepNormGrad: one fused row stage each
 * (src/backends/cpu/wasm/row_norms_add_grad.wat add_ln_bwd, driven by heap_rows.ts): s = alpha
 * * a + b re-formed in float32 and never rounded, LayerNorm's input gradient at s in the cut-N
 * kernels' float32 order, dsum added (AddLayerNormGrad) or dx = alpha * the float32 dgx
 * (DeepNormGrad), each output rounded once; dgamma and dbeta as per-item float32 column
 * partials merged in item order. A composite of ln_bwd would cost a pass to form s and one to
 * add dsum or scale dgx, and ln_bwd orders dx as aclnnLayerNormBackward does, not as these
 * kernels do. Sources: docs/norm_family_kernels.md sections 2 and 4 (ops-nn
 * add_layer_norm_grad_cut_n.h, deep_norm_grad_merge_n.h:396-466).
 *
 * @module
 */

import type {
  AddLayerNormGradPlan,
  AddLayerNormGradTensors,
  DeepNormGradPlan,
  DeepNormGradTensors,
} from "../../types.ts";
import type { Tensor } from "../../../tensor/tensor.ts";
import { channelValuesView } from "../tensors/channel_values.ts";
import { addLayerNormGradHeap } from "./heap_rows.ts";
import { withHeapRows } from "./row_staging.ts";

/** The statistics and scale every backward call reads, and its column outputs. */
interface Columns {
  readonly mean: Tensor;
  readonly rstd: Tensor;
  readonly gamma: Tensor;
  readonly dgamma: Tensor;
  readonly dbeta: Tensor;
}

function run(
  geometry: AddLayerNormGradPlan["geometry"],
  inputs: readonly Tensor[],
  outputs: readonly Tensor[],
  t: Columns,
  options: { alpha: number; dsum: boolean; deep: boolean },
): void {
  const { rows, cols, axis } = geometry;
  // Validation refuses rows of no element and empty inputs unless every output is empty.
  if (rows === 0 || cols === 0) return;
  const mean = channelValuesView(t.mean);
  const rstd = channelValuesView(t.rstd);
  const g = channelValuesView(t.gamma);
  withHeapRows(axis, inputs[0].dtype, inputs, outputs, (anchor, data) => {
    const sums = { first: t.dgamma, second: t.dbeta };
    addLayerNormGradHeap(anchor, data, rows, cols, mean, rstd, g, options, sums);
  });
}

/**
 * aclnnAddLayerNormGrad: x = x1 + x2 in float32; dx = LayerNorm's input gradient at x (+ dsum);
 * dgamma = sum over rows of dy * (x - mean) * rstd, dbeta = sum of dy.
 */
export function addLayerNormGrad(plan: AddLayerNormGradPlan, t: AddLayerNormGradTensors): void {
  const inputs = [t.dy, t.x1, t.x2, ...(t.dsum ? [t.dsum] : [])];
  run(plan.geometry, inputs, [t.dx], t, { alpha: 1, dsum: t.dsum !== undefined, deep: false });
}

/**
 * aclnnDeepNormGrad: s = alpha * x + gx in float32; dgx = LayerNorm's input gradient at s, dx =
 * alpha * dgx; dgamma and dbeta as AddLayerNormGrad's.
 */
export function deepNormGrad(plan: DeepNormGradPlan, t: DeepNormGradTensors): void {
  const options = { alpha: plan.alpha, dsum: false, deep: true };
  run(plan.geometry, [t.dy, t.x, t.gx], [t.dx, t.dgx], t, options);
}
