/**
 * Float64 access for the reference kernels: read a tensor (or a constant when it is absent)
 * in logical row-major order, and the per-channel helpers they share.
 *
 * @module
 */

import type { Tensor } from "../../../src/tensor/tensor.ts";
import type { ChannelGeometry } from "../../../src/backends/types.ts";

/** The tensor's elements as float64, or `length` copies of `fill` when it is absent. */
export function valuesOr(t: Tensor | undefined, length: number, fill: number): Float64Array {
  return t ? t.toFloat64Array() : new Float64Array(length).fill(fill);
}

/** invstd = 1 / sqrt(variance + eps), element by element. */
export function invstdOf(variance: Float64Array, eps: number): Float64Array {
  return variance.map((v) => 1 / Math.sqrt(v + eps));
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

/**
 * Per channel: mean, biased variance and invstd = 1 / sqrt(variance + eps) in float64 (two
 * passes: the centred sum stays accurate when |mean| is large). An empty batch gives what CANN
 * writes for one (ProcessEmptyTensorWithValue in aclnn_batch_norm.cpp and
 * aclnn_batch_norm_stats.cpp): mean 0, and NaN for the variance and invstd.
 */
export function channelStats(
  g: ChannelGeometry,
  x: Float64Array,
  eps: number,
): { mean: Float64Array; variance: Float64Array; invstd: Float64Array } {
  const { outer, channels, inner, perChannel } = g;
  const mean = new Float64Array(channels);
  const variance = new Float64Array(channels);
  if (perChannel === 0) {
    return {
      mean,
      variance: new Float64Array(channels).fill(NaN),
      invstd: new Float64Array(channels).fill(NaN),
    };
  }
  for (let n = 0; n < outer; n++) {
    for (let c = 0; c < channels; c++) {
      const base = (n * channels + c) * inner;
      let s = 0;
      for (let j = base; j < base + inner; j++) s += x[j];
      mean[c] += s;
    }
  }
  for (let c = 0; c < channels; c++) mean[c] /= perChannel;
  for (let n = 0; n < outer; n++) {
    for (let c = 0; c < channels; c++) {
      const base = (n * channels + c) * inner;
      const m = mean[c];
      let q = 0;
      for (let j = base; j < base + inner; j++) q += (x[j] - m) * (x[j] - m);
      variance[c] += q;
    }
  }
  for (let c = 0; c < channels; c++) variance[c] /= perChannel;
  return { mean, variance, invstd: invstdOf(variance, eps) };
}

/** y = (x - mean) * invstd * w + b per channel, logical row-major order. */
export function normalizeChannels(
  g: ChannelGeometry,
  x: Float64Array,
  mean: Float64Array,
  invstd: Float64Array,
  weight: Float64Array,
  bias: Float64Array,
): Float64Array {
  const { outer, channels, inner } = g;
  const y = new Float64Array(x.length);
  for (let c = 0; c < channels; c++) {
    const scale = invstd[c] * weight[c];
    const m = mean[c];
    const b = bias[c];
    for (let n = 0; n < outer; n++) {
      const base = (n * channels + c) * inner;
      for (let j = base; j < base + inner; j++) y[j] = (x[j] - m) * scale + b;
    }
  }
  return y;
}

/**
 * gradInput = w * invstd * (dy - sumDy / M - (x - mean) * invstd^2 * sumDyXmu / M), the
 * training-mode BatchNorm gradient (and SyncBatchNorm's element-wise half) with M = `total`.
 */
export function elemtBackwardValues(
  g: ChannelGeometry,
  dy: Float64Array,
  x: Float64Array,
  mean: Float64Array,
  invstd: Float64Array,
  weight: Float64Array,
  sumDy: Float64Array,
  sumDyXmu: Float64Array,
  total: number,
): Float64Array {
  const { outer, channels, inner } = g;
  const gradInput = new Float64Array(dy.length);
  for (let c = 0; c < channels; c++) {
    const is = invstd[c];
    const scale = weight[c] * is;
    const meanDy = sumDy[c] / total;
    const k = is * is * sumDyXmu[c] / total;
    const m = mean[c];
    for (let n = 0; n < outer; n++) {
      const base = (n * channels + c) * inner;
      for (let j = base; j < base + inner; j++) {
        gradInput[j] = scale * (dy[j] - meanDy - (x[j] - m) * k);
      }
    }
  }
  return gradInput;
}
