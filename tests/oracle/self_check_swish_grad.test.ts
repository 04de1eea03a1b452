/**
 * The GroupNormSwishGrad oracle (group_norm_swish_grad.ts) checked by an independent route:
 * central differences of the GroupNormSwish forward oracle (group_norm_silu.ts) of
 * L = <dy, y>, with the forward's own mean and rstd, for x, gamma and beta.
 *
 * @module
 */

import { assertClose } from "../helpers/assert.ts";
import { FINITE_DIFFERENCES } from "../helpers/tolerance.ts";
import { dot, numericalGradient } from "./finite_differences.ts";
import { groupNormSwish64 } from "./group_norm_silu.ts";
import { groupNormSwishGrad64 } from "./group_norm_swish_grad.ts";

function values(n: number, seed: number, low = -1, high = 1): number[] {
  const out: number[] = [];
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) % 2147483648;
    out.push(low + (high - low) * (s / 2147483648));
  }
  return out;
}

for (const s of [1, 0.35, -1.5]) {
  Deno.test(`oracle: GroupNormSwishGrad equals finite differences of GroupNormSwish (s=${s})`, () => {
    const [N, C, HxW, G, eps] = [2, 4, 3, 2, 1e-5];
    const x = values(N * C * HxW, 1, -2, 2);
    const dy = values(N * C * HxW, 2);
    const gamma = values(C, 3, 0.5, 1.5);
    const beta = values(C, 4);
    const fwd = groupNormSwish64(x, N, C, HxW, G, gamma, beta, eps, s);
    const loss = (a: ArrayLike<number>, g: ArrayLike<number>, b: ArrayLike<number>) =>
      dot(dy, groupNormSwish64(a, N, C, HxW, G, g, b, eps, s).output);
    const r = groupNormSwishGrad64(dy, fwd.mean, fwd.rstd, x, gamma, beta, N, C, HxW, G, s);
    const v = (a: number[]) => Float64Array.from(a);
    const FD = FINITE_DIFFERENCES;
    assertClose(r.dx, numericalGradient((t) => loss(t, gamma, beta), v(x)), FD, "dx");
    assertClose(r.dgamma, numericalGradient((t) => loss(x, t, beta), v(gamma)), FD, "dgamma");
    assertClose(r.dbeta, numericalGradient((t) => loss(x, gamma, t), v(beta)), FD, "dbeta");
  });
}
