/**
 * Element types: names, byte sizes, ACL codes and the float conversions
 * (float64 -> float16 / bfloat16 with round-to-nearest-even).
 *
 * @module
 */

import { heapAllocate } from "./host_heap.ts";
import { hostAllocationError } from "./host_errors.ts";
import { storageSlab } from "./slab.ts";
/** Element type of a {@linkcode Tensor}. `int32` exists for counts (SyncBatchNorm). */
export type DType = "float32" | "float16" | "bfloat16" | "int32";

/** The floating-point element types every normalization operator accepts. */
export const FLOAT_DTYPES: readonly DType[] = ["float32", "float16", "bfloat16"];

/** Every element type this package knows. */
export const ALL_DTYPES: readonly DType[] = ["float32", "float16", "bfloat16", "int32"];

/**
 * Host storage of one dtype: float32 -> Float32Array, float16 -> Float16Array,
 * bfloat16 -> Uint16Array of bit patterns, int32 -> Int32Array.
 */
export type HostData = Float32Array | Float16Array | Uint16Array | Int32Array;

/**
 * Size of one element in bytes.
 *
 * @example
 * ```ts
 * import { dtypeByteSize } from "@aclnn/norm";
 * console.log(dtypeByteSize("float32"), dtypeByteSize("bfloat16")); // 4 2
 * ```
 */
export function dtypeByteSize(dtype: DType): number {
  return dtype === "float32" || dtype === "int32" ? 4 : 2;
}

/** The aclDataType enum value of a dtype (FLOAT=0, FLOAT16=1, INT32=3, BF16=27). */
export function aclDataType(dtype: DType): number {
  switch (dtype) {
    case "float32":
      return 0;
    case "float16":
      return 1;
    case "int32":
      return 3;
    case "bfloat16":
      return 27;
  }
}

/** Whether a value names a known dtype (for arguments coming from untyped JavaScript). */
export function isDType(value: unknown): value is DType {
  return typeof value === "string" && (ALL_DTYPES as readonly string[]).includes(value);
}

/**
 * The error for a value that names no dtype: the value as written (a string quoted, an object
 * as JSON), a hint when it is an object holding a dtype (the tensor factories take the dtype
 * itself: `Tensor.zeros(shape, "int32")`), and the dtypes there are.
 */
export function unknownDTypeError(where: string, value: unknown): TypeError {
  let shown: string;
  try {
    shown = typeof value === "string" || (typeof value === "object" && value !== null)
      ? JSON.stringify(value)
      : String(value);
  } catch {
    shown = Object.prototype.toString.call(value); // an object JSON cannot write (a bigint in it)
  }
  const inner = (value as { dtype?: unknown } | null)?.dtype;
  const hint = typeof value === "object" && isDType(inner)
    ? ` (pass the dtype itself, "${inner}", not an object holding it)`
    : "";
  const names = ALL_DTYPES.map((d) => `"${d}"`).join(", ");
  return new TypeError(`${where}: unknown dtype ${shown}${hint}; the dtypes are ${names}`);
}

/**
 * Host storage of at least this many bytes lives in the host heap when it has room, so that
 * the CPU backend's WebAssembly kernels work on it in place. Smaller tensors stay on a plain
 * ArrayBuffer (a slab up to 1 KiB: see slab.ts). At 4 KiB the kernels run in place on small
 * tensors too; bench/RESULTS.md, "Why the constants are what they are", has the figures.
 */
export const HEAP_HOST_BYTES = 1 << 12;

/**
 * Host storage of at least this many bytes that gets a buffer of its own (the heap full or
 * off) gets a SharedArrayBuffer, so that the CPU backend's worker threads can share it; a
 * smaller one an ArrayBuffer (the pool shares work only from 64K elements, 128 KiB of
 * float16), which is cheaper to allocate below 64 KiB; kernels run as fast on either kind
 * (bench/RESULTS.md, "Why the constants are what they are";
 * `deno bench --allow-read bench/host_alloc.bench.ts`).
 */
export const SHARED_HOST_BYTES = 1 << 16;

/**
 * A zero-filled buffer of its own of `bytes` bytes: shared from {@linkcode SHARED_HOST_BYTES}
 * up (see {@linkcode allocateHostData}, which tries the host heap first).
 */
export function allocateHostBuffer(bytes: number): ArrayBuffer | SharedArrayBuffer {
  return bytes >= SHARED_HOST_BYTES ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes);
}

/** The typed array of `dtype` over `length` elements of `buffer` from byte `at`. */
function hostArray(
  dtype: DType,
  buffer: ArrayBufferLike,
  at: number,
  length: number,
): HostData {
  switch (dtype) {
    case "float32":
      return new Float32Array(buffer, at, length);
    case "float16":
      return new Float16Array(buffer, at, length);
    case "bfloat16":
      return new Uint16Array(buffer, at, length);
    case "int32":
      return new Int32Array(buffer, at, length);
  }
}

