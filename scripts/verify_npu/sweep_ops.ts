/**
 * The operators of the property sweep (sweep.ts) and how each builds its call from a sweep
 * point: seeded data in the point's dtype and layout, per-channel tensors in its statistics
 * dtype, statistics computed from the data (tests/oracle/), so that every call is one a
 * training step could make. Every output, in-place updates included, is compared.
 *
 * @module
 */

import {
  batchNorm,
  batchNormBackward,
  batchNormElemt,
  batchNormElemtBackward,
  batchNormGatherStatsWithCounts,
  batchNormReduceBackward,
  batchNormStats,
  createBatchNormBackwardDescriptor,
  createLocalProcessGroup,
  type Device,
  groupNorm,
  groupNormBackward,
  syncBatchNormBackward,
  syncBatchNormForward,
  Tensor,
} from "../../mod.ts";
import { batchNormReduceBackward64, batchStats64, groupStats64 } from "../../tests/oracle/mod.ts";
import { type Outputs, placeOn } from "./model.ts";
import { dataTensor, laidOut, type SweepOp, type SweepPoint, values } from "./sweep.ts";

const ALL_LAYOUTS = ["contiguous", "channels-last", "strided"] as const;
const EPS = 1e-5;

function channels(p: SweepPoint): { C: number; M: number; HxW: number } {
  const numel = p.shape.reduce((a, b) => a * b, 1);
  const C = p.shape[1];
  return { C, M: numel / C, HxW: p.shape.slice(2).reduce((a, b) => a * b, 1) };
}

/** The GroupNorm group count of a point: C / 2 for even C, else C. */
function groupsOf(C: number): number {
  return C % 2 === 0 ? C / 2 : C;
}

/** Batch statistics of `x`'s logical values, as (mean, invstd) tensors in `dtype`. */
function batchStats(x: Tensor, dtype: Tensor["dtype"]): { mean: Tensor; invstd: Tensor } {
  const C = x.shape[1];
  const st = batchStats64(x.toFloat64Array(), x.shape);
  return {
    mean: Tensor.fromArray(st.mean, [C], dtype),
    invstd: Tensor.fromArray(st.variance.map((v) => 1 / Math.sqrt(v + EPS)), [C], dtype),
  };
}

const batchNormOp: SweepOp = {
  op: "batchNorm",
  kernels: ["aclnnBatchNorm"],
  mixed: true,
  layouts: ALL_LAYOUTS,
  variants: ["training", "eval"],
  build(p) {
    const { C } = channels(p);
    const input = dataTensor(p, p.seed);
    const weight = values([C], p.stats, p.seed + 1, 0.5, 1.5);
    const bias = values([C], p.stats, p.seed + 2, -0.5, 0.5);
    const runningMean = values([C], p.stats, p.seed + 3, -0.5, 0.5);
    const runningVar = values([C], p.stats, p.seed + 4, 0.5, 2);
    const training = p.variant === "training";
    return (d) => {
      const rm = placeOn(runningMean, d);
      const rv = placeOn(runningVar, d);
      const r = batchNorm({
        input: placeOn(input, d),
        weight: placeOn(weight, d),
        bias: placeOn(bias, d),
        runningMean: rm,
        runningVar: rv,
        training,
      });
      // saveMean and saveInvstd hold values in training mode only.
      return {
        output: r.output,
        ...(training ? { saveMean: r.saveMean, saveInvstd: r.saveInvstd } : {}),
        "runningMean (in place)": rm,
        "runningVar (in place)": rv,
      };
    };
  },
};

const batchNormBackwardOp: SweepOp = {
  op: "batchNormBackward",
  kernels: ["aclnnBatchNormBackward"],
  mixed: true,
  layouts: ALL_LAYOUTS,
  variants: ["training", "eval"],
  build(p) {
    const { C } = channels(p);
    const gradOut = dataTensor(p, p.seed, -1, 1);
    const input = dataTensor(p, p.seed + 1);
    const weight = values([C], p.stats, p.seed + 2, 0.5, 1.5);
    const runningMean = values([C], p.stats, p.seed + 3, -0.5, 0.5);
    const runningVar = values([C], p.stats, p.seed + 4, 0.5, 2);
    const save = batchStats(input, p.stats);
    return (d) => {
      const r = batchNormBackward({
        gradOut: placeOn(gradOut, d),
        input: placeOn(input, d),
        weight: placeOn(weight, d),
        runningMean: placeOn(runningMean, d),
        runningVar: placeOn(runningVar, d),
        saveMean: placeOn(save.mean, d),
        saveInvstd: placeOn(save.invstd, d),
        training: p.variant === "training",
        eps: EPS,
      });
      return { gradInput: r.gradInput, gradWeight: r.gradWeight, gradBias: r.gradBias };
    };
  },
};

