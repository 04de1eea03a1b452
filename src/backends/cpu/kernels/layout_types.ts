/**
 * How a stage sees its tensors: the data is (N, C, inner) in logical order, and each tensor
 * says where element (n, c, i) lives. Plus the fixed partitions of the work into items,
 * which depend on the shape only, so that partial sums (and therefore the results) never
 * depend on how many threads share the items.
 *
 * Part of the pool's worker script (see codecs.ts).
 *
 * @module
 */

/**
 * Loop structure of a call: `rows` (every (n, c) is one contiguous run of `inner` elements),
 * `pixels` (channels-last: every (n, i) is one contiguous run of C channels) or `strided`
 * (anything else: gathered through float64 blocks).
 */
export type LayoutKind = "rows" | "pixels" | "strided";

/** The shared geometry of a stage's tensors. */
export interface Layout {
  /** Loop structure. */
  readonly kind: LayoutKind;
  /** Outer size (BatchNorm: dim 0; GroupNorm: N). */
  readonly N: number;
  /** Channels. */
  readonly C: number;
  /** Elements per (n, c). */
  readonly inner: number;
  /** `strided` only: the inner dims (collapsed where every tensor allows it). */
  readonly innerShape: readonly number[];
  /**
   * `pixels` only: the blocks cut each sample apart (none straddles two), and the
   * per-channel arrays their kernels take (the means of a sums stage, the constants of a
   * write stage) hold N * C entries, sample n's at n * C (see {@linkcode pixelsPerBlock}).
   */
  readonly perSample: boolean;
}

/**
 * Where one tensor's elements are: (n, c, i) lives at base + n*strideN + c*strideC + (offset
 * of i). For `rows` the inner stride is 1, for `pixels` strideC is 1 and i moves by
 * strideI, for `strided` i is a multi-index over `innerShape` with `innerStrides`.
 */
export interface TensorAddress {
  /** Element index of (0, 0, 0) in the typed array. */
  readonly base: number;
  /** Stride of n. */
  readonly strideN: number;
  /** Stride of c. */
  readonly strideC: number;
  /** `pixels`: stride of the collapsed inner position. */
  readonly strideI: number;
  /** `strided`: strides of `innerShape`. */
  readonly innerStrides: readonly number[];
}

/** Elements a work item aims for: big enough to amortise, small enough to balance. */
export const ITEM_ELEMENTS = 32768;

/** Channels-last reductions keep at most this many per-block partials per channel. */
const MAX_PIXEL_BLOCKS = 64;

/** Elements re-read from cache by the second pass of the statistics (rows). */
export const SEGMENT_ELEMENTS = 4096;

/**
 * Elements re-read from cache by the second pass of the channels-last statistics (128 KiB
 * of float32: they stay in L2, which the kernels' 0.5 ns per element never saturates).
 * Each pixel segment ends with one Chan merge per channel in TypeScript, so segments of
 * SEGMENT_ELEMENTS (64 pixels of 64 channels) cost about a tenth of the call in merges;
 * 8x SEGMENT_ELEMENTS saves most of that (figures: bench/RESULTS.md ("Why the constants are what they are")).
 */
export const PIXEL_SEGMENT_ELEMENTS = 32768;

/** `rows`/`strided` BatchNorm items: rows of one channel per item (a function of shape). */
export function rowsPerItem(layout: Layout): number {
  return Math.max(1, Math.ceil(ITEM_ELEMENTS / Math.max(1, layout.inner)));
}

/**
 * `pixels` items: pixels per block, so that there are at most MAX_PIXEL_BLOCKS blocks (of
 * the whole tensor, or of each sample when `perSample`) of at least ITEM_ELEMENTS elements.
 */
export function pixelsPerBlock(layout: Layout): number {
  const pixels = layout.perSample ? layout.inner : layout.N * layout.inner;
  const byElements = Math.ceil(ITEM_ELEMENTS / Math.max(1, layout.C));
  return Math.max(1, byElements, Math.ceil(pixels / MAX_PIXEL_BLOCKS));
}

