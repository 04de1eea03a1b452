/**
 * The CPU kernels of aclnnLayerNorm and aclnnLayerNormBackward: rows of the normalized dims in
 * work items (items.ts), run by the WebAssembly row kernels in float32 as CANN's kernels
 * compute (src/backends/cpu/wasm/row_norms.wat, row_sums.wat: row sums in float32 blocks added in float64,
 * each output rounded once), on heap rows of the data's dtype (row_staging.ts stages any other
 * tensor, so y and gradInput are formed in the input's dtype before a wider output receives
 * them, as CANN forms them: ops-nn `norm/layer_norm_v4/op_host/op_api/layer_norm_v4.cpp:38`,
 * `aclnn_layer_norm.cpp:456`), on the worker pool when it pays (heap_rows.ts). Weight
 * gradients are per-item float32 column partials merged in item order in float64.
 *
 * @module
 */

import type {
  LayerNormBackwardPlan,
  LayerNormBackwardTensors,
  LayerNormPlan,
  LayerNormTensors,
} from "../../types.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";
import {
  channelValuesView,
  channelValuesViewOr,
  writeChannelValues,
} from "../tensors/channel_values.ts";
import { layerNormBackwardHeap, layerNormHeap } from "./heap_rows.ts";
import { withHeapRows } from "./row_staging.ts";

/**
 * aclnnLayerNorm: per row, mean and rstd = 1/sqrt(biased var + eps) over the normalized dims,
 * y = (x - mean) * rstd * weight + bias. No rows: nothing to write; rows of no element: mean 0
 * and rstd NaN, as CANN fills them.
 */
export function layerNorm(plan: LayerNormPlan, t: LayerNormTensors): void {
  const { rows, cols, axis } = plan.geometry;
  if (rows === 0) return;
  if (cols === 0) {
    writeChannelValues(t.mean, temporaryFloat64(rows));
    writeChannelValues(t.rstd, temporaryFloat64(rows).fill(NaN));
    return;
  }
  const w = channelValuesViewOr(t.weight, cols, 1);
  const bias = channelValuesViewOr(t.bias, cols, 0);
  withHeapRows(axis, t.input.dtype, [t.input], [t.output], (anchor, data) => {
    const stats = layerNormHeap(anchor, data, rows, cols, plan.eps, w, bias);
    writeChannelValues(t.mean, stats.mean);
    writeChannelValues(t.rstd, stats.rstd);
  });
}

/**
 * aclnnLayerNormBackward with the forward's per-row mean and rstd: xhat = (x - mean) * rstd,
 * g = gradOut * weight; gradInput = rstd * (g - mean(g) - xhat * mean(g * xhat)) over the
 * normalized dims; gradWeight = sum over rows of gradOut * xhat; gradBias = sum of gradOut.
 * Only masked-on outputs are computed; no rows give zero gradWeight and gradBias.
 */
export function layerNormBackward(plan: LayerNormBackwardPlan, t: LayerNormBackwardTensors): void {
  const { rows, cols, axis } = plan.geometry;
  const [wantInput, wantWeight, wantBias] = plan.mask;
  const gradInput = wantInput ? t.gradInput : undefined;
  if (!wantInput && !wantWeight && !wantBias) return;
  if (rows === 0 || cols === 0) {
    if (wantWeight && t.gradWeight) writeChannelValues(t.gradWeight, temporaryFloat64(cols));
    if (wantBias && t.gradBias) writeChannelValues(t.gradBias, temporaryFloat64(cols));
    return;
  }
  const w = channelValuesViewOr(t.weight, cols, 1);
  const mean = channelValuesView(t.mean);
  const rstd = channelValuesView(t.rstd);
  const sums = {
    first: wantWeight ? t.gradWeight : undefined,
    second: wantBias ? t.gradBias : undefined,
  };
  const outputs = gradInput ? [gradInput] : [];
  withHeapRows(axis, t.input.dtype, [t.gradOut, t.input], outputs, (anchor, data) => {
    layerNormBackwardHeap(anchor, data, sums, rows, cols, mean, rstd, w);
  });
}
