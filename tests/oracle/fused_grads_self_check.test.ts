/**
 * The fused LayerNorm backward oracles (fused_layer_norm_grads.ts) checked by an independent
 * route: central differences of the forward oracle (fused_layer_norms.ts) of L = <dy, y>
 * (+ <dsum, x> for AddLayerNorm's residual output), with the forward's own mean and rstd.
 *
 * @module
 */

import { assertClose } from "../helpers/assert.ts";
import { FINITE_DIFFERENCES } from "../helpers/tolerance.ts";
import {
  addLayerNormGrad64,
  deepNormGrad64,
  dot,
  fusedLayerNorm,
  numericalGradient,
} from "./mod.ts";

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
const rows = 3;
const cols = 5;
const eps = 1e-5;
const beta = values(cols, 9);

Deno.test("oracle: AddLayerNormGrad equals finite differences of AddLayerNorm (with dsum)", () => {
  const x1 = values(rows * cols, 1, -2, 2);
  const x2 = values(rows * cols, 2);
  const dy = values(rows * cols, 3);
  const dsum = values(rows * cols, 4);
  const gamma = values(cols, 5, 0.5, 1.5);
  const fwd = fusedLayerNorm(x1, x2, rows, cols, eps, gamma, beta);
  const loss = (a: ArrayLike<number>, b: ArrayLike<number>, g: ArrayLike<number>, bt = beta) => {
    const f = fusedLayerNorm(Array.from(a), Array.from(b), rows, cols, eps, Array.from(g), bt);
    return dot(dy, f.y) + dot(dsum, f.x);
  };
  const r = addLayerNormGrad64(dy, x1, x2, fwd.rstd, fwd.mean, gamma, rows, cols, dsum);
  const v = (a: number[]) => Float64Array.from(a);
  assertClose(r.dx, numericalGradient((t) => loss(t, x2, gamma), v(x1)), FD, "dx1");
  assertClose(r.dx, numericalGradient((t) => loss(x1, t, gamma), v(x2)), FD, "dx2");
  assertClose(r.dgamma, numericalGradient((t) => loss(x1, x2, t), v(gamma)), FD, "dgamma");
  const dbeta = numericalGradient((t) => loss(x1, x2, gamma, Array.from(t)), v(beta));
  assertClose(r.dbeta, dbeta, FD, "dbeta");
});

Deno.test("oracle: DeepNormGrad equals finite differences of DeepNorm", () => {
  const alpha = 0.87;
  const x = values(rows * cols, 11, -2, 2);
  const gx = values(rows * cols, 12);
  const dy = values(rows * cols, 13);
  const gamma = values(cols, 14, 0.5, 1.5);
  const fwd = fusedLayerNorm(x, gx, rows, cols, eps, gamma, beta, { alpha });
  const loss = (a: ArrayLike<number>, b: ArrayLike<number>, g: ArrayLike<number>, bt = beta) =>
    dot(
      dy,
      fusedLayerNorm(Array.from(a), Array.from(b), rows, cols, eps, Array.from(g), bt, { alpha }).y,
    );
  const r = deepNormGrad64(dy, x, gx, gamma, fwd.mean, fwd.rstd, alpha, rows, cols);
  const v = (a: number[]) => Float64Array.from(a);
  assertClose(r.dx, numericalGradient((t) => loss(t, gx, gamma), v(x)), FD, "dx");
  assertClose(r.dgx, numericalGradient((t) => loss(x, t, gamma), v(gx)), FD, "dgx");
  assertClose(r.dgamma, numericalGradient((t) => loss(x, gx, t), v(gamma)), FD, "dgamma");
  const dbeta = numericalGradient((t) => loss(x, gx, gamma, Array.from(t)), v(beta));
  assertClose(r.dbeta, dbeta, FD, "dbeta");
});
