/**
 * aclnnGroupNormSwishGrad in float64: the exact derivative of GroupNormSwish (group_norm_silu.ts)
 * with the given mean and rstd, per (n, g) over m = D * HxW elements (docs/
 * norm_family_kernels.md section 11; the reference's corrected formula):
 *
 * ```
 * xhat = (x - mean) * rstd,  t = xhat * gamma[c] + beta[c],  sig = 1 / (1 + exp(-s * t))
 * dYNew = dy * sig * (1 + s * t * (1 - sig)),  g = dYNew * gamma[c]
 * dx = rstd * (g - mean_group(g) - xhat * mean_group(g * xhat))
 * dgamma[c] = sum_{n, hw} dYNew * xhat,  dbeta[c] = sum_{n, hw} dYNew
 * ```
 *
 * Checked against central differences of the forward oracle (self_check_swish_grad.test.ts).
 *
 * @module
 */

/** The outputs of {@linkcode groupNormSwishGrad64}. */
export interface GroupNormSwishGrad64 {
  dx: Float64Array;
  dgamma: Float64Array;
  dbeta: Float64Array;
}

/**
 * The gradient of GroupNormSwish over (N, C, HxW) in `group` groups with scale `s`, `mean` and
 * `rstd` per (n, group) as the forward wrote them.
 */
export function groupNormSwishGrad64(
  dy: ArrayLike<number>,
  mean: ArrayLike<number>,
  rstd: ArrayLike<number>,
  x: ArrayLike<number>,
  gamma: ArrayLike<number>,
  beta: ArrayLike<number>,
  N: number,
  C: number,
  HxW: number,
  group: number,
  s: number,
): GroupNormSwishGrad64 {
  const D = C / group;
  const m = D * HxW;
  const dx = new Float64Array(N * C * HxW);
  const dgamma = new Float64Array(C);
  const dbeta = new Float64Array(C);
  const dYNew = new Float64Array(m);
  const xhat = new Float64Array(m);
  for (let n = 0; n < N; n++) {
    for (let g = 0; g < group; g++) {
      const ng = n * group + g;
      const base = (n * C + g * D) * HxW;
      let sumG = 0;
      let sumGx = 0;
      for (let i = 0; i < m; i++) {
        const c = g * D + Math.floor(i / HxW);
        xhat[i] = (x[base + i] - mean[ng]) * rstd[ng];
        const t = xhat[i] * gamma[c] + beta[c];
        const sig = 1 / (1 + Math.exp(-s * t));
        dYNew[i] = dy[base + i] * sig * (1 + s * t * (1 - sig));
        dgamma[c] += dYNew[i] * xhat[i];
        dbeta[c] += dYNew[i];
        sumG += dYNew[i] * gamma[c];
        sumGx += dYNew[i] * gamma[c] * xhat[i];
      }
      for (let i = 0; i < m; i++) {
        const c = g * D + Math.floor(i / HxW);
        dx[base + i] = rstd[ng] * (dYNew[i] * gamma[c] - sumG / m - xhat[i] * (sumGx / m));
      }
    }
  }
  return { dx, dgamma, dbeta };
}
