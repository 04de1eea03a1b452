/**
 * Merging the partials of a run of channels-last pixel blocks into per-channel results, block
 * by block in order: the one merge of the pixels stages' partials, on the calling thread
 * (channels/merge.ts) or inside a GroupNorm sample's work item (group_norm_samples.ts), so
 * both give the same bits.
 *
 * Part of the pool's worker script (see pool/worker_entry.ts).
 *
 * @module
 */

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
