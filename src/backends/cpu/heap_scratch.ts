/**
 * Scratch tensors of the CPU kernels in the host heap, and raw copies between them and the
 * caller's tensors (any strides): what the row norms (rows/row_staging.ts) and the BatchNorm
 * family (channels/staging.ts) stage a call's tensors through, so that their WebAssembly kernels
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
 * walking `dst`'s memory order with the dims that both walk contiguously merged, so that a
 * dense tensor copies in one `set` and a channels-last one in runs of its pixels.
 */
function copyRaw(dst: Tensor, src: Tensor): void {
  const total = dst.numel;
  if (total === 0) return;
  const d = rawOf(hostData(dst));
  const s = rawOf(hostData(src));
  // Dims in dst's memory order (largest stride first), size-1 dims dropped, then merged
  // wherever the next inner dim continues both tensors' runs.
  const order = dst.shape.map((_, i) => i).filter((i) => dst.shape[i] !== 1)
    .sort((a, b) => dst.strides[b] - dst.strides[a] || a - b);
  const sizes: number[] = [];
  const ds: number[] = [];
  const ss: number[] = [];
  for (const dim of order) {
    const k = sizes.length - 1;
    const [size, dStride, sStride] = [dst.shape[dim], dst.strides[dim], src.strides[dim]];
    if (k >= 0 && ds[k] === dStride * size && ss[k] === sStride * size) {
      sizes[k] *= size;
      ds[k] = dStride;
      ss[k] = sStride;
    } else {
      sizes.push(size);
      ds.push(dStride);
      ss.push(sStride);
    }
  }
  if (sizes.length === 0) {
    d[dst.offset] = s[src.offset];
    return;
  }
  const last = sizes.length - 1;
  const inner = sizes[last];
  const [di, si] = [ds[last], ss[last]];
  const index = new Array<number>(last).fill(0);
  let [dBase, sBase] = [dst.offset, src.offset];
  for (let done = 0; done < total; done += inner) {
    if (di === 1 && si === 1) d.set(s.subarray(sBase, sBase + inner), dBase);
    else for (let i = 0; i < inner; i++) d[dBase + i * di] = s[sBase + i * si];
    for (let k = last - 1; k >= 0; k--) {
      dBase += ds[k];
      sBase += ss[k];
      if (++index[k] < sizes[k]) break;
      dBase -= ds[k] * sizes[k];
      sBase -= ss[k] * sizes[k];
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
