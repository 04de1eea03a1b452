/**
 * Independent float64 references for the conformance suite, written from the textbook
 * formulas (not from the library's kernels), plus numpy's legacy MT19937 generator so that
 * peer tests seeded with `np.random.seed(...)` can be replayed with their known answers.
 *
 * Every function takes logical row-major float64 data (what `Tensor.toFloat64Array()` returns)
 * and the statistics exactly as the operator receives them (already rounded to their dtype),
 * so the only difference left between a correct kernel and these references is the final
 * rounding of the outputs (and, on an NPU, fp32 accumulation).
 *
 * @module
 */

/** (N, C, *) split around the channel dimension. */
export interface Geometry {
  outer: number;
  C: number;
  inner: number;
}

/** Splits a rank >= 2 shape around dim 1. */
export function geometry(shape: readonly number[]): Geometry {
  let inner = 1;
  for (let i = 2; i < shape.length; i++) inner *= shape[i];
  return { outer: shape[0], C: shape[1], inner };
}

/** Per-channel batch mean and biased variance of (N, C, *) data. */
export function batchStats64(
  x: Float64Array,
  shape: readonly number[],
): { mean: Float64Array; variance: Float64Array } {
  const { outer, C, inner } = geometry(shape);
  const M = outer * inner;
  const mean = new Float64Array(C);
  const variance = new Float64Array(C);
  for (let c = 0; c < C; c++) {
    let s = 0;
    for (let n = 0; n < outer; n++) {
      for (let j = 0; j < inner; j++) s += x[(n * C + c) * inner + j];
    }
    const m = M > 0 ? s / M : 0;
    let q = 0;
    for (let n = 0; n < outer; n++) {
      for (let j = 0; j < inner; j++) q += (x[(n * C + c) * inner + j] - m) ** 2;
    }
    mean[c] = m;
    variance[c] = M > 0 ? q / M : 0;
  }
  return { mean, variance };
}

/** Per-(n, group) mean and biased variance of GroupNorm data read as (N, C, HxW). */
export function groupStats64(
  x: Float64Array,
  N: number,
  C: number,
  HxW: number,
  group: number,
): { mean: Float64Array; variance: Float64Array } {
  const size = (C / group) * HxW;
  const mean = new Float64Array(N * group);
  const variance = new Float64Array(N * group);
  for (let n = 0; n < N; n++) {
    for (let g = 0; g < group; g++) {
      const base = (n * group + g) * size;
      let s = 0;
      for (let i = 0; i < size; i++) s += x[base + i];
      const m = size > 0 ? s / size : 0;
      let q = 0;
      for (let i = 0; i < size; i++) q += (x[base + i] - m) ** 2;
      mean[n * group + g] = m;
      variance[n * group + g] = size > 0 ? q / size : 0;
    }
  }
  return { mean, variance };
}

/** The four per-channel reductions of aclnnBatchNormReduceBackward. */
export interface ReduceBackward64 {
  sumDy: Float64Array;
  sumDyXmu: Float64Array;
  gradWeight: Float64Array;
  gradBias: Float64Array;
}

/**
 * sumDy = sum(dy), sumDyXmu = sum(dy * (x - mean)), gradWeight = sumDyXmu * invstd,
 * gradBias = sumDy, all per channel (the CANN document's formulas).
 */
export function batchNormReduceBackward64(
  dy: Float64Array,
  x: Float64Array,
  shape: readonly number[],
  mean: Float64Array,
  invstd: Float64Array,
): ReduceBackward64 {
  const { outer, C, inner } = geometry(shape);
  const sumDy = new Float64Array(C);
  const sumDyXmu = new Float64Array(C);
  for (let n = 0; n < outer; n++) {
    for (let c = 0; c < C; c++) {
      for (let j = 0; j < inner; j++) {
        const i = (n * C + c) * inner + j;
        sumDy[c] += dy[i];
        sumDyXmu[c] += dy[i] * (x[i] - mean[c]);
      }
    }
  }
  return {
    sumDy,
    sumDyXmu,
    gradWeight: sumDyXmu.map((v, c) => v * invstd[c]),
    gradBias: sumDy.slice(),
  };
}

/** BatchNorm gradients: dL/dx, dL/dweight, dL/dbias. */
export interface BatchNormBackward64 {
  gradInput: Float64Array;
  gradWeight: Float64Array;
  gradBias: Float64Array;
}

/**
 * BatchNorm backward at the statistics (mean, invstd) the forward used. Training mode
 * differentiates through the batch statistics (Ioffe & Szegedy, eq. for dL/dx):
 *
 * ```
 * dx = w * invstd / M * (M * dy - sum(dy) - xhat * sum(dy * xhat)),  xhat = (x - mean) * invstd
 * ```
 *
 * evaluation mode treats them as constants: dx = dy * w * invstd. In both modes
 * dweight = sum(dy * xhat) and dbias = sum(dy). `weight` undefined means all ones.
 */
