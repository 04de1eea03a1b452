/**
 * Closed-form float64 recomputations of the three seed operators, written from the formulas
 * in the seed documents, for the demo's "max deviation" column. They share no code with the
 * kernels in src/ops.
 *
 * @module
 */

/** Per-channel sums of BatchNorm backward over a contiguous (N, C, inner) array. */
export function batchNormSums64(
  dy: Float64Array,
  x: Float64Array,
  mean: Float64Array,
  shape: readonly number[],
): { sumDy: Float64Array; sumDyXmu: Float64Array } {
  const [N, C] = shape;
  const inner = x.length / (N * C);
  const sumDy = new Float64Array(C);
  const sumDyXmu = new Float64Array(C);
  for (let i = 0; i < x.length; i++) {
    const c = Math.floor(i / inner) % C;
    sumDy[c] += dy[i];
    sumDyXmu[c] += dy[i] * (x[i] - mean[c]);
  }
  return { sumDy, sumDyXmu };
}

/** Training-mode BatchNorm input gradient from the per-channel sums. */
export function batchNormGradInput64(
  dy: Float64Array,
  x: Float64Array,
  mean: Float64Array,
  invstd: Float64Array,
  weight: Float64Array,
  shape: readonly number[],
): Float64Array {
  const [N, C] = shape;
  const inner = x.length / (N * C);
  const M = N * inner;
  const { sumDy, sumDyXmu } = batchNormSums64(dy, x, mean, shape);
  const dx = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) {
    const c = Math.floor(i / inner) % C;
    const k = invstd[c];
    dx[i] = weight[c] * k * (dy[i] - sumDy[c] / M - (x[i] - mean[c]) * k * k * sumDyXmu[c] / M);
  }
  return dx;
}

/** GroupNorm gradients over contiguous (N, C, HxW): dx = rstd*(gamma*dy - mean(gamma*dy) - xhat*mean(gamma*dy*xhat)). */
export function groupNormGrads64(
  dy: Float64Array,
  x: Float64Array,
  mean: Float64Array,
  rstd: Float64Array,
  gamma: Float64Array,
  N: number,
  C: number,
  HxW: number,
  group: number,
): { gradInput: Float64Array; gradGamma: Float64Array; gradBeta: Float64Array } {
  const D = C / group;
  const size = D * HxW;
  const gradInput = new Float64Array(x.length);
  const gradGamma = new Float64Array(C);
  const gradBeta = new Float64Array(C);
  for (let n = 0; n < N; n++) {
    for (let g = 0; g < group; g++) {
      const m = mean[n * group + g];
      const r = rstd[n * group + g];
      const base = (n * C + g * D) * HxW;
      let a = 0;
      let b = 0;
      for (let i = 0; i < size; i++) {
        const c = g * D + Math.floor(i / HxW);
        const xhat = (x[base + i] - m) * r;
        a += gamma[c] * dy[base + i];
        b += gamma[c] * dy[base + i] * xhat;
        gradGamma[c] += dy[base + i] * xhat;
        gradBeta[c] += dy[base + i];
      }
      a /= size;
      b /= size;
      for (let i = 0; i < size; i++) {
        const c = g * D + Math.floor(i / HxW);
        const xhat = (x[base + i] - m) * r;
        gradInput[base + i] = r * (gamma[c] * dy[base + i] - a - xhat * b);
      }
    }
  }
  return { gradInput, gradGamma, gradBeta };
}

/** Largest |a - b| / max(1, |b|) over all elements. */
export function maxDeviation(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < expected.length; i++) {
    worst = Math.max(worst, Math.abs(actual[i] - expected[i]) / Math.max(1, Math.abs(expected[i])));
  }
  return worst;
}