const reduceBackwardOp: SweepOp = {
  op: "batchNormReduceBackward",
  kernels: ["aclnnBatchNormReduceBackward"],
  mixed: true,
  layouts: ALL_LAYOUTS,
  variants: [""],
  build(p) {
    const { C } = channels(p);
    const gradOut = dataTensor(p, p.seed, -1, 1);
    const input = dataTensor(p, p.seed + 1);
    const weight = values([C], p.stats, p.seed + 2, 0.5, 1.5);
    const { mean, invstd } = batchStats(input, p.stats);
    return (d) => {
      const r = batchNormReduceBackward({
        gradOut: placeOn(gradOut, d),
        input: placeOn(input, d),
        mean: placeOn(mean, d),
        invstd: placeOn(invstd, d),
        weight: placeOn(weight, d),
      });
      return {
        sumDy: r.sumDy,
        sumDyXmu: r.sumDyXmu,
        gradWeight: r.gradWeight,
        gradBias: r.gradBias,
      };
    };
  },
};

const statsOp: SweepOp = {
  op: "batchNormStats",
  kernels: ["aclnnBatchNormStats"],
  mixed: false,
  layouts: ALL_LAYOUTS,
  variants: [""],
  build(p) {
    const input = dataTensor(p, p.seed, -3, 3);
    return (d) => {
      const r = batchNormStats({ input: placeOn(input, d), eps: EPS });
      return { mean: r.mean, invstd: r.invstd };
    };
  },
};

/** Per-rank statistics of W = 3 ranks, as SyncBatchNorm gathers them. */
const gatherStatsOp: SweepOp = {
  op: "batchNormGatherStatsWithCounts",
  kernels: ["aclnnBatchNormGatherStatsWithCounts"],
  mixed: true,
  layouts: ["contiguous", "strided"],
  variants: [""],
  build(p) {
    const { C, M } = channels(p);
    const W = 3;
    const input = dataTensor(p, p.seed);
    const at = { ...p, shape: [W, C] };
    const mean = dataTensor({ ...at, dtype: p.stats }, p.seed + 1, -1, 1);
    const invstd = dataTensor({ ...at, dtype: p.stats }, p.seed + 2, 0.5, 2);
    // Per-rank element counts (only the input's shape is read, not its size); at most 2000, so
    // that float16 holds them.
    const m = Math.min(M, 1000);
    const counts = Tensor.fromArray([m, m + 2, 2 * m], [W], p.stats);
    const runningMean = values([C], p.stats, p.seed + 3, -0.5, 0.5);
    const runningVar = values([C], p.stats, p.seed + 4, 0.5, 2);
    return (d) => {
      const rm = placeOn(runningMean, d);
      const rv = placeOn(runningVar, d);
      const r = batchNormGatherStatsWithCounts({
        input: placeOn(input, d),
        mean: placeOn(mean, d),
        invstd: placeOn(invstd, d),
        counts: placeOn(counts, d),
        runningMean: rm,
        runningVar: rv,
        eps: EPS,
        momentum: 0.1,
      });
      return {
        mean: r.mean,
        invstd: r.invstd,
        "runningMean (in place)": rm,
        "runningVar (in place)": rv,
      };
    };
  },
};

const elemtOp: SweepOp = {
  op: "batchNormElemt",
  kernels: ["aclnnBatchNormElemt"],
  mixed: false,
  layouts: ALL_LAYOUTS,
  variants: [""],
  build(p) {
    const { C } = channels(p);
    const input = dataTensor(p, p.seed);
    const weight = values([C], p.dtype, p.seed + 1, 0.5, 1.5);
    const bias = values([C], p.dtype, p.seed + 2, -0.5, 0.5);
    const { mean, invstd } = batchStats(input, p.dtype);
    return (d) => ({
      output: batchNormElemt({
        input: placeOn(input, d),
        weight: placeOn(weight, d),
        bias: placeOn(bias, d),
        mean: placeOn(mean, d),
        invstd: placeOn(invstd, d),
        eps: EPS,
      }),
    });
  },
};

