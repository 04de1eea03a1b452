/**
 * How a stage sees its tensors: the data is (N, C, inner) in logical order, and each tensor
 * says where element (n, c, i) lives. Plus the fixed partitions of the work into items,
 * which depend on the shape only, so that partial sums (and therefore the results) never
 * depend on how many threads share the items.
 *
 * Part of the pool's worker script (see pool/worker_entry.ts).
 *
 * @module
 */

/**
 * Loop structure of a call: `rows` (every (n, c) is one contiguous run of `inner` elements),
 * `pixels` (channels-last: every (n, i) is one contiguous run of C channels) or `strided`
 * (anything else: staged into one of the other two before the kernels run).
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

/**
 * Shortest run (elements) from which a BatchNorm `rows` layout takes its rows in memory order
 * (see {@linkcode rowsInMemoryOrder}). From 8x8 up, memory order ran faster on 2 threads in
 * every shape measured (batchNormBackward [16,128,16,16] float32 0.318 -> 0.137 ms, [128,64,28,28]
 * 6.42 -> 2.87; batchNorm [16,256,8,8] 0.189 -> 0.137) and on one thread as fast or faster
 * (batchNorm [32,1024,8,8], 32768 short rows, 1.56 ms in channel items, 1.52-1.58 once the units'
 * per-row loops stopped dividing); channel items of short channels (a channel of [16,256,8,8] is
 * 1024 elements) ran slower on the pool than on one thread. Runs of 16-42 elements lost on one
 * thread (bench/RESULTS.md, twentieth session). Against channel items of whole channels
 * ({@linkcode channelsPerItem}), memory order still ran 0.52-1.01x their time from 8x8 up, on 1
 * and 2 threads.
 */
export const MEMORY_ORDER_FROM_INNER = 64;

/**
 * Whether a `rows` BatchNorm stage walks its (n, c) rows in memory order (n * C + c), each
 * row's results at its own partials, merged per channel in n order (channels/merge.ts): runs of
 * at least {@linkcode MEMORY_ORDER_FROM_INNER} elements. Channel by channel, every run of a
 * [32,64,56,56] tensor starts 800 KB from the last, and the reductions read memory at a third
 * of a linear sweep's rate (bench/RESULTS.md). Per-sample layouts (GroupNorm) always do; shorter
 * runs keep channel items (a row's own partials and merge would cost more than its work).
 */
export function rowsInMemoryOrder(layout: Layout): boolean {
  return layout.kind === "rows" && (layout.perSample || layout.inner >= MEMORY_ORDER_FROM_INNER);
}

/** `rows`/`strided` BatchNorm items: rows of one channel per item (a function of shape). */
export function rowsPerItem(layout: Layout): number {
  return Math.max(1, Math.ceil(ITEM_ELEMENTS / Math.max(1, layout.inner)));
}

/**
 * `rows` BatchNorm items taken channel by channel (not in memory order) whose channels are one
 * chunk each (rowsPerItem covers N): the channels of one item, so that an item holds about
 * ITEM_ELEMENTS elements. One channel an item otherwise. A channel's rows, partials and merge
 * are the same either way (the same bits); the threads claim fewer, larger items: one item per
 * channel of [64,512,7,7] was 3136 elements, 512 items a stage.
 */
export function channelsPerItem(layout: Layout): number {
  if (layout.kind !== "rows" || rowChunks(layout) > 1) return 1;
  return Math.max(1, Math.floor(ITEM_ELEMENTS / Math.max(1, layout.N * layout.inner)));
}

/** `rows` BatchNorm taken channel by channel: each channel's chunks of rowsPerItem rows. */
export function rowChunks(layout: Layout): number {
  return Math.ceil(layout.N / rowsPerItem(layout));
}

/**
 * Partials slots of a `rows` BatchNorm layout taken channel by channel: one per (channel, chunk
 * of rows), slot c * chunks + k, whichever item runs it (channels/merge.ts reads them so).
 */
export function channelSlots(layout: Layout): number {
  return layout.C * rowChunks(layout);
}

/**
 * Per-sample `rows` items (GroupNorm): consecutive (n, c) rows (n * C + c order), about
 * ITEM_ELEMENTS elements per item (one call per row of 64 elements cost more than the rows'
 * work).
 */
export function perSampleRowsPerItem(layout: Layout): number {
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
 * Number of BatchNorm-family work items: runs of (n, c) rows for rows in memory order; the
 * number of pixel blocks; for rows taken channel by channel, C / channelsPerItem items of whole
 * channels, or C * ceil(N / rowsPerItem) (item = channel c, row chunk k at c * chunks + k).
 */
export function batchNormItems(layout: Layout): number {
  // Rows in memory order (GroupNorm, long BatchNorm rows): runs of (n, c) rows, results per
  // (n, c).
  if (rowsInMemoryOrder(layout)) {
    return Math.ceil(layout.N * layout.C / perSampleRowsPerItem(layout));
  }
  if (layout.kind === "pixels") {
    if (layout.perSample) return layout.N * blocksPerSample(layout);
    return Math.ceil((layout.N * layout.inner) / pixelsPerBlock(layout));
  }
  const per = channelsPerItem(layout);
  return per > 1 ? Math.ceil(layout.C / per) : channelSlots(layout);
}
