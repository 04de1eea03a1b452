/**
 * The CPU kernels of aclnnRmsNorm, aclnnGemmaRmsNorm, aclnnRmsNormGrad, aclnnAddRmsNorm and
 * aclnnInplaceAddRmsNorm: rows of gamma's dims in
 * work items (items.ts), run by the WebAssembly row kernels in float32 as CANN's kernels compute
 * (src/backends/cpu/wasm/row_norms.wat, row_norms_rms_grad.wat, row_sums.wat: row sums in
 * float32 blocks added in float64, each output rounded once), on heap rows of the data's dtype
 * (row_staging.ts stages
 * any other tensor), on the worker pool when it pays (heap_rows.ts). dgamma is per-item float32
 * column partials merged in item order in float64.
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
  RmsNormGradPlan,
  RmsNormGradTensors,
  RmsNormPlan,
  RmsNormTensors,
} from "../../types.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";
import {
  channelValues,
  channelValuesView,
  type ReadValues,
  writeChannelValues,
} from "../tensors/channel_values.ts";
import { heapScratchTensor, stageOut } from "../heap_scratch.ts";
import { rmsForwardHeap, rmsNormGradHeap } from "./heap_rows.ts";
import { withHeapRows } from "./row_staging.ts";

/** aclnnRmsNorm: per row rstd = 1/sqrt(mean(x^2) + epsilon), y = x * rstd * gamma. */
export function rmsNorm(plan: RmsNormPlan, t: RmsNormTensors): void {
  rmsForward(plan, t, channelValuesView(t.gamma));
}

/**
 * aclnnGemmaRmsNorm: RMSNorm's kernel with the scale 1 + gamma formed in float32 (ops-nn
 * `norm/rms_norm/op_kernel/rms_norm.h:150-166`: Adds on the float gamma, never rounded to
 * gamma's dtype). The row kernel takes its scale as float32 for every data dtype, so
 * fround(1 + gamma) is exactly that scale: the float64 sum of two float32 values rounded once to
 * float32 is the float32 sum (53 >= 2 * 24 + 2 bits: no double rounding).
 */
export function gemmaRmsNorm(plan: GemmaRmsNormPlan, t: GemmaRmsNormTensors): void {
  const g = channelValues(t.gamma);
  for (let i = 0; i < g.length; i++) g[i] = Math.fround(1 + g[i]);
  rmsForward(plan, t, g);
}

/** RMSNorm's forward with the per-column float32 scale `g` (the row kernel rounds it to float32). */
function rmsForward(plan: RmsNormPlan, t: RmsNormTensors, g: ReadValues): void {
  const { rows, cols, axis } = plan.geometry;
  if (rows === 0 || cols === 0) return;
  withHeapRows(axis, t.x.dtype, [t.x], [t.y], (anchor, data) => {
    const rstd = rmsForwardHeap("rmsNormRows", anchor, data, rows, cols, plan.epsilon, g);
    writeChannelValues(t.rstd, rstd);
  });
}

/**
 * aclnnRmsNormGrad with the forward's per-row rstd: dx = rstd * (dy * gamma - x * rstd *
 * mean(dy * gamma * x * rstd)) over gamma's dims, dgamma = sum over rows of dy * x * rstd. No
 * rows: dgamma is zero.
 */
export function rmsNormGrad(plan: RmsNormGradPlan, t: RmsNormGradTensors): void {
  const { rows, cols, axis } = plan.geometry;
  if (cols === 0) return;
  if (rows === 0) {
    writeChannelValues(t.dgamma, temporaryFloat64(cols));
    return;
  }
  const g = channelValuesView(t.gamma);
  const rstd = channelValuesView(t.rstd);
  withHeapRows(axis, t.x.dtype, [t.dy, t.x], [t.dx], (anchor, data) => {
    rmsNormGradHeap(anchor, data, rows, cols, rstd, g, t.dgamma);
  });
}

/**
 * aclnnAddRmsNorm: s = x1 + x2 in float32, x = s rounded to x1's dtype (written to `x`), then
 * per row rstd = 1/sqrt(mean(s^2) + epsilon) and y = s * rstd * gamma from the float sum, as
 * Ascend 950 computes it (the rounding of s before the statistics that some A2/A3 templates
 * make is not every chip's: the simulator keeps it, row_norms.wat cites the sources). Rows of
 * no element give rstd NaN (the mean of no square); no rows, nothing.
 */
export function addRmsNorm(plan: AddRmsNormPlan, t: AddRmsNormTensors): void {
  const { rows, cols, axis } = plan.geometry;
  if (rows === 0) return;
  if (cols === 0) {
    writeChannelValues(t.rstd, temporaryFloat64(rows).fill(NaN));
    return;
  }
  const g = channelValuesView(t.gamma);
  withHeapRows(axis, t.x1.dtype, [t.x1, t.x2], [t.x, t.y], (anchor, data) => {
    const rstd = rmsForwardHeap("addRmsNormRows", anchor, data, rows, cols, plan.epsilon, g);
    writeChannelValues(t.rstd, rstd);
  });
}

/**
 * aclnnInplaceAddRmsNorm: AddRmsNorm's kernel with y written over x1Ref and x = x1 + x2 (rounded)
 * over x2Ref, as CANN's kernel binds them (ops-nn `norm/inplace_add_rms_norm/op_kernel/
 * inplace_add_rms_norm.cpp`). The row kernel (row_norms.wat add_rms_fwd) reads x1 and x2 again in
 * its second pass (float32 data, and 16-bit rows too long to keep their sum in a thread's
 * region), so x goes to a heap scratch first and into x2Ref after the kernel; y over x1 is safe:
 * each element of a row is read before it is written. Validation ensures rows of at least one
 * element.
 */
export function inplaceAddRmsNorm(plan: InplaceAddRmsNormPlan, t: InplaceAddRmsNormTensors): void {
  const { x1Ref, x2Ref } = t;
  const sum = heapScratchTensor(x1Ref.shape, x1Ref.dtype, "inplaceAddRmsNorm's x");
  try {
    addRmsNorm(plan, { x1: x1Ref, x2: x2Ref, gamma: t.gamma, y: x1Ref, rstd: t.rstd, x: sum });
    stageOut(x2Ref, sum);
  } finally {
    sum.dispose();
  }
}
