/**
 * The CPU kernels of aclnnAdaLayerNorm and aclnnAdaLayerNormV2: one fused row stage
 * (src/backends/cpu/wasm/row_norms_ada.wat ada_ln_fwd, driven by heap_rows_ada.ts): LayerNorm of
 * each row of H elements as aclnnLayerNorm's kernel computes it (weight and bias when given),
 * then times 1 + scale (formed in float32 after widening scale, ops-nn norm/ada_layer_norm/
 * op_kernel/ada_layer_norm_base_v1.h:386) and plus shift of the row's batch index (row / S,
 * `ada_layer_norm_base.h:266`), rounded once to x's dtype (docs/norm_family_kernels.md section
 * 12). V2's mean and rstd are rounded once to their dtype (x's: `_base_v1.h:443-454`).
 *
 * @module
 */

import type { AdaLayerNormPlan, AdaLayerNormTensors } from "../../types.ts";
import { channelValues, writeChannelValues } from "../tensors/channel_values.ts";
import { adaLayerNormHeap } from "./heap_rows_ada.ts";
import { withHeapRows } from "./row_staging.ts";

/** A tensor's values, or `fill` repeated n times when it is absent. */
function valuesOr(t: AdaLayerNormTensors["weight"], n: number, fill: number): Float64Array {
  return t ? channelValues(t) : new Float64Array(n).fill(fill);
}

/**
 * aclnnAdaLayerNorm(V2): per row mean and rstd = 1/sqrt(biased var + epsilon); output =
 * ((x - mean) * rstd * weight + bias) * (1 + scale) + shift; mean and rstd written when given.
 * Validation ensures every dim of x is non-zero.
 */
export function adaLayerNorm(plan: AdaLayerNormPlan, t: AdaLayerNormTensors): void {
  const { rows, cols, axis } = plan.geometry;
  const scale = channelValues(t.scale);
  for (let i = 0; i < scale.length; i++) scale[i] = Math.fround(1 + scale[i]);
  const ada = { scale, shift: channelValues(t.shift), batches: rows / plan.seq, seq: plan.seq };
  const w = valuesOr(t.weight, cols, 1);
  const b = valuesOr(t.bias, cols, 0);
  withHeapRows(axis, t.x.dtype, [t.x], [t.output], (anchor, data) => {
    const stats = adaLayerNormHeap(anchor, data, rows, cols, plan.epsilon, w, b, ada);
    if (t.mean) writeChannelValues(t.mean, stats.mean);
    if (t.rstd) writeChannelValues(t.rstd, stats.rstd);
  });
}
