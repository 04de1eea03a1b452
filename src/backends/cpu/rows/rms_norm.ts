/**
 * The CPU kernels of aclnnRmsNorm, aclnnRmsNormGrad and aclnnAddRmsNorm: rows of gamma's dims in
 * work items (items.ts), one pass for the row's sum of squares or dot product and one for the
 * write, one rounding per output element. Heap rows of one dtype run the WebAssembly row kernels
 * in place, pooled when it pays (heap_rows.ts); otherwise the TypeScript row loops
 * (row_loops.ts: float32 rows at unit stride in their own arrays, every other layout and dtype
 * through float64 scratch rows). Both give the same bits. dgamma is per-item column partials
 * merged in item order.
 *
 * @module
 */

import type {
  AddRmsNormPlan,
  AddRmsNormTensors,
  RmsNormGradPlan,
  RmsNormGradTensors,
  RmsNormPlan,
  RmsNormTensors,
} from "../../types.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";
import { channelValues, writeChannelValues } from "../fast/channel_values.ts";
import { runStaged } from "../fast/staging.ts";
import { rowAccess, rowAddressable } from "./access.ts";
import { itemCount, mergeColumns, rowsPerItem } from "./items.ts";
import {
  addRowsF32,
  addRowsF64,
  rmsNormGradRowsF32,
  rmsNormGradRowsF64,
  rmsNormRowsF32,
  rmsNormRowsF64,
} from "./row_loops.ts";
import { directRows, RowView } from "./row_view.ts";
import { rmsForwardHeap, rmsNormGradHeap } from "./heap_rows.ts";
import { heapRows } from "./wasm_rows.ts";

/** aclnnRmsNorm: per row rstd = 1/sqrt(mean(x^2) + epsilon), y = x * rstd * gamma. */
export function rmsNorm(plan: RmsNormPlan, t: RmsNormTensors): void {
  const { rows, cols, axis } = plan.geometry;
  if (rows === 0 || cols === 0) return;
  if (!rowAddressable(t.x) || !rowAddressable(t.y)) {
    return runStaged(
      t,
      { inputs: ["x"], outputs: ["y"] },
      (s) => rmsNorm(plan, s),
      { sizeOnly: true },
    );
  }
  const x = rowAccess(t.x, axis);
  const y = rowAccess(t.y, axis);
  const g = channelValues(t.gamma);
  const inHeap = [heapRows(t.x, x), heapRows(t.y, y)];
  const heap = rmsForwardHeap("rmsNormRows", t.x, inHeap, rows, cols, plan.epsilon, g);
  if (heap) return writeChannelValues(t.rstd, heap);
  const rstd = temporaryFloat64(rows);
  const direct = directRows(x, y);
  // Through scratch rows, y shares x's: each element is read before it is written.
  const [xv, yv] = [new RowView(x, cols, 0, direct), new RowView(y, cols, 0, direct)];
  const loop = direct ? rmsNormRowsF32 : rmsNormRowsF64;
  const per = rowsPerItem(rows, cols);
  for (let first = 0; first < rows; first += per) {
    const end = Math.min(rows, first + per);
    loop(xv, yv, cols, plan.epsilon, g, rstd, first, end);
  }
  writeChannelValues(t.rstd, rstd);
}

/**
 * aclnnRmsNormGrad with the forward's per-row rstd: dx = rstd * (dy * gamma - x * rstd *
 * mean(dy * gamma * x * rstd)) over gamma's dims, dgamma = sum over rows of dy * x * rstd. No
 * rows: dgamma is zero.
 */
export function rmsNormGrad(plan: RmsNormGradPlan, t: RmsNormGradTensors): void {
  const { rows, cols, axis } = plan.geometry;
  if (cols === 0) return;
  if (rows === 0) {
    writeChannelValues(t.dgamma, temporaryFloat64(cols));
    return;
  }
  if (![t.dy, t.x, t.dx].every(rowAddressable)) {
    return runStaged(
      t,
      { inputs: ["dy", "x"], outputs: ["dx"] },
      (s) => rmsNormGrad(plan, s),
      { sizeOnly: true },
    );
  }
  const dy = rowAccess(t.dy, axis);
  const x = rowAccess(t.x, axis);
  const dx = rowAccess(t.dx, axis);
  const g = channelValues(t.gamma);
  const rstd = channelValues(t.rstd);
  const inHeap = [heapRows(t.dy, dy), heapRows(t.x, x), heapRows(t.dx, dx)];
  const heap = rmsNormGradHeap(t.x, inHeap, rows, cols, rstd, g);
  if (heap) return writeChannelValues(t.dgamma, heap);
  const items = itemCount(rows, cols);
  const pg = new Float64Array(items * cols);
  const direct = directRows(dy, x, dx);
  const dyv = new RowView(dy, cols, 0, direct);
  const xv = new RowView(x, cols, 1, direct);
  const dxv = new RowView(dx, cols, 2, direct);
  const loop = direct ? rmsNormGradRowsF32 : rmsNormGradRowsF64;
  const per = rowsPerItem(rows, cols);
  for (let k = 0; k < items; k++) {
    const first = k * per;
    const end = Math.min(rows, first + per);
    loop(dyv, xv, dxv, cols, rstd, g, pg, first, end, k);
  }
  writeChannelValues(t.dgamma, mergeColumns(pg, items, cols));
}

/**
 * aclnnAddRmsNorm: x = x1 + x2 rounded to x1's dtype (written to `x`), then per row
 * rstd = 1/sqrt(mean(x^2) + epsilon) and y = x * rstd * gamma from the rounded x. Rows of no
 * element give rstd NaN (the mean of no square); no rows, nothing.
 */
export function addRmsNorm(plan: AddRmsNormPlan, t: AddRmsNormTensors): void {
  const { rows, cols, axis } = plan.geometry;
  if (rows === 0) return;
  if (cols === 0) {
    writeChannelValues(t.rstd, temporaryFloat64(rows).fill(NaN));
    return;
  }
  if (![t.x1, t.x2, t.y, t.x].every(rowAddressable)) {
    return runStaged(
      t,
      { inputs: ["x1", "x2"], outputs: ["y", "x"] },
      (s) => addRmsNorm(plan, s),
      { sizeOnly: true },
    );
  }
  const a = rowAccess(t.x1, axis);
  const b = rowAccess(t.x2, axis);
  const x = rowAccess(t.x, axis);
  const y = rowAccess(t.y, axis);
  const g = channelValues(t.gamma);
  const eps = plan.epsilon;
  const inHeap = [heapRows(t.x1, a), heapRows(t.x2, b), heapRows(t.x, x), heapRows(t.y, y)];
  const heap = rmsForwardHeap("addRmsNormRows", t.x1, inHeap, rows, cols, eps, g);
  if (heap) return writeChannelValues(t.rstd, heap);
  const rstd = temporaryFloat64(rows);
  const direct = directRows(a, b, x, y);
  const [av, bv] = [new RowView(a, cols, 0, direct), new RowView(b, cols, 1, direct)];
  const [xv, yv] = [new RowView(x, cols, 2, direct), new RowView(y, cols, 3, direct)];
  const [add, norm] = direct ? [addRowsF32, rmsNormRowsF32] : [addRowsF64, rmsNormRowsF64];
  const per = rowsPerItem(rows, cols);
  for (let first = 0; first < rows; first += per) {
    const end = Math.min(rows, first + per);
    add(av, bv, xv, cols, first, end);
    norm(xv, yv, cols, eps, g, rstd, first, end);
  }
  writeChannelValues(t.rstd, rstd);
}