/** `pixels` with `perSample`: the blocks of each sample (block b is sample b / this's). */
export function blocksPerSample(layout: Layout): number {
  return Math.ceil(layout.inner / pixelsPerBlock(layout));
}

/**
 * Number of BatchNorm-family work items: C * ceil(N / rowsPerItem) (rows, strided; item =
 * channel c, row chunk k at c * chunks + k), N * C for per-sample rows (item n * C + c), or the
 * number of pixel blocks.
 */
export function batchNormItems(layout: Layout): number {
  // Per-sample rows (GroupNorm): one item per (n, c) row, results per (n, c).
  if (layout.kind === "rows" && layout.perSample) return layout.N * layout.C;
  if (layout.kind === "pixels") {
    if (layout.perSample) return layout.N * blocksPerSample(layout);
    return Math.ceil((layout.N * layout.inner) / pixelsPerBlock(layout));
  }
  return layout.C * Math.ceil(layout.N / rowsPerItem(layout));
}

/**
 * Whether a channels-last GroupNorm call runs as two stages over blocks of each sample
 * (statistics or sums, then the write, with per-(n, c) values merged between them) rather
 * than as one item per sample chunk that does both: when it has fewer than
 * {@linkcode SPLIT_BELOW_SAMPLES} samples of at least two blocks each, which as items would
 * leave threads idle (one sample ran on one thread whatever the pool). A function of the
 * shape only, like every partition here, so results never depend on the thread count.
 * Splitting pays most for one large sample and is neutral from a few samples on, where the
 * threads already have an item each (figures: bench/RESULTS.md ("Why the constants are what they are")).
 */
export function splitsSamples(layout: Layout): boolean {
  return layout.kind === "pixels" && layout.N < SPLIT_BELOW_SAMPLES &&
    layout.C * layout.inner >= 2 * ITEM_ELEMENTS;
}

/** Channels-last GroupNorm calls with fewer samples than this may split them. */
const SPLIT_BELOW_SAMPLES = 8;

/** GroupNorm: samples n per item, from the elements of one sample (C * inner). */
export function samplesPerItem(layout: Layout): number {
  return Math.max(1, Math.ceil(ITEM_ELEMENTS / Math.max(1, layout.C * layout.inner)));
}

/**
 * GroupNorm rows/strided: consecutive groups per item, as many of a sample chunk's as make
 * about ITEM_ELEMENTS elements (at least one). One group per item made items of 2048
 * elements on [8,64,32,32] with 32 groups, whose claiming and driver calls cost a
 * measurable share of the call.
 */
export function groupsPerItem(layout: Layout, group: number): number {
  const perGroup = samplesPerItem(layout) * (layout.C / group) * layout.inner;
  return Math.max(1, Math.min(group, Math.floor(ITEM_ELEMENTS / Math.max(1, perGroup))));
}

/**
 * Number of GroupNorm work items: sample chunks times blocks of {@linkcode groupsPerItem}
 * groups (rows, strided: item = chunk * blocks + block) or sample chunks (pixels: all
 * groups of a sample at once).
 */
export function groupNormItems(layout: Layout, group: number): number {
  const chunks = Math.ceil(layout.N / samplesPerItem(layout));
  if (layout.kind === "pixels") return chunks;
  return chunks * Math.ceil(group / groupsPerItem(layout, group));
}

/** `strided`: element offset of sub-row r (every inner dim but the last) from its row base. */
export function subRowOffset(
  innerShape: readonly number[],
  innerStrides: readonly number[],
  r: number,
): number {
  let offset = 0;
  for (let d = innerShape.length - 2; d >= 0; d--) {
    const size = innerShape[d];
    const q = Math.floor(r / size);
    offset += (r - q * size) * innerStrides[d];
    r = q;
  }
  return offset;
}
