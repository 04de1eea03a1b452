/**
 * Reading and writing the small per-channel tensors (weights, statistics, sums) as float64.
 * Calls on small data tensors spend much of their time here, so contiguous float32 and
 * float16 views, the common case, take a direct loop instead of the generic gather of
 * `Tensor.toFloat64Array` / `Tensor.copy_` (which remain the path for everything else).
 *
 * @module
 */

import type { Tensor } from "../../../tensor/tensor.ts";
import { hostData } from "./tensor_arrays.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";

/** Whether `t` is a dense run of its elements from its offset (any rank). */
function isRun(t: Tensor): boolean {
  let expected = 1;
  for (let i = t.shape.length - 1; i >= 0; i--) {
    if (t.shape[i] === 1) continue;
    if (t.strides[i] !== expected) return false;
    expected *= t.shape[i];
  }
  return true;
}

/** The elements of `t` as float64, in logical order. */
export function channelValues(t: Tensor): Float64Array {
  const dense = denseChannels(t);
  if (!dense) return t.toFloat64Array();
  const out = temporaryFloat64(dense.length);
  for (let i = 0; i < dense.length; i++) out[i] = dense[i];
  return out;
}

/** Per-channel values to read, never to write: float64, or a float32 tensor's own storage. */
export type ReadValues = Float64Array | Float32Array;

/**
 * The elements of `t` in logical order, to read only: a view of its storage when it is a dense
 * float32 run (no copy: writing the view would write the tensor), else
 * {@linkcode channelValues}'s float64 copy.
 */
export function channelValuesView(t: Tensor): ReadValues {
  const dense = denseChannels(t);
  return dense instanceof Float32Array ? dense : channelValues(t);
}

/** {@linkcode channelValuesView} of `t`, or `length` copies of `fill` when it is absent. */
export function channelValuesViewOr(
  t: Tensor | undefined,
  length: number,
  fill: number,
): ReadValues {
  return t ? channelValuesView(t) : temporaryFloat64(length).fill(fill);
}

/**
 * `f` of each value (and its channel), as a new float64 temporary: what `values.map(f)`
 * gives, without allocating a typed array of its own (see slab.ts).
 */
export function mapValues(
  values: Float64Array,
  f: (value: number, channel: number) => number,
): Float64Array {
  const out = temporaryFloat64(values.length);
  for (let c = 0; c < values.length; c++) out[c] = f(values[c], c);
  return out;
}

/** invstd = 1 / sqrt(variance + eps), element by element (a new float64 temporary). */
export function invstdOf(variance: Float64Array, eps: number): Float64Array {
  return mapValues(variance, (v) => 1 / Math.sqrt(v + eps));
}

/** The elements of `t` as float64, or `length` copies of `fill` when it is absent. */
export function channelValuesOr(t: Tensor | undefined, length: number, fill: number): Float64Array {
  return t ? channelValues(t) : temporaryFloat64(length).fill(fill);
}

/**
 * `t`'s elements as a view of its storage in logical order, to write in place, when it is a
 * dense float32 or float16 run; else undefined (write it with `Tensor.copy_`).
 */
export function denseChannels(t: Tensor): Float32Array | Float16Array | undefined {
  if ((t.dtype !== "float32" && t.dtype !== "float16") || !isRun(t)) return undefined;
  const target = hostData(t) as Float32Array | Float16Array;
  return target.subarray(t.offset, t.offset + t.numel);
}

/** Writes `values` (logical order) into `t`, rounding each once to its dtype. */
export function writeChannelValues(t: Tensor, values: Float64Array | Float32Array): void {
  const dense = denseChannels(t);
  if (dense) dense.set(values);
  else t.copy_(values);
}
