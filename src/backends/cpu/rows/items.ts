/**
 * Work items of the row kernels: consecutive rows, about {@linkcode ITEM_ELEMENTS} elements per
 * item. Items depend on the shape only, and each item's column sums (weight gradients) are its
 * own partials, merged in item order (merge_columns.ts); so a later split of the items over
 * threads gives the same bits as running them in order on one thread.
 *
 * @module
 */

/** Elements per work item (whole rows; at least one row). */
export const ITEM_ELEMENTS = 1 << 16;

/**
 * Elements per work item of calls under 4 {@linkcode ITEM_ELEMENTS}: a quarter of the call, at
 * least this many, so that a call of 2^16 elements still splits over threads.
 */
export const MIN_ITEM_ELEMENTS = 1 << 13;

/** Rows of one work item of `rows` rows of `cols` elements (a function of the shape only). */
export function rowsPerItem(rows: number, cols: number): number {
  const target = Math.min(ITEM_ELEMENTS, Math.max(MIN_ITEM_ELEMENTS, Math.ceil(rows * cols / 4)));
  return Math.max(1, Math.floor(target / Math.max(cols, 1)));
}

/** The work items of `rows` rows of `cols` elements. */
export function itemCount(rows: number, cols: number): number {
  return Math.ceil(rows / rowsPerItem(rows, cols));
}
