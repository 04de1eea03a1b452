/**
 * The CPU kernel of aclnnAddRmsNormCast: one fused row stage (src/backends/cpu/wasm/
 * row_norms_cast.wat add_rms_cast_fwd, driven by heap_rows.ts): s = x1 + x2 in float32, x = s
 * rounded once to x1's dtype, rstd and y = s * rstd * gamma from the float sum, y1 = y as
 * float32 and y2 = y rounded once, as Ascend 950 computes both dtypes (ops-nn norm/
 * add_rms_norm_cast/op_kernel/arch35/add_rms_norm_cast_regbase_common.h:74-116, 135-185;
 * docs/norm_family_kernels.md section 7). The A2/A3 kernels' extra roundings (float16 in half,
 * y1 = float(y2)) are per template and stay in the simulator, as AddRmsNorm's do.
 *
 * @module
 */

import type { AddRmsNormCastPlan, AddRmsNormCastTensors } from "../../types.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";
import { channelValuesView, writeChannelValues } from "../tensors/channel_values.ts";
import { rmsForwardHeap } from "./heap_rows.ts";
import { RowStaging } from "./row_staging.ts";

/**
 * aclnnAddRmsNormCast: x = x1 + x2 rounded; per row rstd = 1/sqrt(mean(s^2) + epsilon) of the
 * float sum s; y1 = s * rstd * gamma (float32), y2 = y1 rounded to x1's dtype. Rows of no
 * element give rstd NaN; no rows, nothing.
 */
export function addRmsNormCast(plan: AddRmsNormCastPlan, t: AddRmsNormCastTensors): void {
  const { rows, cols, axis } = plan.geometry;
  if (rows === 0) return;
  if (cols === 0) {
    writeChannelValues(t.rstd, temporaryFloat64(rows).fill(NaN));
    return;
  }
  const g = channelValuesView(t.gamma);
  // Two stagings: the 16-bit rows (x1, x2, x, y2) and y1's float32 rows.
  const data = new RowStaging(axis, t.x1.dtype);
  const wide = new RowStaging(axis, "float32");
  try {
    const [x1, x2] = [data.input(t.x1), data.input(t.x2)];
    const [x, y2] = [data.output(t.x), data.output(t.y2)];
    const y1 = wide.output(t.y1);
    const rows32 = [x1, x2, x, y1, y2];
    const rstd = rmsForwardHeap(
      "addRmsNormCastRows",
      data.anchor!,
      rows32,
      rows,
      cols,
      plan.epsilon,
      g,
    );
    writeChannelValues(t.rstd, rstd);
    data.finish();
    wide.finish();
  } finally {
    data.release();
    wide.release();
  }
}
