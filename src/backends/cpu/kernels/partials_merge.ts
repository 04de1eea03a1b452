/**
 * Merging stages' partials into per-channel results, block by block in order: the
 * channels-last pixel blocks' merge, and a per-sample layout's (GroupNorm) merge of one
 * sample, used on the calling thread (channels/merge.ts) and inside a GroupNorm sample's work
 * item (group_norm_samples.ts) alike, so both give the same bits.
 *
 * Part of the pool's worker script (see pool/worker_entry.ts).
 *
 * @module
 */

import { blocksPerSample, type Layout, pixelsPerBlock } from "./layout_types.ts";
import { mergeMoments } from "./moments.ts";

/**
 * Merges `blocks` consecutive blocks of a pixels stage's partials (2C per block: C first
 * results, then C second results), from block `firstBlock`, which cover a run of `pixels`
 * pixels `per` to a block, into out[firstAt + c] and out[secondAt + c]: summed (a sums stage;
 * added to what `out` holds) or merged as moments with their pixel counts (a stats stage: the
 * first block's replace it).
 */
export function mergePixelBlocks(
  partials: Float64Array,
  C: number,
  firstBlock: number,
  blocks: number,
  pixels: number,
  per: number,
  moments: boolean,
  out: Float64Array,
  firstAt: number,
  secondAt: number,
): void {
  for (let j = 0; j < blocks; j++) {
    const at = 2 * C * (firstBlock + j);
    const count = Math.min(pixels, (j + 1) * per) - j * per;
    for (let c = 0; c < C; c++) {
      if (moments) {
        mergeMoments(
          out,
          firstAt + c,
          secondAt + c,
          j * per,
          partials[at + c],
          partials[at + C + c],
          count,
        );
      } else {
        out[firstAt + c] += partials[at + c];
        out[secondAt + c] += partials[at + C + c];
      }
    }
  }
}

/**
 * Sample n's partials of a `perSample` layout's stats (`moments`) or sums stage, merged per
 * (n, c) into out[firstAt + c] and out[secondAt + c]: rows hold one pair per (n, c) row at
 * partials[2 (n C + c)] already; pixels merge the sample's blocks (n * blocksPerSample on) in
 * order.
 */
export function mergeSamplePartials(
  layout: Layout,
  partials: Float64Array,
  n: number,
  moments: boolean,
  out: Float64Array,
  firstAt: number,
  secondAt: number,
): void {
  const C = layout.C;
  if (layout.kind !== "pixels") {
    for (let c = 0, nc = n * C; c < C; c++, nc++) {
      out[firstAt + c] = partials[2 * nc];
      out[secondAt + c] = partials[2 * nc + 1];
    }
    return;
  }
  if (!moments) {
    // Sums are added to what `out` holds.
    out.fill(0, firstAt, firstAt + C);
    out.fill(0, secondAt, secondAt + C);
  }
  const blocks = blocksPerSample(layout);
  const per = pixelsPerBlock(layout);
  mergePixelBlocks(
    partials,
    C,
    n * blocks,
    blocks,
    layout.inner,
    per,
    moments,
    out,
    firstAt,
    secondAt,
  );
}
