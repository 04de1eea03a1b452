/**
 * The Tensor: a dtype, a shape, strides and an offset (in elements) over a storage that lives
 * on the host or on an accelerator. Views (permute, transpose, slice, view) share storage.
 *
 * @module
 */

import { readView, writeRun, writeView } from "./access.ts";
import { type Device, deviceName, type DeviceStorage } from "./device.ts";
import {
  type DType,
  dtypeOfHostData,
  type HostData,
  isDType,
  numberToBf16,
  unknownDTypeError,
} from "./dtype.ts";
import {
  checkShape,
  contiguousStrides,
  formatShape,
  isContiguousLayout,
  isDenseLayout,
  numel,
  reshapeStrides,
  stridesLike,
  viewSpan,
} from "./layout.ts";
import { type RandomOptions, randomStream } from "./random.ts";
import { heapFree } from "./host_heap.ts";
import {
  checkAccelerator,
  disposedError,
  downloadSpan,
  isHostData,
  newHostData,
  storageCapacity,
  storageDisposed,
  uploadSpan,
  uploadToDevice,
  zeroedDeviceStorage,
} from "./storage.ts";
import {
  checkValues,
  overrunProblem,
  permutePlacement,
  resolveShape,
  slicePlacement,
  swapDims,
} from "./views.ts";

export type { RandomOptions };

/** Numbers drawn at a time by `Tensor.random` (128 KiB of float64). */
const RANDOM_CHUNK = 16384;

