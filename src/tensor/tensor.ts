/**
 * The Tensor: a dtype, a shape, strides and an offset (in elements) over a storage that lives
 * on the host or on an accelerator. Views (permute, transpose, slice, view) share storage.
 *
 * @module
 */

import { readView, writeView } from "./access.ts";
import { type AcceleratorDevice, type Device, deviceName, type DeviceStorage } from "./device.ts";
import {
  allocateHostData,
  type DType,
  dtypeByteSize,
  dtypeOfHostData,
  type HostData,
  isDType,
  numberToBf16,
} from "./dtype.ts";
import {
  contiguousStrides,
  formatShape,
  isContiguousLayout,
  isDenseLayout,
  numel,
  reshapeStrides,
  shapeProblem,
  stridesLike,
  viewSpan,
} from "./layout.ts";
import { Random } from "./random.ts";
import { heapFree, heapFreed } from "./host_heap.ts";
import { trackStorage } from "./scope.ts";

/**
 * New host storage for `length` elements, recorded for the innermost `tidy` scope (zero-filled
 * unless `zeroed` is false).
 */
function newHostData(dtype: DType, length: number, zeroed = true): HostData {
  const data = allocateHostData(dtype, length, zeroed);
  trackStorage(data);
  return data;
}

/** Options of {@linkcode Tensor.random}. */
export interface RandomOptions {
  /** Seed of the generator; equal seeds give equal tensors. Default 1. */
  seed?: number;
  /** Element type. Default `float32`. */
  dtype?: DType;
  /** `uniform` in [low, high) or `normal` with mean `low` and std `high`. Default uniform. */
  distribution?: "uniform" | "normal";
  /** Lower bound (uniform) or mean (normal). Default 0 (uniform -1). */
  low?: number;
  /** Upper bound (uniform) or standard deviation (normal). Default 1. */
  high?: number;
  /** Where to put the tensor. Default `"cpu"`. */
  device?: Device;
}

/** Options of {@linkcode Tensor.fromData}: a strided view over existing storage. */
export interface ViewOptions {
  /** Strides in elements; default row-major contiguous. */
  strides?: readonly number[];
  /** Offset of the first element, in elements; default 0. */
  offset?: number;
}

/** `data`, unless `dispose()` gave its memory back to the host heap (then throws). */
export function liveHostData(data: HostData): HostData {
  if (heapFreed(data)) {
    throw new TypeError("Tensor: its host storage was disposed (dispose() freed its memory)");
  }
  return data;
}

function isHostData(storage: HostData | DeviceStorage): storage is HostData {
  return ArrayBuffer.isView(storage);
}

function checkShape(shape: readonly number[], where: string): number[] {
  const problem = shapeProblem(shape);
  if (problem) throw new RangeError(`${where}: ${problem} (shape ${String(shape)})`);
  return [...shape];
}

/** Allocates device memory and runs `init` on it; the memory goes back if `init` fails. */
function deviceStorage(
  device: AcceleratorDevice,
  byteLength: number,
  init: (storage: DeviceStorage) => void,
): DeviceStorage {
  const storage = device.allocate(byteLength);
  try {
    init(storage);
  } catch (e) {
    storage.release();
    throw e;
  }
  return storage;
}

/**
 * An n-dimensional array (rank 0 to 64; the operators take rank 8 at most) of float32,
 * float16, bfloat16 or int32 elements.
 *
 * @example
 * ```ts
 * import { Tensor } from "@aclnn/norm";
 * const x = Tensor.fromArray([1, 2, 3, 4, 5, 6], [2, 3]);
 * const xt = x.permute([1, 0]);          // a view: no copy
 * console.log(xt.shape, xt.toFloat64Array()); // [3, 2] Float64Array [1, 4, 2, 5, 3, 6]
 * ```
 */
export class Tensor {
  /** Element type. */
  readonly dtype: DType;
  /** Logical shape. */
  readonly shape: readonly number[];
  /** Strides in elements, one per dimension. */
  readonly strides: readonly number[];
  /** Offset of the first element in the storage, in elements. */
  readonly offset: number;
  /**
   * The storage: a host typed array or accelerator memory. Views share it. A large host
   * storage (4 KiB and up) is a block of the host heap, a shared memory that holds many
   * tensors: its `buffer` is the whole heap (use `byteOffset` and `length`), and the block is
   * reused once this typed array is collected, so keep this array (not a `subarray` of it or
   * another view of its buffer) for as long as you use its memory.
   */
  readonly storage: HostData | DeviceStorage;
  /** Brand: only instances made by this constructor have it. */
  readonly #brand = true;

