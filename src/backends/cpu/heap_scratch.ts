/**
 * Scratch tensors of the CPU kernels in the host heap, and raw copies between them and the
 * caller's tensors (any strides): what the row norms (rows/row_staging.ts) and the BatchNorm
 * family (fast/staging.ts) stage a call's tensors through, so that their WebAssembly kernels
 * run on every call in place. Scratch blocks may take the heap past its maximum for the
 * duration of a call (src/tensor/host_heap.ts heapScratch); a call that cannot get one is an
 * AclError 207001 naming the shape and the bytes.
 *
 * @module
 */

import type { DType, HostData } from "../../tensor/dtype.ts";
import { Tensor } from "../../tensor/tensor.ts";
import { heapScratch } from "../../tensor/host_heap.ts";
import { hostAllocationError } from "../../tensor/host_errors.ts";

/**
 * A dense tensor of `shape` in `dtype` on a scratch block of the heap (contents undefined;
 * `dispose()` gives the block back), row-major or with `strides` (a dense order, e.g.
 * channels-last: tensor/layout.ts stridesLike). `what` names it in an allocation error.
 */
export function heapScratchTensor(
  shape: readonly number[],
  dtype: DType,
  what: string,
  strides?: readonly number[],
): Tensor {
  const length = shape.reduce((a, b) => a * b, 1);
  const bytes = length * (dtype === "float32" || dtype === "int32" ? 4 : 2);
  const block = heapScratch(bytes);
  if (!block) throw hostAllocationError(what, shape, dtype, bytes);
  const { buffer, at } = block;
  const data: HostData = dtype === "float32"
    ? new Float32Array(buffer, at, length)
    : dtype === "float16"
    ? new Float16Array(buffer, at, length)
    : dtype === "int32"
    ? new Int32Array(buffer, at, length)
    : new Uint16Array(buffer, at, length);
  block.adopt(data);
  return Tensor.fromData(data, shape, strides ? { strides } : {});
}

/** The host storage of `t`. */
function hostData(t: Tensor): HostData {
  return t.storage as HostData;
}

/** The raw elements of a host array: float32 and int32 as 32-bit words, 16-bit types as bits. */
export function rawOf(data: HostData): Float32Array | Uint16Array | Int32Array {
  if (data instanceof Float32Array || data instanceof Uint16Array) return data;
  if (data instanceof Int32Array) return data;
  return new Uint16Array(data.buffer, data.byteOffset, data.length);
}

/**
 * Copies the elements of `src` into `dst` (same shape and element type, any strides), raw,
 * walking `dst`'s memory order so that runs contiguous in both go through `set`.
 */
function copyRaw(dst: Tensor, src: Tensor): void {
  if (dst.numel === 0) return;
  // Dims in dst's memory order (largest stride first), size-1 dims dropped.
  const dims = dst.shape.map((_, i) => i).filter((i) => dst.shape[i] !== 1)
    .sort((a, b) => dst.strides[b] - dst.strides[a] || a - b);
  const d = rawOf(hostData(dst));
  const s = rawOf(hostData(src));
  if (dims.length === 0) {
    d[dst.offset] = s[src.offset];
    return;
  }
  const last = dims[dims.length - 1];
  const outer = dims.slice(0, -1);
  const inner = dst.shape[last];
  const [ds, ss] = [dst.strides[last], src.strides[last]];
  const index = new Array<number>(outer.length).fill(0);
  let [dBase, sBase] = [dst.offset, src.offset];
  for (let done = 0; done < dst.numel; done += inner) {
    if (ds === 1 && ss === 1) d.set(s.subarray(sBase, sBase + inner), dBase);
    else for (let i = 0; i < inner; i++) d[dBase + i * ds] = s[sBase + i * ss];
    for (let k = outer.length - 1; k >= 0; k--) {
      const dim = outer[k];
      dBase += dst.strides[dim];
      sBase += src.strides[dim];
      if (++index[k] < dst.shape[dim]) break;
      dBase -= dst.strides[dim] * dst.shape[dim];
      sBase -= src.strides[dim] * src.shape[dim];
      index[k] = 0;
    }
  }
}

/** Copies `src` into `dst` (a scratch tensor), raw when their dtypes agree. */
export function stageInto(dst: Tensor, src: Tensor): void {
  if (dst.dtype === src.dtype) copyRaw(dst, src);
  else dst.copy_(src);
}

/** Copies `src` (a scratch tensor) into `dst`, rounding once to its dtype. */
export function stageOut(dst: Tensor, src: Tensor): void {
  if (dst.dtype === src.dtype) copyRaw(dst, src);
  else dst.copy_(src);
}
