/**
 * The float64 oracle of aclnnAddRmsNormCast, aclnnAdaLayerNorm(V2) and aclnnAdaLayerNormBackward
 * in the kernel contract (tests/oracle/ada_layer_norm.ts, ada_layer_norm_grad.ts), each output
 * rounded once to its dtype.
 *
 * @module
 */

import type {
  AdaLayerNormBackwardPlan,
  AdaLayerNormBackwardTensors,
  AdaLayerNormPlan,
  AdaLayerNormTensors,
  AddRmsNormCastPlan,
  AddRmsNormCastTensors,
} from "../../../src/backends/types.ts";
import type { Tensor } from "../../../src/tensor/tensor.ts";
import { adaLayerNorm as ada, addRmsNormCast as cast } from "../ada_layer_norm.ts";
import { adaLayerNormGrad64 } from "../ada_layer_norm_grad.ts";
import { read, write } from "./io.ts";

const list = (t: Tensor | undefined) => (t ? Array.from(read(t)) : undefined);

/** aclnnAddRmsNormCast (y1 the exact y, y2 its rounding). */
export function addRmsNormCast(plan: AddRmsNormCastPlan, t: AddRmsNormCastTensors): void {
  const { rows, cols } = plan.geometry;
  if (rows === 0 || cols === 0) return;
  const r = cast(list(t.x1)!, list(t.x2)!, cols, plan.epsilon, list(t.gamma)!);
  for (const [out, v] of [[t.y1, r.y], [t.y2, r.y], [t.rstd, r.rstd], [t.x, r.x]] as const) {
    write(out, v);
  }
}

/** aclnnAdaLayerNorm and aclnnAdaLayerNormV2. */
export function adaLayerNorm(plan: AdaLayerNormPlan, t: AdaLayerNormTensors): void {
  const H = plan.geometry.cols;
  const r = ada(
    list(t.x)!,
    plan.seq,
    H,
    plan.epsilon,
    list(t.scale)!,
    list(t.shift)!,
    list(t.weight),
    list(t.bias),
  );
  write(t.output, r.y);
  if (t.mean) write(t.mean, r.mean);
  if (t.rstd) write(t.rstd, r.rstd);
}

/** aclnnAdaLayerNormBackward (absent outputs not written). */
export function adaLayerNormBackward(
  plan: AdaLayerNormBackwardPlan,
  t: AdaLayerNormBackwardTensors,
): void {
  const r = adaLayerNormGrad64(
    list(t.gradOut)!,
    list(t.input)!,
    plan.seq,
    plan.geometry.cols,
    list(t.mean)!,
    list(t.rstd)!,
    list(t.scale)!,
    list(t.weight),
    list(t.bias),
  );
  if (t.gradInput) write(t.gradInput, r.gradInput);
  if (t.gradScale) write(t.gradScale, r.gradScale);
  if (t.gradShift) write(t.gradShift, r.gradShift);
  if (t.gradWeight) write(t.gradWeight, r.gradWeight);
  if (t.gradBias) write(t.gradBias, r.gradBias);
}
