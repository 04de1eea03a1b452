/**
 * When an output shares memory with an input, the streaming kernels are correct only if each
 * output element is the same memory as the input element it is computed from (in-place, same
 * layout), or if the two views do not overlap at all: they read element j and write element
 * j in one pass, so any other overlap would let a write reach an element before it is read.
 * Such outputs, and outputs that write one element twice (a zero stride), are computed into a
 * scratch output and copied (staging.ts).
 *
 * @module
 */

import { dtypeByteSize } from "../../../tensor/dtype.ts";
import { viewSpan } from "../../../tensor/layout.ts";
import type { Tensor } from "../../../tensor/tensor.ts";
import { hostData } from "../tensors/tensor_arrays.ts";

/** Byte range [start, end) a host view touches in its buffer. */
function byteRange(t: Tensor): [number, number] {
  const data = hostData(t);
  const size = dtypeByteSize(t.dtype);
  const start = data.byteOffset + t.offset * size;
  return [start, start + viewSpan(t.shape, t.strides) * size];
}

/** Whether `a` and `b` address the same memory element for element. */
function sameElements(a: Tensor, b: Tensor): boolean {
  if (a.dtype !== b.dtype || a.shape.length !== b.shape.length) return false;
  if (byteRange(a)[0] !== byteRange(b)[0]) return false;
  return a.shape.every((d, i) => d === b.shape[i] && (d === 1 || a.strides[i] === b.strides[i]));
}

/** Whether an output writes some memory element twice (a zero stride over a real dim). */
export function writesTwice(t: Tensor): boolean {
  return t.shape.some((d, i) => d > 1 && t.strides[i] === 0);
}

/** Whether `output` overlaps some input other than element for element. */
export function overlapsInputs(output: Tensor, inputs: readonly Tensor[]): boolean {
  const buffer = hostData(output).buffer;
  const [start, end] = byteRange(output);
  for (const input of inputs) {
    if (hostData(input).buffer !== buffer || sameElements(output, input)) continue;
    const [s, e] = byteRange(input);
    if (s < end && start < e) return true;
  }
  return false;
}

/**
 * Element indices the kernels compute in int32 arithmetic (`| 0` keeps V8's index math in
 * integer registers); tensors on larger storages are copied into scratch tensors first
 * (staging.ts).
 */
export const MAX_STORAGE_ELEMENTS = 2 ** 31 - 1;

/** Whether the kernels can index `t`'s storage with int32 arithmetic. */
export function indexable(t: Tensor): boolean {
  return hostData(t).length <= MAX_STORAGE_ELEMENTS;
}

/**
 * Whether the streaming kernels may write `output` while reading `inputs`: every tensor has one
 * dtype (a kernel decodes all its streams with one codec), every storage is small enough for
 * int32 element indices, and the output overlaps no input other than element for element.
 * Calls that fail this run on scratch copies (staging.ts).
 */
export function streamable(output: Tensor | undefined, inputs: readonly Tensor[]): boolean {
  const all = output ? [...inputs, output] : inputs;
  if (all.some((t) => t.dtype !== all[0].dtype)) return false;
  if (!all.every(indexable)) return false;
  if (!output) return true;
  return !writesTwice(output) && !overlapsInputs(output, inputs);
}
