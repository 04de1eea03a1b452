/**
 * The row norms on the WebAssembly row kernels in place (wasm_rows.ts): each function takes
 * a call whose data tensors are all heap rows of one dtype, puts its per-column and per-row
 * float64 arrays in the heap block, runs the work items (items.ts: the same items, hence the
 * same column partials merged in the same order, as the TypeScript kernels) and returns true;
 * or returns false having written nothing, and the caller runs the TypeScript kernels.
 *
 * @module
 */

import { itemCount, mergeColumns, rowsPerItem } from "./items.ts";
import { heapFloat64, type HeapRows, padded, rowNormKernels, sameHeapRows } from "./wasm_rows.ts";

/** Float64 arrays a LayerNorm forward gives back: each row's mean and rstd (heap views). */
export interface RowStats {
  readonly mean: Float64Array;
  readonly rstd: Float64Array;
}

/** LayerNorm forward of every row, or undefined (nothing written) when it cannot run. */
export function layerNormHeap(
  x: HeapRows | undefined,
  y: HeapRows | undefined,
  rows: number,
  n: number,
  eps: number,
  w: Float64Array,
  bias: Float64Array,
): RowStats | undefined {
  const k = rowNormKernels();
  if (!k || !sameHeapRows([x, y])) return undefined;
  const [xr, yr] = [x!, y!];
  const c4 = padded(n);
  const block = heapFloat64(2 * c4 + 2 * rows);
  if (!block) return undefined;
  const { at, view } = block;
  view.set(w.subarray(0, n), 0);
  view.set(bias.subarray(0, n), c4);
  const meanAt = 2 * c4;
  const rstdAt = meanAt + rows;
  const per = rowsPerItem(n);
  for (let first = 0; first < rows; first += per) {
    const count = Math.min(per, rows - first);
    k.ln_fwd(
      xr.at + first * xr.stride,
      xr.stride,
      yr.at + first * yr.stride,
      yr.stride,
      n,
      xr.dt,
      count,
      eps,
      at,
      at + 8 * c4,
      at + 8 * (meanAt + first),
      at + 8 * (rstdAt + first),
    );
  }
  return {
    mean: view.subarray(meanAt, meanAt + rows),
    rstd: view.subarray(rstdAt, rstdAt + rows),
  };
}

/** Column sums a backward call gives back (merged over the items; fresh arrays). */
export interface ColumnSums {
  readonly first: Float64Array | undefined;
  readonly second: Float64Array | undefined;
}

/**
 * LayerNorm backward of every row: gradInput when `gi` is given, the column sums (gradWeight,
 * gradBias) when `sums`; undefined (nothing written) when it cannot run.
 */
export function layerNormBackwardHeap(
  dy: HeapRows | undefined,
  x: HeapRows | undefined,
  gi: HeapRows | undefined,
  wantInput: boolean,
  sums: boolean,
  rows: number,
  n: number,
  mean: Float64Array,
  rstd: Float64Array,
  w: Float64Array,
): ColumnSums | undefined {
  const k = rowNormKernels();
  if (!k || !sameHeapRows(wantInput ? [dy, x, gi] : [dy, x])) return undefined;
  const [dr, xr] = [dy!, x!];
  const c4 = padded(n);
  const items = itemCount(rows, n);
  const meanAt = c4;
  const rstdAt = meanAt + rows;
  const pwAt = rstdAt + rows;
  const pbAt = pwAt + (sums ? items * n : 0);
  const block = heapFloat64(pbAt + (sums ? items * n : 0));
  if (!block) return undefined;
  const { at, view } = block;
  view.set(w.subarray(0, n), 0);
  view.set(mean.subarray(0, rows), meanAt);
  view.set(rstd.subarray(0, rows), rstdAt);
  const flags = (sums ? 1 : 0) | (wantInput ? 2 : 0);
  const go = wantInput ? gi! : { at: 0, stride: 0 };
  const per = rowsPerItem(n);
  for (let item = 0; item < items; item++) {
    const first = item * per;
    k.ln_bwd(
      dr.at + first * dr.stride,
      dr.stride,
      xr.at + first * xr.stride,
      xr.stride,
      go.at + first * go.stride,
      go.stride,
      n,
      dr.dt,
      Math.min(per, rows - first),
      at + 8 * (meanAt + first),
      at + 8 * (rstdAt + first),
      at,
      at + 8 * (pwAt + item * n),
      at + 8 * (pbAt + item * n),
      flags,
    );
  }
  if (!sums) return { first: undefined, second: undefined };
  return {
    first: mergeColumns(view.subarray(pwAt, pwAt + items * n), items, n),
    second: mergeColumns(view.subarray(pbAt, pbAt + items * n), items, n),
  };
}

