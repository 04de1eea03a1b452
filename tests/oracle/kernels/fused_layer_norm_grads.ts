/**
 * The float64 oracle of aclnnAddLayerNormGrad and aclnnDeepNormGrad in the kernel contract
 * (tests/oracle/fused_layer_norm_grads.ts): each output rounded once.
 *
 * @module
 */

import type {
  AddLayerNormGradPlan,
  AddLayerNormGradTensors,
  DeepNormGradPlan,
  DeepNormGradTensors,
} from "../../../src/backends/types.ts";
import type { Tensor } from "../../../src/tensor/tensor.ts";
import * as oracle from "../fused_layer_norm_grads.ts";
import { read, write } from "./io.ts";

const list = (t: Tensor) => Array.from(read(t));

/** aclnnAddLayerNormGrad. */
export function addLayerNormGrad(plan: AddLayerNormGradPlan, t: AddLayerNormGradTensors): void {
  const { rows, cols } = plan.geometry;
  const dsum = t.dsum ? list(t.dsum) : undefined;
  const r = oracle.addLayerNormGrad(
    list(t.dy),
    list(t.x1),
    list(t.x2),
    list(t.rstd),
    list(t.mean),
    list(t.gamma),
    rows,
    cols,
    dsum,
  );
  write(t.dx, r.dx);
  write(t.dgamma, r.dgamma);
  write(t.dbeta, r.dbeta);
}

/** aclnnDeepNormGrad. */
export function deepNormGrad(plan: DeepNormGradPlan, t: DeepNormGradTensors): void {
  const { rows, cols } = plan.geometry;
  const r = oracle.deepNormGrad(
    list(t.dy),
    list(t.x),
    list(t.gx),
    list(t.gamma),
    list(t.mean),
    list(t.rstd),
    plan.alpha,
    rows,
    cols,
  );
  write(t.dx, r.dx);
  write(t.dgx, r.dgx);
  write(t.dbeta, r.dbeta);
  write(t.dgamma, r.dgamma);
}
