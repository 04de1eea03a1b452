/**
 * The float64 oracle of aclnnAddLayerNorm and aclnnDeepNorm in the kernel contract
 * (tests/oracle/fused_layer_norms.ts): the exact sum, its LayerNorm, each output rounded once.
 * Rows of no element: mean and rstd NaN (as the CPU backend and Ascend 950 write them).
 *
 * @module
 */

import type {
  AddLayerNormPlan,
  AddLayerNormTensors,
  DeepNormPlan,
  DeepNormTensors,
} from "../../../src/backends/types.ts";
import type { Tensor } from "../../../src/tensor/tensor.ts";
import { fusedLayerNorm } from "../fused_layer_norms.ts";
import { read, write } from "./io.ts";

const list = (t: Tensor) => Array.from(read(t));

function run(
  rows: number,
  cols: number,
  eps: number,
  t: { gamma: Tensor; beta: Tensor; mean: Tensor; rstd: Tensor; y: Tensor; x?: Tensor },
  a: Tensor,
  b: Tensor,
  options: { alpha?: number; bias?: readonly number[] },
): void {
  if (rows === 0) return;
  if (cols === 0) {
    write(t.mean, new Float64Array(rows).fill(NaN));
    write(t.rstd, new Float64Array(rows).fill(NaN));
    return;
  }
  const r = fusedLayerNorm(list(a), list(b), rows, cols, eps, list(t.gamma), list(t.beta), options);
  write(t.y, r.y);
  write(t.mean, r.mean);
  write(t.rstd, r.rstd);
  if (t.x) write(t.x, r.x);
}

/** aclnnAddLayerNorm. */
export function addLayerNorm(plan: AddLayerNormPlan, t: AddLayerNormTensors): void {
  const { rows, cols } = plan.geometry;
  const x = plan.additionalOutput ? t.x : undefined;
  const bias = t.bias ? list(t.bias) : undefined;
  run(rows, cols, plan.epsilon, { ...t, x }, t.x1, t.x2, { bias });
}

/** aclnnDeepNorm. */
export function deepNorm(plan: DeepNormPlan, t: DeepNormTensors): void {
  const { rows, cols } = plan.geometry;
  run(rows, cols, plan.epsilon, t, t.x, t.gx, { alpha: plan.alpha });
}