const elemtBackwardOp: SweepOp = {
  op: "batchNormElemtBackward",
  kernels: ["aclnnBatchNormElemtBackward"],
  mixed: true,
  layouts: ALL_LAYOUTS,
  variants: [""],
  build(p) {
    const { C, M } = channels(p);
    const gradOut = dataTensor(p, p.seed, -1, 1);
    const input = dataTensor(p, p.seed + 1);
    const weight = values([C], p.stats, p.seed + 2, 0.5, 1.5);
    const { mean, invstd } = batchStats(input, p.stats);
    const sums = batchNormReduceBackward64(
      gradOut.toFloat64Array(),
      input.toFloat64Array(),
      p.shape,
      mean.toFloat64Array(),
      invstd.toFloat64Array(),
    );
    const sumDy = Tensor.fromArray(sums.sumDy, [C], p.stats);
    const sumDyXmu = Tensor.fromArray(sums.sumDyXmu, [C], p.stats);
    // Two ranks' element counts, summing to this batch's M.
    const counter = Tensor.fromArray([Math.floor(M / 2), M - Math.floor(M / 2)], [2], "int32");
    return (d) => ({
      gradInput: batchNormElemtBackward({
        gradOut: placeOn(gradOut, d),
        input: placeOn(input, d),
        mean: placeOn(mean, d),
        invstd: placeOn(invstd, d),
        weight: placeOn(weight, d),
        sumDy: placeOn(sumDy, d),
        sumDyXmu: placeOn(sumDyXmu, d),
        counter: placeOn(counter, d),
      }),
    });
  },
};

const groupNormOp: SweepOp = {
  op: "groupNorm",
  kernels: ["aclnnGroupNorm"],
  mixed: false,
  layouts: ALL_LAYOUTS,
  variants: [""],
  build(p) {
    const { C } = channels(p);
    const input = dataTensor(p, p.seed);
    const gamma = values([C], p.dtype, p.seed + 1, 0.5, 1.5);
    const beta = values([C], p.dtype, p.seed + 2, -0.5, 0.5);
    return (d) => {
      const r = groupNorm({
        input: placeOn(input, d),
        gamma: placeOn(gamma, d),
        beta: placeOn(beta, d),
        group: groupsOf(C),
        eps: EPS,
      });
      return { output: r.output, mean: r.mean, rstd: r.rstd };
    };
  },
};

const groupNormBackwardOp: SweepOp = {
  op: "groupNormBackward",
  kernels: ["aclnnGroupNormBackward"],
  mixed: true,
  mixedIsChipTrait: true,
  layouts: ALL_LAYOUTS,
  variants: [""],
  build(p) {
    const { C, HxW } = channels(p);
    const N = p.shape[0];
    const group = groupsOf(C);
    const gradOut = dataTensor(p, p.seed, -1, 1);
    const input = dataTensor(p, p.seed + 1);
    const st = groupStats64(input.toFloat64Array(), N, C, HxW, group);
    const mean = Tensor.fromArray(st.mean, [N, group], p.stats);
    const rstd = Tensor.fromArray(
      st.variance.map((v) => 1 / Math.sqrt(v + EPS)),
      [N, group],
      p.stats,
    );
    const gamma = values([C], p.stats, p.seed + 2, 0.5, 1.5);
    return (d) => {
      const r = groupNormBackward({
        gradOut: placeOn(gradOut, d),
        input: placeOn(input, d),
        mean: placeOn(mean, d),
        rstd: placeOn(rstd, d),
        gamma: placeOn(gamma, d),
        group,
      });
      return { gradInput: r.gradInput, gradGamma: r.gradGamma, gradBeta: r.gradBeta };
    };
  },
};

/**
 * The InfiniOp descriptor on (N, C, L) = the point's shape with its trailing dims merged:
 * contiguous data (InfiniOp requires it), per-channel tensors contiguous or every other element
 * ("strided"), gradInput written over gradOutput ("in-place").
 */
