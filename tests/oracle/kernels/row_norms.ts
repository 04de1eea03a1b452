/**
 * The oracle's LayerNorm and RMSNorm family in the kernel contract: aclnnLayerNorm,
 * aclnnLayerNormBackward, aclnnRmsNorm, aclnnGemmaRmsNorm, aclnnRmsNormGrad and aclnnAddRmsNorm
 * over rows x cols
 * data (cols = the normalized dims) in logical order. Values from the oracle's row-norm
 * functions (../row_norms.ts); this file says which tensors each operator writes: no rows,
 * nothing (no gradient rows: zero weight gradients); rows of no element, mean 0 and rstd NaN
 * (LayerNorm, AddRmsNorm), as CANN fills them.
 *
 * @module
 */

import type {
  AddRmsNormPlan,
  AddRmsNormTensors,
  GemmaRmsNormPlan,
  GemmaRmsNormTensors,
  InplaceAddRmsNormPlan,
  InplaceAddRmsNormTensors,
  LayerNormBackwardPlan,
  LayerNormBackwardTensors,
  LayerNormPlan,
  LayerNormTensors,
  RmsNormGradPlan,
  RmsNormGradTensors,
  RmsNormPlan,
  RmsNormTensors,
} from "../../../src/backends/types.ts";
import type { Tensor } from "../../../src/tensor/tensor.ts";
import * as rowNorms from "../row_norms.ts";
import { read, write } from "./io.ts";

/** A tensor's elements as a plain array (the row-norm functions' input). */
const list = (t: Tensor) => Array.from(read(t));
/** An optional tensor's elements. */
const listIf = (t: Tensor | undefined) => t && list(t);

/** aclnnLayerNorm. */
export function layerNorm(plan: LayerNormPlan, t: LayerNormTensors): void {
  const { rows, cols } = plan.geometry;
  if (rows === 0) return;
  if (cols === 0) {
    write(t.mean, new Float64Array(rows));
    write(t.rstd, new Float64Array(rows).fill(NaN));
    return;
  }
  const r = rowNorms.layerNorm(
    list(t.input),
    rows,
    cols,
    plan.eps,
    listIf(t.weight),
    listIf(t.bias),
  );
  write(t.output, r.y);
  write(t.mean, r.mean);
  write(t.rstd, r.rstd);
}

/** aclnnLayerNormBackward: the masked-on gradients (no rows: zero weight gradients). */
export function layerNormBackward(plan: LayerNormBackwardPlan, t: LayerNormBackwardTensors): void {
  const { rows, cols } = plan.geometry;
  const [wantInput, wantWeight, wantBias] = plan.mask;
  const empty = rows === 0 || cols === 0;
  const r = empty
    ? { gradInput: [], gradWeight: new Array(cols).fill(0), gradBias: new Array(cols).fill(0) }
    : rowNorms.layerNormBackward(
      list(t.gradOut),
      list(t.input),
      list(t.mean),
      list(t.rstd),
      rows,
      cols,
      listIf(t.weight),
    );
  if (wantInput && !empty) write(t.gradInput, r.gradInput);
  if (wantWeight) write(t.gradWeight, r.gradWeight);
  if (wantBias) write(t.gradBias, r.gradBias);
}

/** aclnnRmsNorm (nothing to write without rows or columns). */
export function rmsNorm(plan: RmsNormPlan, t: RmsNormTensors): void {
  const { rows, cols } = plan.geometry;
  if (rows === 0 || cols === 0) return;
  const r = rowNorms.rmsNorm(list(t.x), rows, cols, plan.epsilon, list(t.gamma));
  write(t.y, r.y);
  write(t.rstd, r.rstd);
}

/** aclnnGemmaRmsNorm (nothing to write without rows or columns). */
export function gemmaRmsNorm(plan: GemmaRmsNormPlan, t: GemmaRmsNormTensors): void {
  const { rows, cols } = plan.geometry;
  if (rows === 0 || cols === 0) return;
  const r = rowNorms.gemmaRmsNorm(list(t.x), rows, cols, plan.epsilon, list(t.gamma));
  write(t.y, r.y);
  write(t.rstd, r.rstd);
}

/** aclnnRmsNormGrad (no rows: dgamma is zero). */
export function rmsNormGrad(plan: RmsNormGradPlan, t: RmsNormGradTensors): void {
  const { rows, cols } = plan.geometry;
  if (cols === 0) return;
  if (rows === 0) {
    write(t.dgamma, new Float64Array(cols));
    return;
  }
  const r = rowNorms.rmsNormBackward(
    list(t.dy),
    list(t.x),
    list(t.rstd),
    list(t.gamma),
    rows,
    cols,
  );
  write(t.dx, r.dx);
  write(t.dgamma, r.dgamma);
}

/** aclnnAddRmsNorm: x = x1 + x2 rounded to x's dtype, then RMSNorm of the rounded x. */
export function addRmsNorm(plan: AddRmsNormPlan, t: AddRmsNormTensors): void {
  const { rows, cols } = plan.geometry;
  if (rows === 0) return;
  if (cols === 0) {
    write(t.rstd, new Float64Array(rows).fill(NaN));
    return;
  }
  const a = read(t.x1);
  const b = read(t.x2);
  const sum = a.map((v, i) => v + b[i]);
  write(t.x, sum);
  // rstd and y from the exact sum (as Ascend 950 and the CPU backend take them), not from x
  // rounded to its dtype.
  const r = rowNorms.rmsNorm(Array.from(sum), rows, cols, plan.epsilon, list(t.gamma));
  write(t.y, r.y);
  write(t.rstd, r.rstd);
}

/** aclnnInplaceAddRmsNorm: addRmsNorm's values, y over x1Ref and x over x2Ref (inputs read first). */
export function inplaceAddRmsNorm(plan: InplaceAddRmsNormPlan, t: InplaceAddRmsNormTensors): void {
  const x1 = t.x1Ref.contiguous();
  const x2 = t.x2Ref.contiguous();
  addRmsNorm(plan, { x1, x2, gamma: t.gamma, y: t.x1Ref, rstd: t.rstd, x: t.x2Ref });
}
