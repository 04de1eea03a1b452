/**
 * The typed arrays the kernels read and write for a tensor: float32 data as its
 * Float32Array, float16 data read as the Uint16Array bits of the same memory (decoded by
 * table, faster than Float16Array reads in V8) and written through its Float16Array,
 * bfloat16 data as its Uint16Array. Element indices are the tensor's own (offset, strides).
 *
 * @module
 */

import type { DType, HostData } from "../../../tensor/dtype.ts";
import type { Tensor } from "../../../tensor/tensor.ts";
import type { DataCode, ReadArray, WriteArray } from "../kernels/stage_types.ts";
import { BFLOAT16, FLOAT16, FLOAT32 } from "../kernels/stage_types.ts";

const bitsViews = new WeakMap<Float16Array, Uint16Array>();

/** The storage of a host tensor. */
export function hostData(t: Tensor): HostData {
  return t.storage as HostData;
}

/** The kernel code of a floating-point dtype. */
export function dataCode(dtype: DType): DataCode {
  return dtype === "float16" ? FLOAT16 : dtype === "bfloat16" ? BFLOAT16 : FLOAT32;
}

/** The array kernels read `t` through. */
export function readArray(t: Tensor): ReadArray {
  const data = hostData(t);
  if (!(data instanceof Float16Array)) return data as Float32Array | Uint16Array;
  let bits = bitsViews.get(data);
  if (!bits) {
    bits = new Uint16Array(data.buffer, data.byteOffset, data.length);
    bitsViews.set(data, bits);
  }
  return bits;
}

/** The array kernels write `t` through. */
export function writeArray(t: Tensor): WriteArray {
  return hostData(t) as WriteArray;
}

/** Whether the tensor's memory can be shared with workers. */
export function isShared(t: Tensor): boolean {
  return hostData(t).buffer instanceof SharedArrayBuffer;
}