/** RMSNorm forward of every row: each row's rstd (a heap view), or undefined. */
export function rmsNormHeap(
  x: HeapRows | undefined,
  y: HeapRows | undefined,
  rows: number,
  n: number,
  eps: number,
  g: Float64Array,
): Float64Array | undefined {
  const k = rowNormKernels();
  if (!k || !sameHeapRows([x, y])) return undefined;
  const [xr, yr] = [x!, y!];
  const c4 = padded(n);
  const block = heapFloat64(c4 + rows);
  if (!block) return undefined;
  const { at, view } = block;
  view.set(g.subarray(0, n), 0);
  const per = rowsPerItem(n);
  for (let first = 0; first < rows; first += per) {
    k.rms_fwd(
      xr.at + first * xr.stride,
      xr.stride,
      yr.at + first * yr.stride,
      yr.stride,
      n,
      xr.dt,
      Math.min(per, rows - first),
      eps,
      at,
      at + 8 * (c4 + first),
    );
  }
  return view.subarray(c4, c4 + rows);
}

/** RMSNorm backward of every row: dx, and dgamma (a fresh array); undefined when it cannot. */
export function rmsNormGradHeap(
  dy: HeapRows | undefined,
  x: HeapRows | undefined,
  dx: HeapRows | undefined,
  rows: number,
  n: number,
  rstd: Float64Array,
  g: Float64Array,
): Float64Array | undefined {
  const k = rowNormKernels();
  if (!k || !sameHeapRows([dy, x, dx])) return undefined;
  const [dr, xr, or] = [dy!, x!, dx!];
  const c4 = padded(n);
  const items = itemCount(rows, n);
  const pgAt = c4 + rows;
  const block = heapFloat64(pgAt + items * n);
  if (!block) return undefined;
  const { at, view } = block;
  view.set(g.subarray(0, n), 0);
  view.set(rstd.subarray(0, rows), c4);
  const per = rowsPerItem(n);
  for (let item = 0; item < items; item++) {
    const first = item * per;
    k.rms_bwd(
      dr.at + first * dr.stride,
      dr.stride,
      xr.at + first * xr.stride,
      xr.stride,
      or.at + first * or.stride,
      or.stride,
      n,
      dr.dt,
      Math.min(per, rows - first),
      at + 8 * (c4 + first),
      at,
      at + 8 * (pgAt + item * n),
    );
  }
  return mergeColumns(view.subarray(pgAt, pgAt + items * n), items, n);
}

/**
 * AddRmsNorm of every row (x = x1 + x2 rounded, then RMSNorm of the stored x, item by item):
 * each row's rstd (a heap view), or undefined.
 */
export function addRmsNormHeap(
  x1: HeapRows | undefined,
  x2: HeapRows | undefined,
  x: HeapRows | undefined,
  y: HeapRows | undefined,
  rows: number,
  n: number,
  eps: number,
  g: Float64Array,
): Float64Array | undefined {
  const k = rowNormKernels();
  if (!k || !sameHeapRows([x1, x2, x, y])) return undefined;
  const [ar, br, xr, yr] = [x1!, x2!, x!, y!];
  const c4 = padded(n);
  const block = heapFloat64(c4 + rows);
  if (!block) return undefined;
  const { at, view } = block;
  view.set(g.subarray(0, n), 0);
  const per = rowsPerItem(n);
  for (let first = 0; first < rows; first += per) {
    const count = Math.min(per, rows - first);
    const xAt = xr.at + first * xr.stride;
    k.row_add(
      ar.at + first * ar.stride,
      ar.stride,
      br.at + first * br.stride,
      br.stride,
      xAt,
      xr.stride,
      n,
      xr.dt,
      count,
    );
    k.rms_fwd(
      xAt,
      xr.stride,
      yr.at + first * yr.stride,
      yr.stride,
      n,
      xr.dt,
      count,
      eps,
      at,
      at + 8 * (c4 + first),
    );
  }
  return view.subarray(c4, c4 + rows);
}
