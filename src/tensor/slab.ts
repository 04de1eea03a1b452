/**
 * Small typed arrays carved from shared ArrayBuffers ("slabs"): a view of a slab costs a
 * tenth of a typed array of its own or less, and a small CPU call makes 10-20 of them
 * (outputs, per-channel temporaries). bench/RESULTS.md, "Why the constants are what they
 * are", has the figures (`deno bench --allow-read bench/host_alloc.bench.ts`).
 *
 * A slab is an ordinary ArrayBuffer: the garbage collector frees it once no view of it is
 * left, so nothing is ever freed by hand, and a view is never reused while alive. The cost
 * is that one live view keeps its whole slab: {@linkcode SLAB_BYTES} is small, and only
 * arrays of at most {@linkcode SLAB_MAX_BYTES} come from slabs, so at most 16 KiB is kept
 * for a small array that outlives its neighbours. Fresh slabs are zero-filled, and no byte
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
  #buffer = new ArrayBuffer(SLAB_BYTES);
  #at = 0;

  /**
   * `bytes` zero-filled bytes (8-byte aligned) of a slab: its buffer and byte offset, or
   * undefined above {@linkcode SLAB_MAX_BYTES}.
   */
  take(bytes: number): [ArrayBuffer, number] | undefined {
    if (bytes > SLAB_MAX_BYTES) return undefined;
    const size = (bytes + 7) & ~7;
    // A detached slab (a tensor's `storage.buffer.transfer()`) is left to its views.
    if (this.#at + size > SLAB_BYTES || this.#buffer.detached) {
      this.#buffer = new ArrayBuffer(SLAB_BYTES);
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

/** The slab of the CPU backend's per-call float64 temporaries (per-channel values). */
export const temporarySlab: Slab = new Slab();

/** A zero-filled float64 temporary of `length` entries (see {@linkcode temporarySlab}). */
export function temporaryFloat64(length: number): Float64Array {
  return temporarySlab.float64(length);
}
