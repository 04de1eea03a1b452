/**
 * Float64 reference of aclnnAdaLayerNormBackward, the formula of
 * the issue-39 reference notes (norm_family.md, aclnnAdaLayerNormBackward): z = (x - mean) *
 * rstd, sc = 1 + scale[b], g = dy * w * sc; gradInput = (g - mean_H(g) - z * mean_H(g * z)) *
 * rstd; gradScale = sum over S of dy * (z * w + bias); gradShift = sum over S of dy; gradWeight
 * = sum over rows of dy * sc * z; gradBias = sum over rows of dy * sc. Checked against central
 * differences of the forward oracle (ada_layer_norm.ts) in ada_grad_self_check.test.ts.
 *
 * @module
 */

/** The five gradients (gradScale / gradShift batch-major, H per batch). */
export interface AdaLayerNormGrad {
  gradInput: number[];
  gradScale: number[];
  gradShift: number[];
  gradWeight: number[];
  gradBias: number[];
}

/**
 * dy and x of B * S rows of H; mean and rstd one per row; scale of B rows of H (either of
 * CANN's forms holds these elements in this order); weight, bias [H] (ones, zeros when absent).
 */
export function adaLayerNormGrad64(
  dy: readonly number[],
  x: readonly number[],
  seq: number,
  H: number,
  mean: readonly number[],
  rstd: readonly number[],
  scale: readonly number[],
  weight?: readonly number[],
  bias?: readonly number[],
): AdaLayerNormGrad {
  const rows = x.length / H;
  const r: AdaLayerNormGrad = {
    gradInput: new Array(x.length).fill(0),
    gradScale: new Array((rows / seq) * H).fill(0),
    gradShift: new Array((rows / seq) * H).fill(0),
    gradWeight: new Array(H).fill(0),
    gradBias: new Array(H).fill(0),
  };
  for (let row = 0; row < rows; row++) {
    const b = Math.floor(row / seq) * H;
    const z: number[] = [];
    const g: number[] = [];
    let s1 = 0;
    let s2 = 0;
    for (let i = 0; i < H; i++) {
      const at = row * H + i;
      const w = weight?.[i] ?? 1;
      const sc = 1 + scale[b + i];
      z.push((x[at] - mean[row]) * rstd[row]);
      g.push(dy[at] * w * sc);
      s1 += g[i];
      s2 += g[i] * z[i];
      r.gradScale[b + i] += dy[at] * (z[i] * w + (bias?.[i] ?? 0));
      r.gradShift[b + i] += dy[at];
      r.gradWeight[i] += dy[at] * sc * z[i];
      r.gradBias[i] += dy[at] * sc;
    }
    for (let i = 0; i < H; i++) {
      r.gradInput[row * H + i] = (g[i] - s1 / H - z[i] * (s2 / H)) * rstd[row];
    }
  }
  return r;
}
