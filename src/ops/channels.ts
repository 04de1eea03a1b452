/**
 * Per-channel geometry and reductions shared by the BatchNorm kernels. The channel is view
 * dimension 1; a logical row-major index i belongs to channel floor(i / inner) % C.
 *
 * @module
 */

import type { Tensor } from "../tensor/tensor.ts";
import { valuesOr } from "./validate.ts";

/** How a (N, C, *) shape splits around its channel dimension. */
export interface ChannelGeometry {
  /** Product of the dims before the channel (dim 0). */
  readonly outer: number;
  /** Number of channels (dim 1). */
  readonly channels: number;
  /** Product of the dims after the channel. */
  readonly inner: number;
  /** Elements per channel: outer * inner. */
  readonly perChannel: number;
}

/** Splits a shape of rank >= 2 around dim 1. */
export function channelGeometry(shape: readonly number[]): ChannelGeometry {
  const outer = shape[0];
  const channels = shape[1];
  let inner = 1;
  for (let i = 2; i < shape.length; i++) inner *= shape[i];
  return { outer, channels, inner, perChannel: outer * inner };
}

/**
 * Per channel: sumDy = sum(dy) and sumDyXmu = sum(dy * (x - mean)), the two-pass form that
 * stays accurate when |mean| is large. Accumulates in float64.
 */
export function channelSums(
  g: ChannelGeometry,
  dy: Float64Array,
  x: Float64Array,
  mean: Float64Array,
): { sumDy: Float64Array; sumDyXmu: Float64Array } {
  const sumDy = new Float64Array(g.channels);
  const sumDyXmu = new Float64Array(g.channels);
  const { outer, channels, inner } = g;
  for (let n = 0; n < outer; n++) {
    for (let c = 0; c < channels; c++) {
      const m = mean[c];
      let s = 0;
      let sx = 0;
      const base = (n * channels + c) * inner;
      for (let j = base; j < base + inner; j++) {
        s += dy[j];
        sx += dy[j] * (x[j] - m);
      }
      sumDy[c] += s;
      sumDyXmu[c] += sx;
    }
  }
  return { sumDy, sumDyXmu };
}

/** invstd = 1 / sqrt(variance + eps), element by element. */
export function invstdOf(variance: Float64Array, eps: number): Float64Array {
  return variance.map((v) => 1 / Math.sqrt(v + eps));
}

/**
 * Evaluation-mode statistics: mean = runningMean (0 when absent), invstd =
 * 1 / sqrt(runningVar + eps) with runningVar 1 when absent.
 */
export function runningStats(
  runningMean: Tensor | undefined,
  runningVar: Tensor | undefined,
  channels: number,
  eps: number,
): { mean: Float64Array; invstd: Float64Array } {
  return {
    mean: valuesOr(runningMean, channels, 0),
    invstd: invstdOf(valuesOr(runningVar, channels, 1), eps),
  };
}