/**
 * Allocates host storage for `length` elements of `dtype`: from {@linkcode HEAP_HOST_BYTES}
 * bytes up in the host heap (host_heap.ts, where the CPU backend's WebAssembly kernels work in
 * place), or on a buffer of its own when the heap is full or unavailable
 * ({@linkcode allocateHostBuffer}); smaller storage on an ArrayBuffer (up to 1 KiB, a view of
 * a shared slab: see slab.ts). Zero-filled unless `zeroed` is false, for storage that its
 * writer overwrites whole: a reused heap block then keeps old bytes (other storage is fresh,
 * hence zero, either way). A buffer that cannot be made (larger than the machine or V8 allows)
 * is AclError 207001 naming `shape` (default `[length]`) and the bytes.
 */
export function allocateHostData(
  dtype: DType,
  length: number,
  zeroed = true,
  shape: readonly number[] = [length],
): HostData {
  const bytes = length * dtypeByteSize(dtype);
  const block = bytes >= HEAP_HOST_BYTES ? heapAllocate(bytes, zeroed) : undefined;
  const range = block ? undefined : storageSlab.take(bytes);
  const at = block?.at ?? range?.[1] ?? 0;
  let data: HostData;
  try {
    const buffer = block?.buffer ?? range?.[0] ?? allocateHostBuffer(bytes);
    data = hostArray(dtype, buffer, at, length);
  } catch (e) {
    // V8's RangeError ("Array buffer allocation failed", "Invalid array buffer length").
    if (e instanceof RangeError) throw hostAllocationError("a tensor", shape, dtype, bytes);
    throw e;
  }
  block?.adopt(data);
  return data;
}

/**
 * The dtype that a host typed array stores (Uint16Array is read as bfloat16 bit patterns).
 * Throws a TypeError for any other array (e.g. a Float64Array from untyped JavaScript).
 */
export function dtypeOfHostData(data: HostData): DType {
  if (data instanceof Float32Array) return "float32";
  if (data instanceof Float16Array) return "float16";
  if (data instanceof Int32Array) return "int32";
  if (data instanceof Uint16Array) return "bfloat16";
  // Untyped callers can pass any typed array; never reinterpret it as bfloat16 bits.
  const name = (data as ArrayBufferView).constructor.name;
  throw new TypeError(
    `${name} is not tensor storage (Float32Array, Float16Array, Uint16Array for bfloat16, ` +
      `Int32Array)`,
  );
}

// Scratch views for bit-level float32 conversions (bfloat16 is the top half of a float32).
const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);

/**
 * Converts a bfloat16 bit pattern to its value.
 *
 * @example
 * ```ts
 * import { bf16ToNumber } from "@aclnn/norm";
 * console.log(bf16ToNumber(0x3fc0)); // 1.5
 * ```
 */
export function bf16ToNumber(bits: number): number {
  scratchU32[0] = bits << 16;
  return scratchF32[0];
}

/**
 * Rounds a number to the nearest bfloat16 (ties to even) and returns its bit pattern.
 *
 * @example
 * ```ts
 * import { bf16ToNumber, numberToBf16 } from "@aclnn/norm";
 * const bits = numberToBf16(Math.PI);
 * console.log(bits.toString(16), bf16ToNumber(bits)); // 4049 3.140625
 * ```
 *
 * NaN stays a quiet NaN with its sign. The float64 -> float32 step uses round-to-odd so that
 * the second rounding to bfloat16 is exact (no double-rounding error).
 */
export function numberToBf16(value: number): number {
  if (Number.isNaN(value)) {
    scratchF32[0] = value;
    return ((scratchU32[0] >>> 16) | 0x0040) & 0xffff;
  }
  scratchF32[0] = value;
  let bits = scratchU32[0];
  const rounded = scratchF32[0];
  if (rounded !== value && Number.isFinite(value)) {
    // Round-to-odd: truncate toward zero, then set the sticky bit.
    if (Math.abs(rounded) > Math.abs(value)) bits = (bits - 1) >>> 0;
    bits = (bits | 1) >>> 0;
  }
  const lsb = (bits >>> 16) & 1;
  return ((bits + 0x7fff + lsb) >>> 16) & 0xffff;
}

/**
 * Rounds a float64 to the value that `dtype` would store.
 *
 * @example
 * ```ts
 * import { roundToDType } from "@aclnn/norm";
 * console.log(roundToDType(0.1, "float16"), roundToDType(0.1, "bfloat16")); // 0.0999755859375 0.10009765625
 * ```
 */
export function roundToDType(value: number, dtype: DType): number {
  switch (dtype) {
    case "float32":
      return Math.fround(value);
    case "float16":
      return Math.f16round(value);
    case "bfloat16":
      return bf16ToNumber(numberToBf16(value));
    case "int32":
      return value | 0;
  }
}
