/**
 * The AdaLayerNormBackward oracle (ada_layer_norm_grad.ts) checked by an independent route:
 * central differences of the AdaLayerNorm forward oracle (ada_layer_norm.ts) of L = <dy, y>,
 * with the forward's own mean and rstd, for both weight/bias present and absent.
 *
 * @module
 */

import { assertClose } from "../helpers/assert.ts";
import { FINITE_DIFFERENCES } from "../helpers/tolerance.ts";
import { adaLayerNorm, adaLayerNormGrad64, dot, numericalGradient } from "./mod.ts";

function values(n: number, seed: number, low = -1, high = 1): number[] {
  const out: number[] = [];
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) % 2147483648;
    out.push(low + (high - low) * (s / 2147483648));
  }
  return out;
}

const FD = FINITE_DIFFERENCES;
const [B, S, H] = [2, 3, 5];
const eps = 1e-5;
const v = (a: number[]) => Float64Array.from(a);

for (const affine of [true, false]) {
  Deno.test(`oracle: AdaLayerNormBackward equals finite differences of AdaLayerNorm (weight/bias ${affine ? "given" : "absent"})`, () => {
    const x = values(B * S * H, 1, -2, 2);
    const dy = values(B * S * H, 2);
    const scale = values(B * H, 3);
    const shift = values(B * H, 4);
    const weight = affine ? values(H, 5, 0.5, 1.5) : undefined;
    const bias = affine ? values(H, 6) : undefined;
    const fwd = adaLayerNorm(x, S, H, eps, scale, shift, weight, bias);
    const loss = (a: number[], sc: number[], sh: number[], w?: number[], b?: number[]) =>
      dot(dy, adaLayerNorm(a, S, H, eps, sc, sh, w, b).y);
    const r = adaLayerNormGrad64(dy, x, S, H, fwd.mean, fwd.rstd, scale, weight, bias);
    const num = (f: (t: number[]) => number, at: number[]) =>
      numericalGradient((t) => f(Array.from(t)), v(at));
    assertClose(r.gradInput, num((t) => loss(t, scale, shift, weight, bias), x), FD, "gradInput");
    assertClose(r.gradScale, num((t) => loss(x, t, shift, weight, bias), scale), FD, "gradScale");
    assertClose(r.gradShift, num((t) => loss(x, scale, t, weight, bias), shift), FD, "gradShift");
    const w0 = weight ?? new Array(H).fill(1);
    const b0 = bias ?? new Array(H).fill(0);
    assertClose(r.gradWeight, num((t) => loss(x, scale, shift, t, b0), w0), FD, "gradWeight");
    assertClose(r.gradBias, num((t) => loss(x, scale, shift, w0, t), b0), FD, "gradBias");
  });
}
