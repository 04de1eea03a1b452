/**
 * Element codecs of the streaming kernels: decoding float16/bfloat16 through 65536-entry
 * tables, rounding float64 results once to bfloat16, and the per-thread scratch that holds
 * both.
 *
 * The modules of `kernels/` run on every thread: the pool's workers run them from the bundle
 * of pool/worker_entry.ts (`deno task build:worker`; `deno task check` tells when it is
 * stale), so they import nothing that holds the calling thread's state (tensors, the host
 * heap's allocator).
 *
 * @module
 */

/**
 * Scratch owned by one thread that the TypeScript kernels read: decode tables (built on
 * first use: 256 KiB each), the one-element alias arrays that expose a float32's bits, and
 * float64 temporaries. A thread's state (stages.ts) extends it with what chooses and runs
 * the WebAssembly kernels.
 */
export interface CodecScratch {
  /** float16 bit pattern -> value, or undefined until a float16 kernel first runs. */
  f16Table: Float32Array | undefined;
  /** bfloat16 bit pattern -> value, or undefined until a bfloat16 kernel first runs. */
  bf16Table: Float32Array | undefined;
  /** One float32 whose bits {@linkcode CodecScratch.aliasI32} reads. */
  readonly aliasF32: Float32Array;
  /** The bits of {@linkcode CodecScratch.aliasF32}. */
  readonly aliasI32: Int32Array;
  /** A row's constants or accumulators, passed to row kernels (see drivers.ts). */
  readonly k: Float64Array;
  /** Per-channel float64 scratch of the pixel kernels, grown on demand. */
  channels: Float64Array;
  /** The slab of this thread's small per-stage temporaries (see {@linkcode scratchFloat64}). */
  slab: ArrayBuffer | undefined;
  /** Bytes of {@linkcode CodecScratch.slab} handed out. */
  slabAt: number;
  /** Float64 blocks of the strided fallback, or undefined until it first runs. */
  blocks: Float64Array[] | undefined;
  /**
   * Float32 block of the bfloat16 stores and its bits (see {@linkcode bf16Block}), allocated
   * on first use.
   */
  bf16Block: [Float32Array, Int32Array] | undefined;
}

/** Fresh codec scratch for one thread (tables are built lazily by {@linkcode decodeTable}). */
export function createCodecScratch(): CodecScratch {
  const aliasF32 = new Float32Array(1);
  return {
    f16Table: undefined,
    bf16Table: undefined,
    aliasF32,
    aliasI32: new Int32Array(aliasF32.buffer),
    k: new Float64Array(8),
    channels: new Float64Array(64),
    blocks: undefined,
    slab: undefined,
    slabAt: 0,
    bf16Block: undefined,
  };
}

/**
 * A float32 block and its bits, for bfloat16 stores: results are stored as float32 first
 * (the native store rounds once, to nearest even), then a second loop takes the top half
 * with another rounding, which is exact unless the low half is the tie pattern 0x8000 or the
 * value is Inf/NaN ({@linkcode bf16Exact} redoes those): faster than reading the bits back
 * through a one-element alias inside the computing loop.
 */
export function bf16Block(scratch: CodecScratch): [Float32Array, Int32Array] {
  if (!scratch.bf16Block) {
    const block = new Float32Array(4096);
    // Both views made once: a new view per call cost more than a short row's stores.
    scratch.bf16Block = [block, new Int32Array(block.buffer)];
  }
  return scratch.bf16Block;
}

/** Per-channel float64 scratch of at least `length` elements (contents undefined). */
export function channelScratch(scratch: CodecScratch, length: number): Float64Array {
  if (scratch.channels.length < length) scratch.channels = new Float64Array(length);
  return scratch.channels;
}

/** Bytes of each slab of {@linkcode scratchFloat64}. */
const SCRATCH_SLAB_BYTES = 16384;

/**
 * A zero-filled float64 array of `length` entries for one stage run: a view of this
 * thread's slab when at most 1 KiB (a typed array of its own costs about 1 µs in Deno 2.9.6,
 * a view 0.07 µs; see src/tensor/slab.ts), else its own.
 */
export function scratchFloat64(scratch: CodecScratch, length: number): Float64Array {
  const bytes = length * 8;
  if (bytes > 1024) return new Float64Array(length);
  if (!scratch.slab || scratch.slabAt + bytes > SCRATCH_SLAB_BYTES) {
    scratch.slab = new ArrayBuffer(SCRATCH_SLAB_BYTES);
    scratch.slabAt = 0;
  }
  const out = new Float64Array(scratch.slab, scratch.slabAt, length);
  scratch.slabAt += bytes;
  return out;
}

/** Three float64 blocks of `size` elements for the strided fallback (allocated once). */
export function fallbackBlocks(scratch: CodecScratch, size: number): Float64Array[] {
  if (!scratch.blocks) {
    scratch.blocks = [new Float64Array(size), new Float64Array(size), new Float64Array(size)];
  }
  return scratch.blocks;
}

/**
 * The decode table of a 16-bit float format: `table[bits]` is the value of that pattern.
 * A table load is faster than a Float16Array element read in V8, and it turns float16 and
 * bfloat16 reads into one code path (a Uint16Array plus a table).
 */
export function decodeTable(scratch: CodecScratch, bfloat16: boolean): Float32Array {
  if (bfloat16) {
    if (!scratch.bf16Table) {
      const bits = new Uint32Array(65536);
      for (let i = 0; i < 65536; i++) bits[i] = i << 16;
      scratch.bf16Table = new Float32Array(bits.buffer);
    }
    return scratch.bf16Table;
  }
  if (!scratch.f16Table) {
    const bits = new Uint16Array(65536);
    for (let i = 0; i < 65536; i++) bits[i] = i;
    scratch.f16Table = new Float32Array(new Float16Array(bits.buffer));
  }
  return scratch.f16Table;
}

/**
 * Rounds `value` to bfloat16 (nearest, ties to even) exactly; NaN stays a quiet NaN with its
 * sign. The slow path of the store loops, taken only when the float32 rounding lands on a
 * bfloat16 tie pattern (where a second rounding could be wrong) or on Inf/NaN. The same
 * algorithm as `numberToBf16` in src/tensor/dtype.ts (round-to-odd to float32 first), kept
 * here because worker code cannot import it.
 */
export function bf16Exact(value: number, aliasF32: Float32Array, aliasI32: Int32Array): number {
  aliasF32[0] = value;
  let bits = aliasI32[0];
  if (value !== value) return ((bits >>> 16) | 0x0040) & 0xffff;
  const rounded = aliasF32[0];
  if (rounded !== value && Number.isFinite(value)) {
    // Round-to-odd: truncate toward zero, then set the sticky bit.
    if (Math.abs(rounded) > Math.abs(value)) bits = (bits - 1) | 0;
    bits |= 1;
  }
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}
