/**
 * How the TypeScript row loops (row_loops.ts, generated) see a tensor's rows: a
 * {@linkcode RowView} reads and writes float32 rows at unit stride in their own Float32Array
 * (no decoded copy), or any row through a float64 scratch row (decoded once on load, rounded
 * once per element on store). A call uses one kind for all its tensors (the loops come in a
 * float32 and a float64 instance, each seeing one array type), so that V8 compiles every
 * element access for one typed array.
 *
 * @module
 */

import { loadRow, type RowAccess, rowBase, scratchRow, storeRow } from "./access.ts";

/** Whether every tensor's rows can be read and written in place as float32 (F32 loops). */
export function directRows(...tensors: (RowAccess | undefined)[]): boolean {
  return tensors.every((t) => !t || (t.code === 0 && t.step === 1 && t.rowStride >= 0));
}

/**
 * One tensor's rows as the loops read and write them: after {@linkcode RowView.load} or
 * {@linkcode RowView.seek} of row r, its elements are `data[at .. at + n)`.
 */
export class RowView {
  /** The array holding the current row: the tensor's own float32 storage, or a scratch row. */
  readonly data: Float32Array | Float64Array;
  /** Index of the current row's first element in `data`. */
  at = 0;
  readonly #access: RowAccess;
  readonly #n: number;
  /** Whether the rows are float32 at unit stride with one row stride (read in place). */
  readonly #direct: boolean;

  /**
   * The rows of `access`, `n` elements each: read in place when `direct` (which
   * {@linkcode directRows} must allow), else through scratch row `slot`.
   */
  constructor(access: RowAccess, n: number, slot: number, direct: boolean) {
    this.#access = access;
    this.#n = n;
    this.#direct = direct;
    this.data = direct ? access.bits as Float32Array : scratchRow(slot, n);
  }

  /** Makes row `r` current with its values (decoded into the scratch row when not direct). */
  load(r: number): void {
    if (this.#direct) this.at = rowBase(this.#access, r);
    else loadRow(this.#access, r, this.data as Float64Array, this.#n);
  }

  /** Makes row `r` current for writing all of it (nothing is read). */
  seek(r: number): void {
    if (this.#direct) this.at = rowBase(this.#access, r);
  }

  /** Writes the current row back as row `r` (a scratch row's store; nothing when direct). */
  store(r: number): void {
    if (!this.#direct) storeRow(this.#access, r, this.data as Float64Array, this.#n);
  }
}

/** First scratch slot of the loops' row terms (the views of a call take slots 0 to 3). */
export const TERMS = 4;
