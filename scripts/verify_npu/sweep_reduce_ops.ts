/**
 * The BatchNorm reductions of the property sweep (sweep.ts) that CANN added after the family
 * of sweep_ops.ts: aclnnBatchNormReduce (per-channel sum and sum of squares of a 4-D input)
 * and aclnnSyncBatchNormGatherStats (the devices' sums gathered into the batch statistics,
 * the running statistics updated in place), each point's data seeded as the others are.
 *
 * @module
 */

import { batchNormReduce, syncBatchNormGatherStats, Tensor } from "../../mod.ts";
import { placeOn } from "./model.ts";
import { dataTensor, type SweepOp, values } from "./sweep.ts";

const reduceOp: SweepOp = {
  op: "batchNormReduce",
  kernels: ["aclnnBatchNormReduce"],
  mixed: false,
  layouts: ["contiguous", "channels-last", "strided"],
  variants: [""],
  extraDTypes: ["float32"],
  // CANN takes a 4-D x only (aclnn_batch_norm_reduce.cpp: NCHW or NHWC).
  takes: (shape) => shape.length === 4,
  build(p) {
    const x = dataTensor(p, p.seed);
    return (d) => {
      const r = batchNormReduce({ x: placeOn(x, d) });
      return { sum: r.sum, squareSum: r.squareSum };
    };
  },
};

const gatherOp: SweepOp = {
  op: "syncBatchNormGatherStats",
  kernels: ["aclnnSyncBatchNormGatherStats"],
  mixed: false,
  layouts: ["contiguous"],
  variants: [""],
  build(p) {
    // Devices: dim 0 of the point; channels: dim 1; each device's sums of `count` seeded
    // values per channel, so that the gathered variance is a variance.
    const [devices, C] = p.shape;
    const counts = Array.from({ length: devices }, (_, i) => 3 + i);
    const sums = new Float64Array(devices * C);
    const squares = new Float64Array(devices * C);
    const seeded = values([devices, C, Math.max(...counts)], "float32", p.seed, -2, 2)
      .toFloat64Array();
    for (let dev = 0; dev < devices; dev++) {
      for (let c = 0; c < C; c++) {
        for (let k = 0; k < counts[dev]; k++) {
          const v = seeded[(dev * C + c) * Math.max(...counts) + k];
          sums[dev * C + c] += v;
          squares[dev * C + c] += v * v;
        }
      }
    }
    const totalSum = Tensor.fromArray(sums, [devices, C], p.dtype);
    const totalSquareSum = Tensor.fromArray(squares, [devices, C], p.dtype);
    const sampleCount = Tensor.fromArray(counts, [devices], p.dtype);
    const mean = values([C], p.dtype, p.seed + 1, -0.5, 0.5);
    const variance = values([C], p.dtype, p.seed + 2, 0.5, 2);
    return (d) => {
      const m = placeOn(mean, d);
      const v = placeOn(variance, d);
      const r = syncBatchNormGatherStats({
        totalSum: placeOn(totalSum, d),
        totalSquareSum: placeOn(totalSquareSum, d),
        sampleCount: placeOn(sampleCount, d),
        mean: m,
        variance: v,
        momentum: 0.1,
        eps: 1e-5,
      });
      return {
        batchMean: r.batchMean,
        batchInvstd: r.batchInvstd,
        "mean (in place)": m,
        "variance (in place)": v,
      };
    };
  },
};

/** The reductions of the sweep, in the order of the report. */
export const SWEEP_REDUCE_OPS: readonly SweepOp[] = [reduceOp, gatherOp];
