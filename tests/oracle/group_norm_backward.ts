/**
 * aclnnGroupNormBackward in PyTorch's uncentred form (aten native_group_norm_backward), not
 * the centred form of the operator's JSDoc (src/ops/group_norm_backward.ts), which it equals
 * algebraically. Per (n, g), with M = D * HxW, ds = sum(gamma * dy * x), db = sum(gamma * dy):
 *
 * ```
 * c2 = (db * mean - ds) * rstd^3 / M,  c3 = -c2 * mean - db * rstd / M
 * gradInput = rstd * gamma * dy + c2 * x + c3
 * gradGamma_c = sum_n rstd * (sum_hw dy * x - mean * sum_hw dy),  gradBeta_c = sum_n sum_hw dy
 * ```
 *
 * Over an empty input the per-channel gradients are 0 (README).
 *
 * @module
 */

/** GroupNorm gradients. */
export interface GroupNormBackward64 {
  gradInput: Float64Array;
  gradGamma: Float64Array;
  gradBeta: Float64Array;
}

/** groupNormBackward over (N, C, HxW) data; mean/rstd are (N, group); gamma undefined = 1. */
export function groupNormBackward64(
  dy: ArrayLike<number>,
  x: ArrayLike<number>,
  mean: ArrayLike<number>,
  rstd: ArrayLike<number>,
  gamma: ArrayLike<number> | undefined,
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
  if (M === 0) return { gradInput, gradGamma, gradBeta };
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
