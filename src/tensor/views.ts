/**
 * The geometry of tensor views: why a view does not fit its storage, and the shape, strides
 * and offset that `permute`, `transpose`, `slice` and `view`/`reshape` give.
 * Pure functions of numbers; `Tensor` wraps their results around its storage.
 *
 * @module
 */

import { checkShape, formatShape, numel, viewSpan } from "./layout.ts";

/** The strides and offset of a view, in elements. */
export interface ViewPlacement {
  /** Shape of the view. */
  shape: number[];
  /** Strides in elements, one per dimension. */
  strides: number[];
  /** Offset of the first element, in elements. */
  offset: number;
}

/**
 * Why a view (shape, strides, offset) does not fit a storage of `capacity` elements, or
 * undefined when it does; `whose` names the storage in the message ("the" or "its").
 */
export function overrunProblem(
  shape: readonly number[],
  strides: readonly number[],
  offset: number,
  capacity: number,
  whose: "the" | "its",
): string | undefined {
  const span = viewSpan(shape, strides);
  if (span === 0 || offset + span <= capacity) return undefined;
  return `view (shape ${formatShape(shape)}, strides ${formatShape(strides)}, ` +
    `offset ${offset}) needs ${offset + span} elements but ${whose} storage holds ${capacity}`;
}

/** The shape and strides of `permute(dims)`: `dims[i]` is the source of new dimension i. */
export function permutePlacement(
  shape: readonly number[],
  strides: readonly number[],
  dims: readonly number[],
): { shape: number[]; strides: number[] } {
  const r = shape.length;
  const seen = new Set<number>();
  for (const d of dims) {
    if (!Number.isInteger(d) || d < 0 || d >= r || seen.has(d)) {
      throw new RangeError(`permute: ${formatShape(dims)} is not a permutation of 0..${r - 1}`);
    }
    seen.add(d);
  }
  if (dims.length !== r) {
    throw new RangeError(`permute: ${formatShape(dims)} is not a permutation of 0..${r - 1}`);
  }
  return { shape: dims.map((d) => shape[d]), strides: dims.map((d) => strides[d]) };
}

/** The permutation of `rank` dimensions that swaps `a` and `b` (for `transpose`). */
export function swapDims(rank: number, a: number, b: number): number[] {
  const dims = Array.from({ length: rank }, (_, i) => i);
  if (a < 0 || a >= rank || b < 0 || b >= rank) {
    throw new RangeError(`transpose: dims ${a}, ${b} out of range for rank ${rank}`);
  }
  [dims[a], dims[b]] = [dims[b], dims[a]];
  return dims;
}

/**
 * The view of `start <= i < end` (step `step`) along `dim` of the view `from`; negative
 * start/end count from the end, as in Python.
 */
export function slicePlacement(
  from: { readonly shape: readonly number[]; readonly strides: readonly number[]; offset: number },
  dim: number,
  start: number,
  end: number,
  step: number,
): ViewPlacement {
  const rank = from.shape.length;
  if (!Number.isInteger(dim) || dim < 0 || dim >= rank) {
    throw new RangeError(`slice: dim ${dim} out of range for rank ${rank}`);
  }
  if (!Number.isInteger(step) || step < 1) {
    throw new RangeError(`slice: step ${step} must be an integer >= 1`);
  }
  const size = from.shape[dim];
  const clamp = (v: number) => Math.min(Math.max(v < 0 ? v + size : v, 0), size);
  const lo = clamp(start);
  const hi = Math.max(clamp(end), lo);
  const shape = [...from.shape];
  const strides = [...from.strides];
  shape[dim] = Math.ceil((hi - lo) / step);
  strides[dim] = from.strides[dim] * step;
  const offset = shape[dim] === 0 ? from.offset : from.offset + lo * from.strides[dim];
  return { shape, strides, offset };
}

/**
 * `shape` with its -1 (if any) inferred so that it holds `count` elements; a RangeError naming
 * `where` when it cannot.
 */
export function resolveShape(shape: readonly number[], count: number, where: string): number[] {
  const inferred = shape.indexOf(-1);
  let s = [...shape];
  if (inferred >= 0) {
    const known = numel(s.filter((_, i) => i !== inferred));
    s[inferred] = known === 0 ? 0 : count / known;
  }
  s = checkShape(s, where);
  if (numel(s) !== count) {
    throw new RangeError(`${where}: shape ${formatShape(shape)} does not hold ${count} elements`);
  }
  return s;
}

/**
 * Checks the `values` given to `where` (Tensor.fromArray, copy_) for a view of `shape`: an
 * array-like of numbers, flat (a nested array is a TypeError advising to flatten it), as many
 * as the shape holds (a RangeError).
 */
export function checkValues(where: string, values: unknown, shape: readonly number[]): void {
  const length = (values as { length?: unknown } | null | undefined)?.length;
  if (typeof values !== "object" || values === null || typeof length !== "number") {
    throw new TypeError(
      `${where}: values must be an array or typed array of numbers, not ${
        values === null ? "null" : typeof values
      }`,
    );
  }
  if (Array.isArray(values) && values.some(Array.isArray)) {
    throw new TypeError(
      `${where}: values is a nested array; pass the numbers flat in row-major order ` +
        "(values.flat(Infinity)) and the dimensions as the shape",
    );
  }
  const n = numel(shape);
  if (length !== n) {
    throw new RangeError(
      `${where}: ${length} values do not fill shape ${formatShape(shape)} (${n} elements)`,
    );
  }
}
