/**
 * Independent float64 references: the forward passes of BatchNorm and GroupNorm written
 * straight from their formulas, and central finite differences. Gradients from the
 * operators are checked against derivatives of these forwards, never against the kernels.
 *
 * @module
 */

/** Result of a float64 BatchNorm forward over (N, C, *) in row-major order. */
export interface BatchNormForward64 {
  y: Float64Array;
  mean: Float64Array;
  invstd: Float64Array;
}

/**
 * y = (x - mean_c) * invstd_c * w_c + b_c. In training mode mean/var are the batch's
 * (biased variance) and invstd = 1/sqrt(var + eps); otherwise `stats` supplies mean and var.
 */
export function batchNormForward64(
  x: Float64Array,
  shape: readonly number[],
  weight: Float64Array | undefined,
  bias: Float64Array | undefined,
  eps: number,
  stats?: { mean: Float64Array; variance: Float64Array },
): BatchNormForward64 {
  const C = shape[1];
  const inner = shape.slice(2).reduce((a, b) => a * b, 1);
  const outer = shape[0];
  const count = outer * inner;
  const mean = new Float64Array(C);
  const invstd = new Float64Array(C);
  for (let c = 0; c < C; c++) {
    let m: number;
    let v: number;
    if (stats) {
      m = stats.mean[c];
      v = stats.variance[c];
    } else {
      let s = 0;
      for (let n = 0; n < outer; n++) {
        for (let j = 0; j < inner; j++) s += x[(n * C + c) * inner + j];
      }
      m = s / count;
      let q = 0;
      for (let n = 0; n < outer; n++) {
        for (let j = 0; j < inner; j++) q += (x[(n * C + c) * inner + j] - m) ** 2;
      }
      v = q / count;
    }
    mean[c] = m;
    invstd[c] = 1 / Math.sqrt(v + eps);
  }
  const y = new Float64Array(x.length);
  for (let n = 0; n < outer; n++) {
    for (let c = 0; c < C; c++) {
      for (let j = 0; j < inner; j++) {
        const i = (n * C + c) * inner + j;
        y[i] = (x[i] - mean[c]) * invstd[c] * (weight ? weight[c] : 1) + (bias ? bias[c] : 0);
      }
    }
  }
  return { y, mean, invstd };
}

/** Result of a float64 GroupNorm forward: y, and mean/rstd per (n, group). */
export interface GroupNormForward64 {
  y: Float64Array;
  mean: Float64Array;
  rstd: Float64Array;
}

/** GroupNorm over (N, C, HxW) with biased variance, as PyTorch and aclnnGroupNorm define it. */
export function groupNormForward64(
  x: Float64Array,
  N: number,
  C: number,
  HxW: number,
  group: number,
  gamma: Float64Array | undefined,
  beta: Float64Array | undefined,
  eps: number,
): GroupNormForward64 {
  const D = C / group;
  const size = D * HxW;
  const mean = new Float64Array(N * group);
  const rstd = new Float64Array(N * group);
  const y = new Float64Array(x.length);
  for (let n = 0; n < N; n++) {
    for (let g = 0; g < group; g++) {
      const base = (n * C + g * D) * HxW;
      let s = 0;
      for (let i = 0; i < size; i++) s += x[base + i];
      const m = s / size;
      let q = 0;
      for (let i = 0; i < size; i++) q += (x[base + i] - m) ** 2;
      const r = 1 / Math.sqrt(q / size + eps);
      mean[n * group + g] = m;
      rstd[n * group + g] = r;
      for (let d = 0; d < D; d++) {
        const c = g * D + d;
        for (let h = 0; h < HxW; h++) {
          const i = base + d * HxW + h;
          y[i] = (x[i] - m) * r * (gamma ? gamma[c] : 1) + (beta ? beta[c] : 0);
        }
      }
    }
  }
  return { y, mean, rstd };
}

/**
 * Central differences of a scalar function: d f / d v_i ~ (f(v + h e_i) - f(v - h e_i)) / 2h.
 * `v` is restored after each probe.
 */
export function numericalGradient(
  f: (v: Float64Array) => number,
  v: Float64Array,
  h = 1e-5,
): Float64Array {
  const grad = new Float64Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const keep = v[i];
    v[i] = keep + h;
    const up = f(v);
    v[i] = keep - h;
    const down = f(v);
    v[i] = keep;
    grad[i] = (up - down) / (2 * h);
  }
  return grad;
}

/** sum(a * b): the scalar loss L = <gradOut, y> whose gradient wrt y is gradOut. */
export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}