/** Options of {@linkcode Tensor.fromData}: a strided view over existing storage. */
export interface ViewOptions {
  /** Strides in elements; default row-major contiguous. */
  strides?: readonly number[];
  /** Offset of the first element, in elements; default 0. */
  offset?: number;
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
 * console.log(xt.shape, xt.toFloat64Array()); // [3, 2] Float64Array(6) [1, 4, 2, 5, 3, 6]
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
  /** Number of elements (the shape's product, kept: operators ask for it many times a call). */
  readonly #numel: number;

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
    if (!isDType(dtype)) throw unknownDTypeError("Tensor", dtype);
    this.shape = Object.freeze(checkShape(shape, "Tensor"));
    // The checks stay inline: every view and every operator output is made here.
    const s = strides ? [...strides] : contiguousStrides(this.shape);
    let stridesOk = s.length === this.shape.length;
    for (let i = 0; stridesOk && i < s.length; i++) {
      stridesOk = Number.isSafeInteger(s[i]) && s[i] >= 0;
    }
    if (!stridesOk) {
      throw new RangeError(
        `Tensor: strides ${formatShape(s)} must be ${this.shape.length} integers >= 0`,
      );
    }
    if (!Number.isSafeInteger(offset) || offset < 0) {
      throw new RangeError(`Tensor: offset ${offset} must be an integer >= 0`);
    }
    if (isHostData(storage) && dtypeOfHostData(storage) !== dtype) {
      throw new TypeError(
        `Tensor: storage ${storage.constructor.name} cannot hold dtype ${dtype}`,
      );
    }
    const capacity = storageCapacity(storage, dtype);
    const span = viewSpan(this.shape, s);
    if (span > 0 && offset + span > capacity) {
      throw new RangeError(`Tensor: ${overrunProblem(this.shape, s, offset, capacity, "the")}`);
    }
    this.strides = Object.freeze(s);
    this.#numel = numel(this.shape);
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
    const capacity = storageCapacity(this.storage, this.dtype);
    return overrunProblem(this.shape, this.strides, this.offset, capacity, "its");
  }

  /**
   * Makes a tensor from numbers in row-major order, rounding them to `dtype`. `values` is
   * flat: a nested array is a TypeError (flatten it and give the dimensions as `shape`).
   */
  static fromArray(
    values: ArrayLike<number>,
    shape: readonly number[],
    dtype: DType = "float32",
  ): Tensor {
    const s = checkShape(shape, "Tensor.fromArray");
    checkValues("Tensor.fromArray", values, s);
    const t = new Tensor(newHostData(dtype, values.length, false, s), dtype, s);
    writeView(t.#hostView("Tensor.fromArray"), values);
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
    if (device === "cpu") return new Tensor(newHostData(dtype, numel(s), true, s), dtype, s);
    const storage = zeroedDeviceStorage(device, dtype, numel(s));
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
   * const x = Tensor.zeros([2, 4, 5, 3]).permute([0, 3, 1, 2]); // channels-last [2, 3, 4, 5]
   * console.log(Tensor.zerosLike(x).strides); // [60, 1, 15, 3]: channels-last, like x
   * ```
   */
  static zerosLike(like: Tensor, dtype: DType = like.dtype, device: Device = like.device): Tensor {
    const strides = stridesLike(like.shape, like.strides);
    const n = numel(like.shape);
    if (device === "cpu") {
      return new Tensor(newHostData(dtype, n, true, like.shape), dtype, like.shape, strides);
    }
    const storage = zeroedDeviceStorage(device, dtype, n);
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
    return new Tensor(newHostData(dtype, numel(s), false, s), dtype, s);
  }

  /**
   * {@linkcode Tensor.empty} with the shape and memory layout of `like` (as
   * {@linkcode Tensor.zerosLike}).
   *
   * @example
   * ```ts
   * import { Tensor } from "@aclnn/norm";
   * const x = Tensor.zeros([2, 4, 5, 3]).permute([0, 3, 1, 2]); // channels-last [2, 3, 4, 5]
   * console.log(Tensor.emptyLike(x).strides); // [60, 1, 15, 3]
   * ```
   */
  static emptyLike(like: Tensor, dtype: DType = like.dtype, device: Device = like.device): Tensor {
    if (device !== "cpu") return Tensor.zerosLike(like, dtype, device);
    const strides = stridesLike(like.shape, like.strides);
    const data = newHostData(dtype, numel(like.shape), false, like.shape);
    return new Tensor(data, dtype, like.shape, strides);
  }

  /** A tensor filled with `value` (rounded to `dtype`). */
  static full(
    shape: readonly number[],
    value: number,
    dtype: DType = "float32",
    device: Device = "cpu",
  ): Tensor {
    const s = checkShape(shape, "Tensor.full");
    const data = newHostData(dtype, numel(s), false, s);
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
    // The tensor first: one too large to make is the documented 207001. Then the numbers, a
    // chunk at a time (random.ts randomStream).
    const host = Tensor.empty(s, options.dtype ?? "float32");
    const view = host.#hostView("Tensor.random");
    const draw = randomStream(options);
    const n = numel(s);
    const chunk = new Float64Array(Math.min(n, RANDOM_CHUNK));
    for (let i = 0; i < n; i += chunk.length) {
      const part = n - i < chunk.length ? chunk.subarray(0, n - i) : chunk;
      draw(part);
      writeRun(view, part, i);
    }
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
    return this.#numel;
  }

  /** Whether the view is row-major contiguous. */
  isContiguous(): boolean {
    return isContiguousLayout(this.shape, this.strides);
  }

  /** A view with the dimensions reordered: `dims[i]` is the source of new dimension i. */
  permute(dims: readonly number[]): Tensor {
    const { shape, strides } = permutePlacement(this.shape, this.strides, dims);
    return new Tensor(this.storage, this.dtype, shape, strides, this.offset);
  }

  /** A view with two dimensions swapped. */
  transpose(a: number, b: number): Tensor {
    return this.permute(swapDims(this.rank, a, b));
  }

  /**
   * A view of `start <= i < end` (step `step`) along `dim`. Negative start/end count from
   * the end, as in Python.
   */
  slice(dim: number, start: number, end: number = this.shape[dim], step = 1): Tensor {
    const { shape, strides, offset } = slicePlacement(this, dim, start, end, step);
    return new Tensor(this.storage, this.dtype, shape, strides, offset);
  }

  /** A view with a new shape; throws when the strides do not allow it (use reshape). */
  view(shape: readonly number[]): Tensor {
    const s = resolveShape(shape, this.numel, "view");
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
    const s = resolveShape(shape, this.numel, "reshape");
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
    const host = Tensor.fromArray(this.#read("clone"), this.shape, this.dtype);
    return this.device === "cpu" ? host : host.to(this.device);
  }

  /**
   * A copy on `device` (this tensor itself when it is already there). Strides are kept
   * (a channels-last tensor stays channels-last); only the span the view touches is copied.
   * A `device` that is neither `"cpu"` nor an opened device (`openAscend()`) is a TypeError.
   */
  to(device: Device): Tensor {
    if (device !== "cpu") checkAccelerator(device);
    if (device === this.device) return this;
    this.#live("to");
    if (device !== "cpu" && this.device !== "cpu") return this.to("cpu").to(device);
    if (device === "cpu") {
      // Download the span the view touches and keep its strides: no recursion through
      // contiguous(), which would itself need the host copy.
      const span = viewSpan(this.shape, this.strides);
      const data = downloadSpan(this.storage as DeviceStorage, this.dtype, this.offset, span);
      return new Tensor(data, this.dtype, this.shape, this.strides, 0);
    }
    const source = isDenseLayout(this.shape, this.strides) ? this : this.contiguous();
    const span = viewSpan(source.shape, source.strides);
    const host = source.storage as HostData;
    const storage = uploadToDevice(device, host, this.dtype, source.offset, span);
    return new Tensor(storage, this.dtype, source.shape, source.strides, 0);
  }

  /** The elements as float64, in logical row-major order of this view. */
  toFloat64Array(): Float64Array {
    return this.#read("toFloat64Array");
  }

  /** The elements as a plain array, in logical row-major order. */
  toArray(): number[] {
    return Array.from(this.#read("toArray"));
  }

  /** The only element of a one-element tensor. */
  item(): number {
    if (this.numel !== 1) throw new RangeError(`item: tensor has ${this.numel} elements`);
    return this.#read("item")[0];
  }

  /**
   * Copies `values` (logical row-major order, flat, or a tensor of the same shape) into this
   * view, rounding to its dtype. Works on host and device tensors.
   */
  copy_(values: ArrayLike<number> | Tensor): this {
    this.#live("copy_");
    if (values instanceof Tensor) {
      values.#live("copy_", "values");
      if (values.shape.join() !== this.shape.join()) {
        throw new RangeError(
          `copy_: source shape ${formatShape(values.shape)} differs from ${
            formatShape(this.shape)
          }`,
        );
      }
    }
    const source = values instanceof Tensor ? values.#read("copy_") : values;
    if (this.device === "cpu") {
      checkValues("copy_", source, this.shape);
      writeView(this.#hostView("copy_"), source);
      return this;
    }
    // Device view: read its span (a closed device says so here), patch it on the host, write
    // it back.
    const span = viewSpan(this.shape, this.strides);
    const storage = this.storage as DeviceStorage;
    const data = downloadSpan(storage, this.dtype, this.offset, span);
    checkValues("copy_", source, this.shape);
    if (this.numel === 0) return this;
    writeView({ ...this.#plainView(), offset: 0, data }, source);
    uploadSpan(storage, data, this.dtype, this.offset);
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

  /** The view of this host tensor, refused (161002) once disposed; `where` names the call. */
  #hostView(where: string) {
    this.#live(where);
    return { ...this.#plainView(), data: this.storage as HostData };
  }

  /**
   * Refuses a tensor whose memory was freed: 161002 naming `where` and the tensor (one on a
   * closed device reaches the device, which says it is closed).
   */
  #live(where: string, argument = "tensor"): void {
    if (storageDisposed(this.storage)) throw disposedError(where, String(this), argument);
  }

  /** The elements as float64 (logical row-major order) for `where`. */
  #read(where: string): Float64Array {
    this.#live(where);
    if (this.device !== "cpu") return this.to("cpu").#read(where);
    return readView(this.#hostView(where));
  }
}
