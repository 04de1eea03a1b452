/**
 * Float64 reference kernels of GroupNorm: aclnnGroupNorm and aclnnGroupNormBackward. The data
 * is (N, C, HxW) in logical row-major order, split into `group` groups of D = C / group
 * channels; statistics have one value per (n, g), element `n * group + g`.
 *
 * @module
 */

import type {
  GroupNormBackwardPlan,
  GroupNormBackwardTensors,
  GroupNormPlan,
  GroupNormTensors,
} from "../../../src/backends/types.ts";
import { valuesOr } from "./values.ts";

/**
 * aclnnGroupNorm: per (n, g), mean and rstd = 1/sqrt(biased var + eps) over D * HxW elements,
 * y = (x - mean) * rstd * gamma + beta. Empty groups give zero statistics.
 */
export function groupNorm(plan: GroupNormPlan, t: GroupNormTensors): void {
  const { N, C, HxW, group, eps } = plan;
  const x = t.input.toFloat64Array();
  const gamma = valuesOr(t.gamma, C, 1);
  const beta = valuesOr(t.beta, C, 0);
  const D = C / group;
  const count = D * HxW;
  const output = new Float64Array(N * C * HxW);
  const mean = new Float64Array(N * group);
  // An empty input gives mean 0 and rstd NaN, as CANN writes (aclnn_group_norm.cpp).
  const rstd = new Float64Array(N * group).fill(N * C * HxW === 0 ? NaN : 0);
  if (count > 0) {
    for (let n = 0; n < N; n++) {
      for (let g = 0; g < group; g++) {
        const base = (n * C + g * D) * HxW;
        let s = 0;
        for (let i = base; i < base + count; i++) s += x[i];
        const m = s / count;
        let q = 0;
        for (let i = base; i < base + count; i++) q += (x[i] - m) * (x[i] - m);
        const r = 1 / Math.sqrt(q / count + eps);
        mean[n * group + g] = m;
        rstd[n * group + g] = r;
        for (let d = 0; d < D; d++) {
          const c = g * D + d;
          const scale = r * gamma[c];
          const shift = beta[c];
          const cb = base + d * HxW;
          for (let i = cb; i < cb + HxW; i++) output[i] = (x[i] - m) * scale + shift;
        }
      }
    }
  }
  t.output.copy_(output);
  t.mean.copy_(mean);
  t.rstd.copy_(rstd);
}

/**
 * aclnnGroupNormBackward. Per (n, g), with xhat = (x - mean) * rstd, M = D * HxW:
 * gradInput = rstd * (dy * gamma - sum(dy * gamma) / M - xhat * sum(dy * gamma * xhat) / M),
 * gradGamma = sum over n, hw of dy * xhat, gradBeta = sum over n, hw of dy (per channel).
 */
export function groupNormBackward(plan: GroupNormBackwardPlan, t: GroupNormBackwardTensors): void {
  const { N, C, HxW, group, mask } = plan;
  const dy = t.gradOut.toFloat64Array();
  const x = t.input.toFloat64Array();
  const mean = t.mean.toFloat64Array();
  const rstd = t.rstd.toFloat64Array();
  const gamma = valuesOr(t.gamma, C, 1);
  const D = C / group;
  const count = D * HxW;
  const gradInput = mask[0] ? new Float64Array(N * C * HxW) : undefined;
  const gradGamma = new Float64Array(C);
  const gradBeta = new Float64Array(C);
  if (count > 0) {
    for (let n = 0; n < N; n++) {
      for (let g = 0; g < group; g++) {
        const m = mean[n * group + g];
        const r = rstd[n * group + g];
        let s1 = 0; // sum(dy * gamma)
        let s2 = 0; // sum(dy * gamma * xhat)
        for (let c = g * D; c < (g + 1) * D; c++) {
          const w = gamma[c];
          const base = (n * C + c) * HxW;
          let sdy = 0;
          let sdyXhat = 0;
          for (let i = base; i < base + HxW; i++) {
            const xhat = (x[i] - m) * r;
            sdy += dy[i];
            sdyXhat += dy[i] * xhat;
          }
          gradGamma[c] += sdyXhat;
          gradBeta[c] += sdy;
          s1 += sdy * w;
          s2 += sdyXhat * w;
        }
        if (!gradInput) continue;
        const a = s1 / count;
        const b = s2 / count;
        for (let c = g * D; c < (g + 1) * D; c++) {
          const w = gamma[c];
          const base = (n * C + c) * HxW;
          for (let i = base; i < base + HxW; i++) {
            const xhat = (x[i] - m) * r;
            gradInput[i] = r * (dy[i] * w - a - xhat * b);
          }
        }
      }
    }
  }
  if (gradInput) t.gradInput?.copy_(gradInput);
  if (mask[1]) t.gradGamma?.copy_(gradGamma);
  if (mask[2]) t.gradBeta?.copy_(gradBeta);
}
