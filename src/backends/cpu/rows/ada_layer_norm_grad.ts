/**
 * The CPU kernel of aclnnAdaLayerNormBackward: one fused row stage
 * (src/backends/cpu/wasm/row_norms_ada_grad.wat ada_ln_bwd, driven by heap_rows_ada.ts) in float32:
 * mean and rstd widened to float32 (the op_api casts them: ops-nn e5c3fa9 norm/
 * ada_layer_norm_grad/op_host/op_api/aclnn_ada_layer_norm_backward.cpp:441-444), 1 + scale
 * formed in float32 as the forward forms it, weight and bias ones and zeros when absent (the
 * op_api's Fill, :410-434); gradInput per row, rounded once; gradWeight/gradBias as per-item
 * column partials and gradScale/gradShift as per-item batch partials, merged in item order in
 * float64 and rounded once to each output's dtype (the op_api's Cast of every result, :348-359).
 * docs/norm_family_kernels.md section 13.
 *
 * @module
 */

import type { AdaLayerNormBackwardPlan, AdaLayerNormBackwardTensors } from "../../types.ts";
import { channelValues, writeChannelValues } from "../tensors/channel_values.ts";
import { adaLayerNormGradHeap } from "./heap_rows_ada.ts";
import { withHeapRows } from "./row_staging.ts";

/** A tensor's values, or `fill` repeated n times when it is absent. */
function valuesOr(t: AdaLayerNormBackwardTensors["weight"], n: number, fill: number): Float64Array {
  return t ? channelValues(t) : new Float64Array(n).fill(fill);
}

/**
 * aclnnAdaLayerNormBackward: z = (x - mean) * rstd, g = dy * w * (1 + scale); gradInput = (g -
 * mean(g) - z * mean(g * z)) * rstd; gradScale, gradShift per batch over S; gradWeight,
 * gradBias over every row. Absent outputs are not written (gradInput not computed).
 * Validation ensures every dim of input is non-zero.
 */
export function adaLayerNormBackward(
  plan: AdaLayerNormBackwardPlan,
  t: AdaLayerNormBackwardTensors,
): void {
  const { rows, cols, axis } = plan.geometry;
  const scale = channelValues(t.scale);
  for (let i = 0; i < scale.length; i++) scale[i] = Math.fround(1 + scale[i]);
  const ada = { scale, batches: rows / plan.seq, seq: plan.seq };
  const w = valuesOr(t.weight, cols, 1);
  const b = valuesOr(t.bias, cols, 0);
  const mean = channelValues(t.mean);
  const rstd = channelValues(t.rstd);
  const outputs = t.gradInput ? [t.gradInput] : [];
  withHeapRows(axis, t.input.dtype, [t.gradOut, t.input], outputs, (anchor, data) => {
    const wanted = {
      columns: Boolean(t.gradWeight || t.gradBias),
      batches: Boolean(t.gradScale || t.gradShift),
    };
    const { scale: dScale, shift, weight, bias } = adaLayerNormGradHeap(
      anchor,
      data,
      rows,
      cols,
      mean,
      rstd,
      w,
      b,
      ada,
      wanted,
    );
    if (t.gradScale && dScale) writeChannelValues(t.gradScale, dScale);
    if (t.gradShift && shift) writeChannelValues(t.gradShift, shift);
    if (t.gradWeight && weight) writeChannelValues(t.gradWeight, weight);
    if (t.gradBias && bias) writeChannelValues(t.gradBias, bias);
  });
}
