/**
 * Per-channel operators of the property sweep (sweep.ts) that CANN added after the family of
 * sweep_ops.ts: aclnnFastBatchNormBackward (aclnnBatchNormBackward's gradients, Atlas A2 only)
 * and aclnnInstanceNorm (per-(n, c) statistics of a 4-D x in NCHW or NHWC, Atlas inference
 * series only), each point's data seeded as the others are.
 *
 * @module
 */

import { batchNormStats, fastBatchNormBackward, instanceNorm } from "../../mod.ts";
import { placeOn } from "./model.ts";
import { dataTensor, type SweepOp, values } from "./sweep.ts";

const EPS = 1e-5;

const fastBackwardOp: SweepOp = {
  op: "fastBatchNormBackward",
  kernels: ["aclnnFastBatchNormBackward"],
  mixed: true,
  layouts: ["contiguous", "channels-last", "strided"],
  variants: ["training", "eval"],
  build(p) {
    const C = p.shape[1];
    const gradOut = dataTensor(p, p.seed, -1, 1);
    const input = dataTensor(p, p.seed + 1);
    const weight = values([C], p.stats, p.seed + 2, 0.5, 1.5);
    const runningMean = values([C], p.stats, p.seed + 3, -0.5, 0.5);
    const runningVar = values([C], p.stats, p.seed + 4, 0.5, 2);
    // The batch statistics in the statistics dtype, from the CPU backend.
    const stats = batchNormStats({ input, eps: EPS });
    const saveMean = values([C], p.stats, 0).copy_(stats.mean);
    const saveInvstd = values([C], p.stats, 0).copy_(stats.invstd);
    return (d) => {
      const r = fastBatchNormBackward({
        gradOut: placeOn(gradOut, d),
        input: placeOn(input, d),
        weight: placeOn(weight, d),
        runningMean: placeOn(runningMean, d),
        runningVar: placeOn(runningVar, d),
        saveMean: placeOn(saveMean, d),
        saveInvstd: placeOn(saveInvstd, d),
        training: p.variant === "training",
        eps: EPS,
      });
      return { gradInput: r.gradInput, gradWeight: r.gradWeight, gradBias: r.gradBias };
    };
  },
};

const instanceNormOp: SweepOp = {
  op: "instanceNorm",
  kernels: ["aclnnInstanceNorm"],
  mixed: false,
  layouts: ["contiguous", "strided"],
  variants: ["NCHW", "NHWC"],
  // A 4-D x whose C and H * W span at least 32 bytes in float16 (aclnnInstanceNorm.md).
  takes: (shape) => shape.length === 4 && shape[1] >= 16 && shape[2] * shape[3] >= 16,
  build(p) {
    // NHWC: the point's [N, C, H, W] values stored as [N, H, W, C].
    const nhwc = p.variant === "NHWC";
    const [N, C, H, W] = p.shape;
    const x = dataTensor({ ...p, shape: nhwc ? [N, H, W, C] : p.shape }, p.seed);
    const gamma = values([C], p.dtype, p.seed + 1, 0.5, 1.5);
    const beta = values([C], p.dtype, p.seed + 2, -0.5, 0.5);
    return (d) => {
      const r = instanceNorm({
        x: placeOn(x, d),
        gamma: placeOn(gamma, d),
        beta: placeOn(beta, d),
        dataFormat: p.variant,
        eps: EPS,
      });
      return { y: r.y, mean: r.mean, variance: r.variance };
    };
  },
};

/** The per-channel operators of the sweep, in the order of the report. */
export const SWEEP_CHANNEL_OPS: readonly SweepOp[] = [fastBackwardOp, instanceNormOp];
