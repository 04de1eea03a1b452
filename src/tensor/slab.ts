/**
 * Small typed arrays carved from shared ArrayBuffers ("slabs"): a view of a slab costs a
 * tenth of a typed array of its own or less, and a small CPU call makes 10-20 of them
 * (outputs, per-channel temporaries). bench/RESULTS.md, "Why the constants are what they
 * are", has the figures (`deno bench --allow-read bench/host_alloc.bench.ts`).
 *
 * A slab is an ordinary ArrayBuffer: the garbage collector frees it once no view of it is
 * left, so nothing is ever freed by hand, and a view is never reused while alive. The cost
 * is that one live view keeps its whole slab: {@linkcode SLAB_BYTES} is small, and only
 * arrays of at most {@linkcode SLAB_MAX_BYTES} come from the storage slabs, so at most 16 KiB
 * is kept for a small tensor that outlives its neighbours (the temporaries' slabs are larger,
 * {@linkcode TEMPORARY_SLAB_BYTES}: no temporary outlives its call). Fresh slabs are zero-filled, and no byte
 * is handed out twice, so every view starts zeroed. Detaching a view's buffer (`transfer()`)
 * detaches its neighbours on the slab too (operators then refuse them, 161002); the slab
 * itself moves on to a new buffer.
 *
 * @module
 */

/** Bytes per slab. */
export const SLAB_BYTES = 16384;

/** Largest allocation served from a slab (larger ones get their own buffer). */
export const SLAB_MAX_BYTES = 1024;

/** A stream of small zero-filled ranges of slabs. */
export class Slab {
  readonly #slabBytes: number;
  readonly #maxBytes: number;
  #buffer: ArrayBuffer;
  #at = 0;

  /**
   * A stream of slabs of `slabBytes` bytes serving ranges of up to `maxBytes` (default
   * {@linkcode SLAB_BYTES} and {@linkcode SLAB_MAX_BYTES}).
   */
  constructor(slabBytes: number = SLAB_BYTES, maxBytes: number = SLAB_MAX_BYTES) {
    this.#slabBytes = slabBytes;
    this.#maxBytes = maxBytes;
    this.#buffer = new ArrayBuffer(slabBytes);
  }

  /**
   * `bytes` zero-filled bytes (8-byte aligned) of a slab: its buffer and byte offset, or
   * undefined above {@linkcode SLAB_MAX_BYTES}.
   */
  take(bytes: number): [ArrayBuffer, number] | undefined {
    if (bytes > this.#maxBytes) return undefined;
    const size = (bytes + 7) & ~7;
    // A detached slab (a tensor's `storage.buffer.transfer()`) is left to its views.
    if (this.#at + size > this.#slabBytes || this.#buffer.detached) {
      this.#buffer = new ArrayBuffer(this.#slabBytes);
      this.#at = 0;
    }
    const at = this.#at;
    this.#at += size;
    return [this.#buffer, at];
  }

  /** A zero-filled Float64Array of `length` entries (from a slab when small enough). */
  float64(length: number): Float64Array {
    const range = this.take(length * 8);
    return range ? new Float64Array(range[0], range[1], length) : new Float64Array(length);
  }
}

/**
 * The slab of small host tensor storage (kept apart from temporaries, so a live tensor
 * seldom keeps a slab of dead temporaries).
 */
export const storageSlab: Slab = new Slab();

/**
 * Bytes per slab of the CPU backend's temporaries, and the largest temporary served from one:
 * a small call's per-(n, c) constants and partials (GroupNorm [4,16,8,8]: 1.5 KiB) come from a
 * slab instead of a buffer of their own, which cost such a call a tenth of its time. A
 * temporary dies with its call, so a larger slab keeps no live tensor's memory.
 */
export const TEMPORARY_SLAB_BYTES = 65536;

/** The largest temporary a slab serves (see {@linkcode TEMPORARY_SLAB_BYTES}). */
export const TEMPORARY_MAX_BYTES = 8192;

/** The slab of the CPU backend's per-call float64 temporaries (per-channel values). */
export const temporarySlab: Slab = new Slab(TEMPORARY_SLAB_BYTES, TEMPORARY_MAX_BYTES);

/** A zero-filled float64 temporary of `length` entries (see {@linkcode temporarySlab}). */
export function temporaryFloat64(length: number): Float64Array {
  return temporarySlab.float64(length);
}
