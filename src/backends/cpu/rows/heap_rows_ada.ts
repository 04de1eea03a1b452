/**
 * AdaLayerNorm (V2) and AdaLayerNormBackward on the WebAssembly row kernels, set up as
 * heap_rows.ts sets up the other row norms (row_call.ts): per-batch scale and shift rows beside
 * the per-column weights, and the backward's column and per-batch sums merged in item order.
 *
 * @module
 */

import type { HostData } from "../../../tensor/dtype.ts";
import type { ReadValues } from "../tensors/channel_values.ts";
import { ROW_FLAGS, ROW_SEQ, ROW_SLOTS } from "../kernels/row_norm_stage.ts";
import { itemCount, rowsPerItem } from "./items.ts";
import { mergeColumns } from "./merge_columns.ts";
import type { HeapRows } from "./row_staging.ts";
import { padded } from "./wasm_rows.ts";
import { array, columns, run, setUp, writeConstants } from "./row_call.ts";
import type { RowStats } from "./heap_rows.ts";

/** AdaLayerNorm's per-batch rows: 1 + scale (formed in float32) and shift, `batches` rows of n. */
export interface AdaRows {
  /** fround(1 + scale), batch-major, n per batch. */
  readonly scale: Float64Array;
  /** shift, batch-major, n per batch. */
  readonly shift: Float64Array;
  /** Number of batch rows. */
  readonly batches: number;
  /** Rows of x per batch row (S). */
  readonly seq: number;
}

/**
 * AdaLayerNorm forward of every row of the heap rows `data` (x, y): LayerNorm with weight `w`
 * and bias `bias`, then times the batch row's 1 + scale and plus its shift (ada_ln_fwd).
 */
export function adaLayerNormHeap(
  anchor: HostData,
  data: readonly HeapRows[],
  rows: number,
  n: number,
  eps: number,
  w: ReadValues,
  bias: ReadValues,
  ada: AdaRows,
): RowStats {
  const c4 = padded(n);
  const per = ada.batches * c4;
  const c = setUp(data, rows, n, eps, 2 * c4 + 2 * per + 2 * rows);
  columns(c, 0, w, n);
  columns(c, c4, bias, n);
  for (let i = 0; i < ada.batches; i++) {
    columns(c, 2 * c4 + i * c4, ada.scale.subarray(i * n), n);
    columns(c, 2 * c4 + per + i * c4, ada.shift.subarray(i * n), n);
  }
  const stats = 2 * c4 + 2 * per;
  [0, c4, 2 * c4, 2 * c4 + per, stats].forEach((entry, i) => array(c, i, entry));
  c.p[ROW_SEQ] = ada.seq;
  run("adaLayerNormRows", c, anchor);
  return {
    mean: c.arrays.subarray(stats, stats + rows),
    rstd: c.arrays.subarray(stats + rows, stats + 2 * rows),
  };
}

/**
 * AdaLayerNormBackward's sums: columns (gradWeight, gradBias) and per batch (gradScale,
 * gradShift), each pair present when it was wanted.
 */
export interface AdaGradSums {
  /** gradWeight: the sum over rows of dy * (1 + scale) * z. */
  readonly weight?: Float64Array;
  /** gradBias: the sum over rows of dy * (1 + scale). */
  readonly bias?: Float64Array;
  /** gradScale: per batch row (batch-major, n each), the sum over S of dy * (z * w + b). */
  readonly scale?: Float64Array;
  /** gradShift: per batch row, the sum over S of dy. */
  readonly shift?: Float64Array;
}

/** Which of AdaLayerNormBackward's sums a call wants (the kernel skips the others). */
export interface AdaGradWanted {
  /** gradWeight or gradBias: the column sums. */
  readonly columns: boolean;
  /** gradScale or gradShift: the per-batch sums. */
  readonly batches: boolean;
}

/**
 * AdaLayerNorm backward of every row of the heap rows `data` (dy, x, and gradInput when it is
 * wanted): gradInput, the column sums merged over the items, and the per-batch sums: each
 * item's slots (the batches its rows touch, from its first row's) added to their batch in
 * item order, in float64 (ada_ln_bwd); only the sums `wanted` asks for.
 */
export function adaLayerNormGradHeap(
  anchor: HostData,
  data: readonly HeapRows[],
  rows: number,
  n: number,
  mean: ReadValues,
  rstd: ReadValues,
  w: ReadValues,
  bias: ReadValues,
  ada: Omit<AdaRows, "shift">,
  wanted: AdaGradWanted,
): AdaGradSums {
  const c4 = padded(n);
  const per = rowsPerItem(rows, n);
  const items = itemCount(rows, n);
  const slots = Math.ceil(per / ada.seq) + 1;
  const sc = 2 * c4;
  const stats = sc + ada.batches * c4;
  const pw = stats + 2 * rows;
  const ps = pw + 2 * items * c4;
  const c = setUp(data, rows, n, NaN, ps + 2 * items * slots * c4);
  columns(c, 0, w, n);
  columns(c, c4, bias, n);
  for (let i = 0; i < ada.batches; i++) columns(c, sc + i * c4, ada.scale.subarray(i * n), n);
  writeConstants(c, stats, mean, rows);
  writeConstants(c, stats + rows, rstd, rows);
  [0, c4, sc, stats, pw].forEach((entry, i) => array(c, i, entry));
  c.p[ROW_FLAGS] = (data.length > 2 ? 1 : 0) | (wanted.columns ? 2 : 0) |
    (wanted.batches ? 4 : 0);
  c.p[ROW_SEQ] = ada.seq;
  c.p[ROW_SLOTS] = slots;
  run("adaLayerNormGradRows", c, anchor);
  const a = c.arrays;
  const batchSums = (at: number): Float64Array => {
    const out = new Float64Array(ada.batches * n);
    for (let item = 0; item < items; item++) {
      const first = item * per;
      const last = Math.min(rows, first + per) - 1;
      const b0 = Math.floor(first / ada.seq);
      for (let b = b0; b <= Math.floor(last / ada.seq); b++) {
        const from = at + (item * slots + b - b0) * c4;
        for (let i = 0; i < n; i++) out[b * n + i] += a[from + i];
      }
    }
    return out;
  };
  return {
    ...(wanted.columns && {
      weight: mergeColumns(c.at + 4 * pw, items, n, c4),
      bias: mergeColumns(c.at + 4 * (pw + items * c4), items, n, c4),
    }),
    ...(wanted.batches && {
      scale: batchSums(ps),
      shift: batchSums(ps + items * slots * c4),
    }),
  };
}
