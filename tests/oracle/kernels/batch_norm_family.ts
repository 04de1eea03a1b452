/**
 * The oracle's BatchNorm operators of issue 39 in the kernel contract: aclnnBatchNormReduce
 * (an empty call fills both outputs with 0, as aclnn_batch_norm_reduce.cpp does before any check).
 *
 * @module
 */

import type { BatchNormReducePlan, BatchNormReduceTensors } from "../../../src/backends/types.ts";
import { batchNormReduce64 } from "../batch_norm_reduce.ts";
import { read, write } from "./io.ts";

/** aclnnBatchNormReduce: per-channel Σx and Σx². */
export function batchNormReduce(plan: BatchNormReducePlan, t: BatchNormReduceTensors): void {
  if (plan.empty) {
    write(t.sum, new Float64Array(t.sum.numel));
    write(t.squareSum, new Float64Array(t.squareSum.numel));
    return;
  }
  const r = batchNormReduce64(read(t.x), t.x.shape);
  write(t.sum, r.sum);
  write(t.squareSum, r.squareSum);
}