  /**
   * Wraps a storage in a view. Checks that the view fits inside the storage.
   * Most code should use the static constructors instead.
   */
  constructor(
    storage: HostData | DeviceStorage,
    dtype: DType,
    shape: readonly number[],
    strides?: readonly number[],
    offset = 0,
  ) {
    if (!isDType(dtype)) throw new TypeError(`Tensor: unknown dtype ${String(dtype)}`);
    this.shape = Object.freeze(checkShape(shape, "Tensor"));
    const s = strides ? [...strides] : contiguousStrides(this.shape);
    if (s.length !== this.shape.length || s.some((v) => !Number.isSafeInteger(v) || v < 0)) {
      throw new RangeError(
        `Tensor: strides ${formatShape(s)} must be ${this.shape.length} integers >= 0`,
      );
    }
    if (!Number.isSafeInteger(offset) || offset < 0) {
      throw new RangeError(`Tensor: offset ${offset} must be an integer >= 0`);
    }
    const capacity = isHostData(storage)
      ? storage.length
      : Math.floor(storage.byteLength / dtypeByteSize(dtype));
    if (isHostData(storage) && dtypeOfHostData(storage) !== dtype) {
      throw new TypeError(
        `Tensor: storage ${storage.constructor.name} cannot hold dtype ${dtype}`,
      );
    }
    const span = viewSpan(this.shape, s);
    if (span > 0 && offset + span > capacity) {
      throw new RangeError(
        `Tensor: view (shape ${formatShape(this.shape)}, strides ${
          formatShape(s)
        }, offset ${offset}) ` +
          `needs ${offset + span} elements but the storage holds ${capacity}`,
      );
    }
    this.strides = Object.freeze(s);
    this.dtype = dtype;
    this.offset = offset;
    this.storage = storage;
    // A Tensor's geometry never changes: operators rely on it (validation is memoised by
    // identity), so the instance is frozen and untyped code cannot rewrite `offset`.
    Object.freeze(this);
  }

  /**
   * Whether `value` is a Tensor made by this class (not an object that merely inherits its
   * prototype): the operators refuse anything else with 161002.
   *
   * @example
   * ```ts
   * import { Tensor } from "@aclnn/norm";
   * console.log(Tensor.isTensor(Tensor.zeros([2])), Tensor.isTensor(Object.create(Tensor.prototype)));
   * // true false
   * ```
   */
  static isTensor(value: unknown): value is Tensor {
    return typeof value === "object" && value !== null && #brand in value;
  }

  /**
   * Why this view no longer fits its storage (a host buffer that was transferred or
   * detached), or undefined when it does.
   */
  storageProblem(): string | undefined {
    const span = viewSpan(this.shape, this.strides);
    if (span === 0) return undefined;
    const capacity = isHostData(this.storage)
      ? this.storage.length
      : Math.floor(this.storage.byteLength / dtypeByteSize(this.dtype));
    if (this.offset + span <= capacity) return undefined;
    return `view (shape ${formatShape(this.shape)}, strides ${formatShape(this.strides)}, ` +
      `offset ${this.offset}) needs ${this.offset + span} elements but its storage holds ` +
      `${capacity}`;
  }

