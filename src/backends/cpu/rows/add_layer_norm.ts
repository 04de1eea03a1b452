/**
 * The CPU kernels of aclnnAddLayerNorm and aclnnDeepNorm: one fused row stage each
 * (src/backends/cpu/wasm/row_norms_add.wat add_ln_fwd, driven by heap_rows.ts): s = alpha * x1
 * + x2 (+ bias) in float32, never rounded to the data dtype before the statistics, then
 * LayerNorm's mean, rstd and y of s as aclnnLayerNorm's kernel computes them, and x = s rounded
 * once (AddLayerNorm's additionalOutput). The rows are in y's dtype (row_staging.ts widens a
 * 16-bit x1 or x2 of a float32 call exactly). Sources: docs/norm_family_kernels.md sections 1
 * and 3 (ops-nn add_layer_norm_kernel.h:284-331, :785-805; deep_norm.cpp:472-525).
 *
 * @module
 */

import type {
  AddLayerNormPlan,
  AddLayerNormTensors,
  DeepNormPlan,
  DeepNormTensors,
  RowGeometry,
} from "../../types.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";
import type { Tensor } from "../../../tensor/tensor.ts";
import { channelValues, channelValuesView, writeChannelValues } from "../tensors/channel_values.ts";
import { addLayerNormHeap, type AddRowsOptions } from "./heap_rows.ts";
import { withHeapRows } from "./row_staging.ts";

/**
 * Rows of no element give mean and rstd NaN (Ascend 950's reduce-empty kernel fills both with
 * NaN: ops-nn add_layer_norm/op_kernel/arch35/add_layer_norm_regbase_reduce_empty.h); true
 * when the call is done.
 */
function emptyRows(geometry: RowGeometry, mean: Tensor, rstd: Tensor): boolean {
  const { rows, cols } = geometry;
  if (rows === 0) return true;
  if (cols > 0) return false;
  writeChannelValues(mean, temporaryFloat64(rows).fill(NaN));
  writeChannelValues(rstd, temporaryFloat64(rows).fill(NaN));
  return true;
}

/**
 * aclnnAddLayerNorm: x = x1 + x2 (+ bias) in float32; per row mean and rstd = 1/sqrt(biased
 * var + epsilon) of x; y = (x - mean) * rstd * gamma + beta; x rounded to y's dtype when asked.
 */
export function addLayerNorm(plan: AddLayerNormPlan, t: AddLayerNormTensors): void {
  const { geometry } = plan;
  if (emptyRows(geometry, t.mean, t.rstd)) return;
  const biasRows = t.bias !== undefined && plan.biasRows;
  const storeX = plan.additionalOutput && t.x !== undefined;
  const inputs = [t.x1, t.x2, ...(biasRows ? [t.bias!] : [])];
  const outputs = [...(storeX ? [t.x!] : []), t.y];
  const options: AddRowsOptions = {
    alpha: 1,
    biasRows,
    columnBias: t.bias && !biasRows ? channelValues(t.bias) : undefined,
    storeX,
  };
  run(geometry, plan.dtype, plan.epsilon, inputs, outputs, t, options);
}

/**
 * aclnnDeepNorm: s = alpha * x + gx in float32; per row mean and rstd of s; y = (s - mean) *
 * rstd * gamma + beta.
 */
export function deepNorm(plan: DeepNormPlan, t: DeepNormTensors): void {
  const { geometry } = plan;
  if (emptyRows(geometry, t.mean, t.rstd)) return;
  const options = { alpha: plan.alpha, biasRows: false, columnBias: undefined, storeX: false };
  run(geometry, t.y.dtype, plan.epsilon, [t.x, t.gx], [t.y], t, options);
}

/** The fused stage over the staged rows; mean and rstd written to their tensors. */
function run(
  geometry: RowGeometry,
  dtype: Tensor["dtype"],
  epsilon: number,
  inputs: readonly Tensor[],
  outputs: readonly Tensor[],
  t: { gamma: Tensor; beta: Tensor; mean: Tensor; rstd: Tensor },
  options: AddRowsOptions,
): void {
  const { rows, cols, axis } = geometry;
  const g = channelValuesView(t.gamma);
  const beta = channelValuesView(t.beta);
  withHeapRows(axis, dtype, inputs, outputs, (anchor, data) => {
    const stats = addLayerNormHeap(anchor, data, rows, cols, epsilon, g, beta, options);
    writeChannelValues(t.mean, stats.mean);
    writeChannelValues(t.rstd, stats.rstd);
  });
}