export function batchNormBackward64(
  dy: Float64Array,
  x: Float64Array,
  shape: readonly number[],
  weight: Float64Array | undefined,
  mean: Float64Array,
  invstd: Float64Array,
  training: boolean,
): BatchNormBackward64 {
  const { outer, C, inner } = geometry(shape);
  const M = outer * inner;
  const sumDy = new Float64Array(C);
  const sumDyXhat = new Float64Array(C);
  for (let n = 0; n < outer; n++) {
    for (let c = 0; c < C; c++) {
      for (let j = 0; j < inner; j++) {
        const i = (n * C + c) * inner + j;
        sumDy[c] += dy[i];
        sumDyXhat[c] += dy[i] * (x[i] - mean[c]) * invstd[c];
      }
    }
  }
  const gradInput = new Float64Array(dy.length);
  for (let n = 0; n < outer; n++) {
    for (let c = 0; c < C; c++) {
      const w = weight ? weight[c] : 1;
      for (let j = 0; j < inner; j++) {
        const i = (n * C + c) * inner + j;
        if (training) {
          const xhat = (x[i] - mean[c]) * invstd[c];
          gradInput[i] = w * invstd[c] / M * (M * dy[i] - sumDy[c] - xhat * sumDyXhat[c]);
        } else {
          gradInput[i] = dy[i] * w * invstd[c];
        }
      }
    }
  }
  return { gradInput, gradWeight: sumDyXhat, gradBias: sumDy };
}

/** GroupNorm gradients. */
export interface GroupNormBackward64 {
  gradInput: Float64Array;
  gradGamma: Float64Array;
  gradBeta: Float64Array;
}

/**
 * GroupNorm backward in PyTorch's uncentred form (aten native_group_norm_backward):
 * per (n, g) with M = D * HxW, ds = sum(gamma * dy * x), db = sum(gamma * dy):
 *
 * ```
 * c2 = (db * mean - ds) * rstd^3 / M,  c3 = -c2 * mean - db * rstd / M
 * dx = rstd * gamma * dy + c2 * x + c3
 * dgamma_c = sum_n rstd * (sum_hw dy * x - mean * sum_hw dy),  dbeta_c = sum_n sum_hw dy
 * ```
 */
export function groupNormBackward64(
  dy: Float64Array,
  x: Float64Array,
  mean: Float64Array,
  rstd: Float64Array,
  gamma: Float64Array | undefined,
  N: number,
  C: number,
  HxW: number,
  group: number,
): GroupNormBackward64 {
  const D = C / group;
  const M = D * HxW;
  const gradInput = new Float64Array(N * C * HxW);
  const gradGamma = new Float64Array(C);
  const gradBeta = new Float64Array(C);
  for (let n = 0; n < N; n++) {
    for (let g = 0; g < group; g++) {
      const m = mean[n * group + g];
      const r = rstd[n * group + g];
      let ds = 0;
      let db = 0;
      for (let c = g * D; c < (g + 1) * D; c++) {
        const w = gamma ? gamma[c] : 1;
        let sdyx = 0;
        let sdy = 0;
        for (let h = 0; h < HxW; h++) {
          const i = (n * C + c) * HxW + h;
          sdyx += dy[i] * x[i];
          sdy += dy[i];
        }
        ds += w * sdyx;
        db += w * sdy;
        gradGamma[c] += r * (sdyx - m * sdy);
        gradBeta[c] += sdy;
      }
      if (M === 0) continue;
      const c2 = (db * m - ds) * r * r * r / M;
      const c3 = -c2 * m - db * r / M;
      for (let c = g * D; c < (g + 1) * D; c++) {
        const w = gamma ? gamma[c] : 1;
        for (let h = 0; h < HxW; h++) {
          const i = (n * C + c) * HxW + h;
          gradInput[i] = r * w * dy[i] + c2 * x[i] + c3;
        }
      }
    }
  }
  return { gradInput, gradGamma, gradBeta };
}

/**
 * numpy's legacy `RandomState` (MT19937 seeded with init_genrand, as `np.random.seed(int)`
 * does), enough of it to replay `np.random.uniform(low, high, shape)`.
 */
export class NumpyRandomState {
  #mt = new Uint32Array(624);
  #index = 624;

  constructor(seed: number) {
    const mt = this.#mt;
    mt[0] = seed >>> 0;
    for (let i = 1; i < 624; i++) {
      const prev = mt[i - 1] ^ (mt[i - 1] >>> 30);
      mt[i] = (Math.imul(1812433253, prev) + i) >>> 0;
    }
  }

  #twist(): void {
    const mt = this.#mt;
    for (let k = 0; k < 624; k++) {
      const y = (mt[k] & 0x80000000) | (mt[(k + 1) % 624] & 0x7fffffff);
      mt[k] = (mt[(k + 397) % 624] ^ (y >>> 1) ^ ((y & 1) ? 0x9908b0df : 0)) >>> 0;
    }
    this.#index = 0;
  }

  /** One 32-bit output (genrand_int32). */
  nextUint32(): number {
    if (this.#index >= 624) this.#twist();
    let y = this.#mt[this.#index++];
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  /** `random_sample()`: 53-bit double in [0, 1). */
  randomSample(): number {
    const a = this.nextUint32() >>> 5;
    const b = this.nextUint32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  }

  /** `uniform(low, high, size)` in row-major order. */
  uniform(low: number, high: number, size: number): Float64Array {
    const out = new Float64Array(size);
    for (let i = 0; i < size; i++) out[i] = low + (high - low) * this.randomSample();
    return out;
  }
}