  /** Makes a tensor from numbers in row-major order, rounding them to `dtype`. */
  static fromArray(
    values: ArrayLike<number>,
    shape: readonly number[],
    dtype: DType = "float32",
  ): Tensor {
    const s = checkShape(shape, "Tensor.fromArray");
    if (values.length !== numel(s)) {
      throw new RangeError(
        `Tensor.fromArray: ${values.length} values do not fill shape ${formatShape(s)} (${
          numel(s)
        } elements)`,
      );
    }
    const t = new Tensor(newHostData(dtype, values.length, false), dtype, s);
    writeView(t.#hostView(), values);
    return t;
  }

  /**
   * Wraps existing host storage without copying. The dtype follows the array type
   * (a Uint16Array holds bfloat16 bit patterns).
   */
  static fromData(data: HostData, shape: readonly number[], options: ViewOptions = {}): Tensor {
    return new Tensor(data, dtypeOfHostData(data), shape, options.strides, options.offset ?? 0);
  }

  /**
   * A zero-filled tensor on `device` (default the host). On an accelerator the memory is set
   * on the device (aclrtMemset), without a host copy.
   */
  static zeros(shape: readonly number[], dtype: DType = "float32", device: Device = "cpu"): Tensor {
    const s = checkShape(shape, "Tensor.zeros");
    if (device === "cpu") return new Tensor(newHostData(dtype, numel(s)), dtype, s);
    const storage = deviceStorage(
      device,
      numel(s) * dtypeByteSize(dtype),
      (m) => device.fill(m, 0),
    );
    return new Tensor(storage, dtype, s);
  }

  /**
   * A zero-filled tensor with the shape of `like` and its memory layout (a channels-last
   * tensor gives a channels-last one, as PyTorch's `zeros_like`), in `dtype` (default
   * `like`'s) on `device` (default `like`'s).
   *
   * @example
   * ```ts
   * import { Tensor } from "@aclnn/norm";
   * const x = Tensor.zeros([2, 3, 4, 5]).permute([0, 2, 3, 1]).permute([0, 3, 1, 2]);
   * console.log(Tensor.zerosLike(x).strides); // [60, 1, 15, 3]: channels-last, like x
   * ```
   */
  static zerosLike(like: Tensor, dtype: DType = like.dtype, device: Device = like.device): Tensor {
    const strides = stridesLike(like.shape, like.strides);
    const n = numel(like.shape);
    if (device === "cpu") {
      return new Tensor(newHostData(dtype, n), dtype, like.shape, strides);
    }
    const storage = deviceStorage(device, n * dtypeByteSize(dtype), (m) => device.fill(m, 0));
    return new Tensor(storage, dtype, like.shape, strides);
  }

  /**
   * A tensor whose contents are unspecified, for storage its first writer overwrites whole (an
   * operator's output): on the host, a reused block of the caching allocator keeps old bytes
   * instead of being zero-filled (fresh memory is zero); on an accelerator it is zero-filled
   * like {@linkcode Tensor.zeros}.
   *
   * @example
   * ```ts
   * import { Tensor } from "@aclnn/norm";
   * const out = Tensor.empty([2, 3]);
   * out.copy_([1, 2, 3, 4, 5, 6]); // every element written before it is read
   * console.log(out.toArray()); // [1, 2, 3, 4, 5, 6]
   * ```
   */
  static empty(shape: readonly number[], dtype: DType = "float32", device: Device = "cpu"): Tensor {
    if (device !== "cpu") return Tensor.zeros(shape, dtype, device);
    const s = checkShape(shape, "Tensor.empty");
    return new Tensor(newHostData(dtype, numel(s), false), dtype, s);
  }

  /**
   * {@linkcode Tensor.empty} with the shape and memory layout of `like` (as
   * {@linkcode Tensor.zerosLike}).
   *
   * @example
   * ```ts
   * import { Tensor } from "@aclnn/norm";
   * const x = Tensor.zeros([2, 3, 4, 5]).permute([0, 2, 3, 1]).permute([0, 3, 1, 2]);
   * console.log(Tensor.emptyLike(x).strides); // [60, 1, 15, 3]
   * ```
   */
  static emptyLike(like: Tensor, dtype: DType = like.dtype, device: Device = like.device): Tensor {
    if (device !== "cpu") return Tensor.zerosLike(like, dtype, device);
    const strides = stridesLike(like.shape, like.strides);
    return new Tensor(newHostData(dtype, numel(like.shape), false), dtype, like.shape, strides);
  }

  /** A tensor filled with `value` (rounded to `dtype`). */
  static full(
    shape: readonly number[],
    value: number,
    dtype: DType = "float32",
    device: Device = "cpu",
  ): Tensor {
    const s = checkShape(shape, "Tensor.full");
    const data = newHostData(dtype, numel(s), false);
    data.fill(dtype === "bfloat16" ? numberToBf16(value) : value);
    const host = new Tensor(data, dtype, s);
    return device === "cpu" ? host : host.to(device);
  }

  /** A tensor of ones. */
  static ones(shape: readonly number[], dtype: DType = "float32", device: Device = "cpu"): Tensor {
    return Tensor.full(shape, 1, dtype, device);
  }

  /** A tensor of seeded random numbers, for tests, benchmarks and demos. */
  static random(shape: readonly number[], options: RandomOptions = {}): Tensor {
    const s = checkShape(shape, "Tensor.random");
    const rng = new Random(options.seed ?? 1);
    const normal = options.distribution === "normal";
    const low = options.low ?? (normal ? 0 : -1);
    const high = options.high ?? 1;
    const values = new Float64Array(numel(s));
    for (let i = 0; i < values.length; i++) {
      values[i] = normal ? low + high * rng.normal() : rng.uniform(low, high);
    }
    const host = Tensor.fromArray(values, s, options.dtype ?? "float32");
    return options.device === undefined || options.device === "cpu"
      ? host
      : host.to(options.device);
  }

  /** Where the storage lives. */
  get device(): Device {
    return isHostData(this.storage) ? "cpu" : this.storage.device;
  }

  /** Number of dimensions. */
  get rank(): number {
    return this.shape.length;
  }

  /** Number of elements. */
  get numel(): number {
    return numel(this.shape);
  }

  /** Whether the view is row-major contiguous. */
  isContiguous(): boolean {
    return isContiguousLayout(this.shape, this.strides);
  }

  /** A view with the dimensions reordered: `dims[i]` is the source of new dimension i. */
  permute(dims: readonly number[]): Tensor {
    const r = this.rank;
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
    return new Tensor(
      this.storage,
      this.dtype,
      dims.map((d) => this.shape[d]),
      dims.map((d) => this.strides[d]),
      this.offset,
    );
  }

  /** A view with two dimensions swapped. */
  transpose(a: number, b: number): Tensor {
    const dims = this.shape.map((_, i) => i);
    if (a < 0 || a >= this.rank || b < 0 || b >= this.rank) {
      throw new RangeError(`transpose: dims ${a}, ${b} out of range for rank ${this.rank}`);
    }
    [dims[a], dims[b]] = [dims[b], dims[a]];
    return this.permute(dims);
  }

  /**
   * A view of `start <= i < end` (step `step`) along `dim`. Negative start/end count from
   * the end, as in Python.
   */
  slice(dim: number, start: number, end: number = this.shape[dim], step = 1): Tensor {
    if (!Number.isInteger(dim) || dim < 0 || dim >= this.rank) {
      throw new RangeError(`slice: dim ${dim} out of range for rank ${this.rank}`);
    }
    if (!Number.isInteger(step) || step < 1) {
      throw new RangeError(`slice: step ${step} must be an integer >= 1`);
    }
    const size = this.shape[dim];
    const clamp = (v: number) => Math.min(Math.max(v < 0 ? v + size : v, 0), size);
    const lo = clamp(start);
    const hi = Math.max(clamp(end), lo);
    const shape = [...this.shape];
    const strides = [...this.strides];
    shape[dim] = Math.ceil((hi - lo) / step);
    strides[dim] = this.strides[dim] * step;
    const offset = shape[dim] === 0 ? this.offset : this.offset + lo * this.strides[dim];
    return new Tensor(this.storage, this.dtype, shape, strides, offset);
  }

  /** A view with a new shape; throws when the strides do not allow it (use reshape). */
  view(shape: readonly number[]): Tensor {
    const s = this.#resolveShape(shape, "view");
    const strides = reshapeStrides(this.shape, this.strides, s);
    if (!strides) {
      throw new RangeError(
        `view: shape ${formatShape(s)} is incompatible with strides ${
          formatShape(this.strides)
        }; use reshape()`,
      );
    }
    return new Tensor(this.storage, this.dtype, s, strides, this.offset);
  }

  /** A view with a new shape when the layout allows it, otherwise a contiguous copy. */
  reshape(shape: readonly number[]): Tensor {
    const s = this.#resolveShape(shape, "reshape");
    const strides = reshapeStrides(this.shape, this.strides, s);
    if (strides) return new Tensor(this.storage, this.dtype, s, strides, this.offset);
    return this.contiguous().view(s);
  }

  /** This tensor if it is contiguous, otherwise a contiguous copy on the same device. */
  contiguous(): Tensor {
    if (this.isContiguous()) return this;
    return this.clone();
  }

  /** A contiguous copy on the same device. */
  clone(): Tensor {
    const host = Tensor.fromArray(this.toFloat64Array(), this.shape, this.dtype);
    return this.device === "cpu" ? host : host.to(this.device);
  }

  /**
   * A copy on `device` (this tensor itself when it is already there). Strides are kept
   * (a channels-last tensor stays channels-last); only the span the view touches is copied.
   */
  to(device: Device): Tensor {
    if (device === this.device) return this;
    if (device !== "cpu" && this.device !== "cpu") return this.to("cpu").to(device);
    const elementBytes = dtypeByteSize(this.dtype);
    if (device === "cpu") {
      // Download the span the view touches and keep its strides: no recursion through
      // contiguous(), which would itself need the host copy.
      const storage = this.storage as DeviceStorage;
      const span = viewSpan(this.shape, this.strides);
      const data = newHostData(this.dtype, span, false);
      if (span > 0) {
        const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
        storage.device.download(storage, bytes, this.offset * elementBytes);
      }
      return new Tensor(data, this.dtype, this.shape, this.strides, 0);
    }
    const source = isDenseLayout(this.shape, this.strides) ? this : this.contiguous();
    const span = viewSpan(source.shape, source.strides);
    const host = liveHostData(source.storage as HostData);
    const target = device as AcceleratorDevice;
    const storage = deviceStorage(target, span * elementBytes, (m) => {
      if (span === 0) return;
      const bytes = new Uint8Array(
        host.buffer,
        host.byteOffset + source.offset * elementBytes,
        span * elementBytes,
      );
      target.upload(m, bytes, 0);
    });
    return new Tensor(storage, this.dtype, source.shape, source.strides, 0);
  }

  /** The elements as float64, in logical row-major order of this view. */
  toFloat64Array(): Float64Array {
    if (this.device !== "cpu") return this.to("cpu").toFloat64Array();
    return readView(this.#hostView());
  }

  /** The elements as a plain array, in logical row-major order. */
  toArray(): number[] {
    return Array.from(this.toFloat64Array());
  }

  /** The only element of a one-element tensor. */
  item(): number {
    if (this.numel !== 1) throw new RangeError(`item: tensor has ${this.numel} elements`);
    return this.toFloat64Array()[0];
  }

  /**
   * Copies `values` (logical row-major order, or a tensor of the same shape) into this view,
   * rounding to its dtype. Works on host and device tensors.
   */
  copy_(values: ArrayLike<number> | Tensor): this {
    const source = values instanceof Tensor ? values.toFloat64Array() : values;
    if (values instanceof Tensor && values.shape.join() !== this.shape.join()) {
      throw new RangeError(
        `copy_: source shape ${formatShape(values.shape)} differs from ${formatShape(this.shape)}`,
      );
    }
    if (this.device === "cpu") {
      writeView(this.#hostView(), source);
      return this;
    }
    if (this.numel === 0) {
      if (source.length !== 0) {
        throw new RangeError(`copy_: ${source.length} values for a view of 0 elements`);
      }
      return this;
    }
    // Device view: read its span, patch it on the host, write it back.
    const elementBytes = dtypeByteSize(this.dtype);
    const span = viewSpan(this.shape, this.strides);
    const storage = this.storage as DeviceStorage;
    const data = newHostData(this.dtype, span, false);
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    storage.device.download(storage, bytes, this.offset * elementBytes);
    writeView({ ...this.#plainView(), offset: 0, data }, source);
    storage.device.upload(storage, bytes, this.offset * elementBytes);
    return this;
  }

  /**
   * Frees the memory of this tensor's storage now (every view of it becomes unusable): device
   * memory, or a large host tensor's block of the host heap (4 KiB and up; see
   * `hostHeapUsage`). Does nothing for other host tensors, whose memory the garbage
   * collector owns.
   */
  dispose(): void {
    if (!isHostData(this.storage)) this.storage.release();
    else heapFree(this.storage);
  }

  /** Same as {@linkcode Tensor.dispose}, for `using` declarations. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  /** A short description such as `Tensor<float32>[2, 3] on cpu`. */
  toString(): string {
    return `Tensor<${this.dtype}>${formatShape(this.shape)} on ${deviceName(this.device)}`;
  }

  #plainView() {
    return { dtype: this.dtype, shape: this.shape, strides: this.strides, offset: this.offset };
  }

  #hostView() {
    return { ...this.#plainView(), data: liveHostData(this.storage as HostData) };
  }

  #resolveShape(shape: readonly number[], where: string): number[] {
    const inferred = shape.indexOf(-1);
    let s = [...shape];
    if (inferred >= 0) {
      const known = numel(s.filter((_, i) => i !== inferred));
      s[inferred] = known === 0 ? 0 : this.numel / known;
    }
    s = checkShape(s, where);
    if (numel(s) !== this.numel) {
      throw new RangeError(
        `${where}: shape ${formatShape(shape)} does not hold ${this.numel} elements`,
      );
    }
    return s;
  }
}
