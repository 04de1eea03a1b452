/**
 * aclnnGroupNormBackward (src/ops/group_norm_backward.ts). Per (n, g), with M = D * HxW and
 * xhat = (x - mean) * rstd:
 *
 * ```
 * gradInput = rstd * (gamma * dy - sum(gamma * dy) / M - xhat * sum(gamma * dy * xhat) / M)
 * gradGamma_c = sum over n, hw of dy * xhat,   gradBeta_c = sum over n, hw of dy
 * ```
 *
 * This centred form equals PyTorch's uncentred one (aten native_group_norm_backward) but keeps
 * its accuracy when |mean| is large, and over non-finite data gives the infinities a direct
 * evaluation gives where the uncentred sums meet Inf - Inf. Its derivatives are checked
 * against central differences of the forward (self_check.test.ts). Over an empty input the
 * per-channel gradients are 0 (README).
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
  const xhat = (i: number, n: number, g: number) =>
    (x[i] - mean[n * group + g]) * rstd[n * group + g];
  for (let n = 0; n < N; n++) {
    for (let g = 0; g < group; g++) {
      let a = 0; // sum(gamma * dy)
      let b = 0; // sum(gamma * dy * xhat)
      for (let c = g * D; c < (g + 1) * D; c++) {
        const w = gamma ? gamma[c] : 1;
        for (let h = 0; h < HxW; h++) {
          const i = (n * C + c) * HxW + h;
          a += w * dy[i];
          b += w * dy[i] * xhat(i, n, g);
          gradGamma[c] += dy[i] * xhat(i, n, g);
          gradBeta[c] += dy[i];
        }
      }
      const r = rstd[n * group + g];
      for (let c = g * D; c < (g + 1) * D; c++) {
        const w = gamma ? gamma[c] : 1;
        for (let h = 0; h < HxW; h++) {
          const i = (n * C + c) * HxW + h;
          gradInput[i] = r * (w * dy[i] - a / M - xhat(i, n, g) * b / M);
        }
      }
    }
  }
  return { gradInput, gradGamma, gradBeta };
}
