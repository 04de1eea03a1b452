/**
 * Memory overlap between tensors, as PyTorch judges it before writing (`has_internal_overlap`,
 * `get_overlap_status` in ATen's MemoryOverlap.cpp): an output whose own elements share memory
 * (a stride 0 on an expanded view), or that shares memory with another output or with an
 * input, would give silently wrong results, so the operators refuse it with 161002, except
 * the exact in-place uses an operator documents.
 *
 * @module
 */

import type { DeviceStorage } from "../tensor/device.ts";
import { dtypeByteSize, type HostData } from "../tensor/dtype.ts";
import { viewSpan } from "../tensor/layout.ts";
import type { Tensor } from "../tensor/tensor.ts";

/** The memory a view touches: its buffer and the byte range within it. */
interface Extent {
  readonly buffer: ArrayBufferLike | DeviceStorage;
  readonly begin: number;
  readonly end: number;
}

function extent(t: Tensor): Extent | undefined {
  const span = viewSpan(t.shape, t.strides);
  if (span === 0) return undefined;
  const size = dtypeByteSize(t.dtype);
  const storage = t.storage;
  if (ArrayBuffer.isView(storage)) {
    const host = storage as HostData;
    const begin = host.byteOffset + t.offset * size;
    return { buffer: host.buffer, begin, end: begin + span * size };
  }
  const begin = t.offset * size;
  return { buffer: storage, begin, end: begin + span * size };
}

/** Whether the two views are the very same view (same memory, dtype, shape and strides). */
export function sameView(a: Tensor, b: Tensor): boolean {
  const ea = extent(a);
  const eb = extent(b);
  if (ea === undefined || eb === undefined) return false;
  return ea.buffer === eb.buffer && ea.begin === eb.begin && a.dtype === b.dtype &&
    a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]) &&
    a.strides.every((s, i) => b.shape[i] <= 1 || s === b.strides[i]);
}

/** Whether the memory ranges of two views intersect (PyTorch: FULL or PARTIAL overlap). */
export function overlaps(a: Tensor, b: Tensor): boolean {
  const ea = extent(a);
  const eb = extent(b);
  if (ea === undefined || eb === undefined || ea.buffer !== eb.buffer) return false;
  return ea.begin < eb.end && eb.begin < ea.end;
}

/** Element offsets above which the exact overlap test is not attempted. */
const EXACT_LIMIT = 1 << 16;

/**
 * Whether two elements of the view share memory. A stride 0 on a dimension of size > 1 always
 * does; a view whose dimensions, sorted by stride, each step past everything before them never
 * does; anything else is settled by listing the offsets when there are few enough (larger
 * ones are allowed, as PyTorch allows its TOO_HARD case).
 */
export function hasInternalOverlap(t: Tensor): boolean {
  const dims: [number, number][] = [];
  for (let i = 0; i < t.shape.length; i++) {
    if (t.shape[i] === 0) return false;
    if (t.shape[i] > 1) {
      if (t.strides[i] === 0) return true;
      dims.push([t.shape[i], t.strides[i]]);
    }
  }
  dims.sort((a, b) => a[1] - b[1]);
  let reach = 0; // largest offset reachable with the dims seen so far
  let separable = true;
  for (const [size, stride] of dims) {
    if (stride <= reach) {
      separable = false;
      break;
    }
    reach += (size - 1) * stride;
  }
  if (separable) return false;
  const count = dims.reduce((n, [size]) => n * size, 1);
  if (count > EXACT_LIMIT) return false;
  const seen = new Set<number>();
  const walk = (d: number, base: number): boolean => {
    if (d === dims.length) {
      if (seen.has(base)) return true;
      seen.add(base);
      return false;
    }
    const [size, stride] = dims[d];
    for (let i = 0; i < size; i++) if (walk(d + 1, base + i * stride)) return true;
    return false;
  };
  return walk(0, 0);
}
