/**
 * The CPU kernels of aclnnLayerNorm and aclnnLayerNormBackward: rows of the normalized dims in
 * work items (items.ts), each row's statistics or sums taken in one pass and its output written
 * in a second, float64 throughout and one rounding per output element. Calls whose data tensors
 * are all rows at unit stride in the host heap, of one dtype, run the WebAssembly row kernels in
 * place, on the worker pool when it pays (heap_rows.ts); otherwise the TypeScript row loops
 * (row_loops.ts: float32 rows at unit stride in their own arrays, every other layout and dtype
 * through float64 scratch rows). Both give the same bits. Weight gradients are per-item column
 * partials merged in item order.
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
import { channelValues, channelValuesOr, writeChannelValues } from "../fast/channel_values.ts";
import { runStaged } from "../fast/staging.ts";
import { rowAccess, rowAddressable } from "./access.ts";
import { itemCount, mergeColumns, rowsPerItem } from "./items.ts";
import {
  layerNormGradRowsF32,
  layerNormGradRowsF64,
  layerNormRowsF32,
  layerNormRowsF64,
} from "./row_loops.ts";
import { directRows, RowView } from "./row_view.ts";
import { layerNormBackwardHeap, layerNormHeap } from "./heap_rows.ts";
import { heapRows } from "./wasm_rows.ts";

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
  if (!rowAddressable(t.input) || !rowAddressable(t.output)) {
    return runStaged(
      t,
      { inputs: ["input"], outputs: ["output"] },
      (s) => layerNorm(plan, s),
      { sizeOnly: true },
    );
  }
  const x = rowAccess(t.input, axis);
  const y = rowAccess(t.output, axis);
  const w = channelValuesOr(t.weight, cols, 1);
  const bias = channelValuesOr(t.bias, cols, 0);
  const inHeap = [heapRows(t.input, x), heapRows(t.output, y)];
  const stats = layerNormHeap(t.input, inHeap, rows, cols, plan.eps, w, bias);
  if (stats) {
    writeChannelValues(t.mean, stats.mean);
    writeChannelValues(t.rstd, stats.rstd);
    return;
  }
  const mean = temporaryFloat64(rows);
  const rstd = temporaryFloat64(rows);
  const moments = temporaryFloat64(2);
  const direct = directRows(x, y);
  // Through scratch rows, y shares x's: each element is read before it is written.
  const xv = new RowView(x, cols, 0, direct);
  const yv = new RowView(y, cols, 0, direct);
  const loop = direct ? layerNormRowsF32 : layerNormRowsF64;
  const per = rowsPerItem(rows, cols);
  for (let first = 0; first < rows; first += per) {
    const end = Math.min(rows, first + per);
    loop(xv, yv, cols, plan.eps, w, bias, mean, rstd, moments, first, end);
  }
  writeChannelValues(t.mean, mean);
  writeChannelValues(t.rstd, rstd);
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
  const data = [t.gradOut, t.input, ...(gradInput ? [gradInput] : [])];
  if (!data.every(rowAddressable)) {
    return runStaged(
      t,
      { inputs: ["gradOut", "input"], outputs: gradInput ? ["gradInput"] : [] },
      (s) => layerNormBackward(plan, s),
      { sizeOnly: true },
    );
  }
  const dy = rowAccess(t.gradOut, axis);
  const x = rowAccess(t.input, axis);
  const gi = gradInput ? rowAccess(gradInput, axis) : undefined;
  const w = channelValuesOr(t.weight, cols, 1);
  const mean = channelValues(t.mean);
  const rstd = channelValues(t.rstd);
  const sums = wantWeight || wantBias;
  const inHeap = [heapRows(t.gradOut, dy), heapRows(t.input, x)];
  if (gi) inHeap.push(heapRows(gradInput, gi));
  const heap = layerNormBackwardHeap(t.input, inHeap, sums, rows, cols, mean, rstd, w);
  if (heap) {
    if (wantWeight && t.gradWeight) writeChannelValues(t.gradWeight, heap.first!);
    if (wantBias && t.gradBias) writeChannelValues(t.gradBias, heap.second!);
    return;
  }
  const items = itemCount(rows, cols);
  const pw = sums ? new Float64Array(items * cols) : undefined;
  const pb = sums ? new Float64Array(items * cols) : undefined;
  const direct = directRows(dy, x, gi);
  const [dyv, xv] = [new RowView(dy, cols, 0, direct), new RowView(x, cols, 1, direct)];
  const giv = gi ? new RowView(gi, cols, 2, direct) : undefined;
  const loop = direct ? layerNormGradRowsF32 : layerNormGradRowsF64;
  const per = rowsPerItem(rows, cols);
  for (let k = 0; k < items; k++) {
    const first = k * per;
    const end = Math.min(rows, first + per);
    loop(dyv, xv, giv, cols, mean, rstd, w, pw, pb, first, end, k);
  }
  if (wantWeight && t.gradWeight) writeChannelValues(t.gradWeight, mergeColumns(pw!, items, cols));
  if (wantBias && t.gradBias) writeChannelValues(t.gradBias, mergeColumns(pb!, items, cols));
}