const infiniopOp: SweepOp = {
  op: "createBatchNormBackwardDescriptor",
  kernels: ["aclnnBatchNormBackward"],
  mixed: false,
  layouts: ["contiguous", "strided", "in-place"],
  variants: [""],
  build(p) {
    const { C, HxW } = channels(p);
    const shape = [p.shape[0], C, HxW];
    const flat = { ...p, shape, layout: "contiguous" as const };
    const input = dataTensor(flat, p.seed);
    const gradOutput = dataTensor(flat, p.seed + 1, -1, 1);
    const perChannel = (t: Tensor) => p.layout === "strided" ? laidOut(t, "strided") : t;
    const st = batchStats64(input.toFloat64Array(), shape);
    const weight = perChannel(values([C], p.dtype, p.seed + 2, 0.5, 1.5));
    const runningMean = perChannel(Tensor.fromArray(st.mean, [C], p.dtype));
    const runningVar = perChannel(Tensor.fromArray(st.variance, [C], p.dtype));
    const zeros = perChannel(Tensor.zeros([C], p.dtype));
    return (d: Device) => {
      const gradOut = placeOn(gradOutput, d);
      const args = {
        gradInput: p.layout === "in-place" ? gradOut : Tensor.zeros(shape, p.dtype, d),
        gradWeight: placeOn(zeros, d),
        gradBias: placeOn(zeros, d),
        input: placeOn(input, d),
        gradOutput: gradOut,
        weight: placeOn(weight, d),
        runningMean: placeOn(runningMean, d),
        runningVar: placeOn(runningVar, d),
      };
      using desc = createBatchNormBackwardDescriptor({ ...args, eps: EPS });
      desc.compute(args);
      return { gradInput: args.gradInput, gradWeight: args.gradWeight, gradBias: args.gradBias };
    };
  },
};

/**
 * SyncBatchNorm over two ranks of one process (createLocalProcessGroup): the batch split in
 * two, forward then backward on each rank; every rank's outputs are compared.
 */
const syncBatchNormOp: SweepOp = {
  op: "syncBatchNormForward/Backward",
  kernels: [
    "aclnnBatchNormStats",
    "aclnnBatchNormGatherStatsWithCounts",
    "aclnnBatchNormElemt",
    "aclnnBatchNormReduceBackward",
    "aclnnBatchNormElemtBackward",
  ],
  mixed: false,
  layouts: ALL_LAYOUTS,
  variants: [""],
  build(p) {
    const { C } = channels(p);
    const N = p.shape[0];
    const split = [Math.floor(N / 2), N - Math.floor(N / 2)];
    const shares = split.map((n) => ({ ...p, shape: [n, ...p.shape.slice(1)] }))
      .map((q, r) => ({
        input: dataTensor(q, p.seed + 10 * r),
        gradOut: dataTensor(q, p.seed + 10 * r + 1, -1, 1),
      }));
    const weight = values([C], "float32", p.seed + 100, 0.5, 1.5);
    const bias = values([C], "float32", p.seed + 101, -0.5, 0.5);
    return async (d) => {
      const group = createLocalProcessGroup(2);
      const results = await Promise.all(shares.map(async (s, r) => {
        const input = placeOn(s.input, d);
        const w = placeOn(weight, d);
        const f = await syncBatchNormForward({
          input,
          weight: w,
          bias: placeOn(bias, d),
          eps: EPS,
          allGather: group[r].allGather,
        });
        const b = await syncBatchNormBackward({
          gradOut: placeOn(s.gradOut, d),
          input,
          weight: w,
          mean: f.mean,
          invstd: f.invstd,
          counts: f.counts,
          allReduce: group[r].allReduce,
        });
        return { f, b };
      }));
      const out: Outputs = { mean: results[0].f.mean, invstd: results[0].f.invstd };
      results.forEach(({ f, b }, r) => {
        out[`rank ${r} output`] = f.output;
        out[`rank ${r} gradInput`] = b.gradInput;
        out[`rank ${r} gradWeight`] = b.gradWeight;
        out[`rank ${r} gradBias`] = b.gradBias;
      });
      return out;
    };
  },
};

/** Every operator of the sweep, in the order of the report. */
export const SWEEP_OPS: readonly SweepOp[] = [
  batchNormOp,
  batchNormBackwardOp,
  reduceBackwardOp,
  statsOp,
  gatherStatsOp,
  elemtOp,
  elemtBackwardOp,
  groupNormOp,
  groupNormBackwardOp,
  infiniopOp,
  syncBatchNormOp,
];
