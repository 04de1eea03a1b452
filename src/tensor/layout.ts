/**
 * Shape and stride arithmetic. Strides and offsets count elements, never bytes, as in
 * aclCreateTensor and PyTorch.
 *
 * @module
 */

/**
 * The largest rank a tensor may have: 64, as in PyTorch. The CANN operators take at most 8
 * dimensions and refuse more with 161002 (each operator checks its arguments' ranks).
 */
export const MAX_RANK = 64;

/** Number of elements of a shape (1 for rank 0). */
export function numel(shape: readonly number[]): number {
  // An index loop: `for...of` allocated an iterator per call where shapes of several array
  // kinds reach it (bench/RESULTS.md, twelfth session).
  let n = 1;
  for (let i = 0; i < shape.length; i++) n *= shape[i];
  return n;
}

/** Row-major (C-contiguous) strides of a shape. */
export function contiguousStrides(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let s = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    strides[i] = s;
    s *= Math.max(shape[i], 1);
  }
  return strides;
}

/** Whether a view with these strides is row-major contiguous (size-1 dims are ignored). */
export function isContiguousLayout(shape: readonly number[], strides: readonly number[]): boolean {
  let expected = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    if (shape[i] === 1) continue;
    if (shape[i] === 0) return true;
    if (strides[i] !== expected) return false;
    expected *= shape[i];
  }
  return true;
}

/**
 * Number of storage elements a view touches from its offset: 1 + sum((d-1)*stride),
 * or 0 for an empty view. Strides are never negative in this package.
 */
export function viewSpan(shape: readonly number[], strides: readonly number[]): number {
  let span = 1;
  for (let i = 0; i < shape.length; i++) {
    if (shape[i] === 0) return 0;
    span += (shape[i] - 1) * strides[i];
  }
  return span;
}

/**
 * Whether the view covers its span exactly once (a permutation of a contiguous layout,
 * e.g. channels-last). Such a view can be copied byte for byte with its strides kept.
 */
export function isDenseLayout(shape: readonly number[], strides: readonly number[]): boolean {
  return viewSpan(shape, strides) === numel(shape) || numel(shape) === 0;
}

/** Whether two lists of dims (shapes, or strides) are equal, entry by entry. */
export function sameDims(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Channels-last strides of `shape` (rank >= 2): dim 1 innermost, then the last dims, dim 0. */
export function channelsLastStrides(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  strides[1] = 1;
  let step = Math.max(shape[1], 1);
  for (let i = shape.length - 1; i >= 2; i--) {
    strides[i] = step;
    step *= Math.max(shape[i], 1);
  }
  strides[0] = step;
  return strides;
}

/**
 * Compact strides for a new tensor of `shape` whose dimensions are laid out in the same order
 * as `strides` orders them (largest stride outermost; ties keep the dimension order). A
 * contiguous layout gives contiguous strides and a channels-last one channels-last strides:
 * what PyTorch's `empty_like` (preserve_format) gives, so outputs keep their inputs' layout.
 */
export function stridesLike(shape: readonly number[], strides: readonly number[]): number[] {
  // Row-major strides (an operator's usual input) give themselves: no sort.
  const same = contiguousStrides(shape);
  if (sameDims(same, strides)) return same;
  // So do channels-last ones (dim 1 innermost) when no dim has one element (no ties).
  if (shape.length >= 3 && shape.every((d) => d > 1)) {
    const last = channelsLastStrides(shape);
    if (sameDims(last, strides)) return last;
  }
  return sortedStridesLike(shape, strides);
}

/**
 * {@linkcode stridesLike} without its shortcuts: the dims ordered by stride, then compact
 * strides in that order (exported for the test that holds the shortcuts to it).
 */
export function sortedStridesLike(shape: readonly number[], strides: readonly number[]): number[] {
  const order = shape.map((_, i) => i).sort((a, b) => strides[b] - strides[a] || a - b);
  const out = new Array<number>(shape.length);
  let step = 1;
  for (let k = order.length - 1; k >= 0; k--) {
    out[order[k]] = step;
    step *= Math.max(shape[order[k]], 1);
  }
  return out;
}

/**
 * Strides for viewing (shape, strides) as `newShape` without copying, or undefined when
 * the memory layout does not allow it (PyTorch's `view` rule).
 */
export function reshapeStrides(
  shape: readonly number[],
  strides: readonly number[],
  newShape: readonly number[],
): number[] | undefined {
  if (numel(shape) === 0 || isContiguousLayout(shape, strides)) {
    return contiguousStrides(newShape);
  }
  // Walk chunks of old dims that are contiguous among themselves and match them to new dims.
  const newStrides = new Array<number>(newShape.length);
  let viewD = newShape.length - 1;
  let chunkBaseStride = strides[strides.length - 1];
  let tensorNumel = 1;
  let viewNumel = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    tensorNumel *= shape[d];
    if (d === 0 || (shape[d - 1] !== 1 && strides[d - 1] !== tensorNumel * chunkBaseStride)) {
      while (viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] === 1)) {
        newStrides[viewD] = viewNumel * chunkBaseStride;
        viewNumel *= newShape[viewD];
        viewD--;
      }
      if (viewNumel !== tensorNumel) return undefined;
      if (d > 0) {
        chunkBaseStride = strides[d - 1];
        tensorNumel = 1;
        viewNumel = 1;
      }
    }
  }
  return viewD === -1 ? newStrides : undefined;
}

/**
 * Storage index of every element of the view, in logical row-major order.
 * The innermost dimension runs in a tight loop; the others advance like an odometer.
 */
export function forEachStorageIndex(
  shape: readonly number[],
  strides: readonly number[],
  offset: number,
  visit: (storageIndex: number, logicalIndex: number) => void,
): void {
  const rank = shape.length;
  const total = numel(shape);
  if (total === 0) return;
  if (rank === 0) {
    visit(offset, 0);
    return;
  }
  const inner = shape[rank - 1];
  const innerStride = strides[rank - 1];
  const counter = new Array<number>(rank).fill(0);
  let base = offset;
  for (let logical = 0; logical < total; logical += inner) {
    for (let i = 0, p = base; i < inner; i++, p += innerStride) visit(p, logical + i);
    // Advance the outer dims.
    for (let d = rank - 2; d >= 0; d--) {
      counter[d]++;
      base += strides[d];
      if (counter[d] < shape[d]) break;
      base -= strides[d] * shape[d];
      counter[d] = 0;
    }
  }
}

/**
 * Checks a shape: integer dims >= 0, rank <= 8. Returns the problem as text, or undefined.
 */
export function shapeProblem(shape: readonly number[]): string | undefined {
  if (!Array.isArray(shape)) return "shape must be an array of integers";
  if (shape.length > MAX_RANK) return `rank ${shape.length} exceeds the maximum of ${MAX_RANK}`;
  for (let i = 0; i < shape.length; i++) {
    const d = shape[i];
    if (!Number.isSafeInteger(d) || d < 0) return `dimension ${d} is not an integer >= 0`;
  }
  return undefined;
}

/** Formats a shape like `[8, 64, 32, 32]` for messages. */
export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(", ")}]`;
}

/** A copy of `shape` once it is valid; a RangeError naming `where` and the problem otherwise. */
export function checkShape(shape: readonly number[], where: string): number[] {
  const problem = shapeProblem(shape);
  if (problem) throw new RangeError(`${where}: ${problem} (shape ${String(shape)})`);
  return [...shape];
}
