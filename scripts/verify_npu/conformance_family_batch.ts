/**
 * The conformance cases of the BatchNorm operators of the norm family (fastBatchNormBackward,
 * batchNormReduce, syncBatchNormGatherStats) as `deno task verify:npu` cases: the peer cases of
 * tests/fixtures/conformance/norm_family_batch.ts and CANN's examples (norm_family_examples.ts),
 * on the inputs and seeds tests/conformance/norm_family_batch.test.ts gives them, each call run
 * on the NPU and on the CPU backend and compared. syncBatchNormGatherStats's running mean and
 * variance are compared after the call (each run updates its own copies: placeOn).
 *
 * @module
 */

import {
  batchNormReduce,
  fastBatchNormBackward,
  syncBatchNormGatherStats,
  type Tensor,
} from "../../mod.ts";
import {
  FAST_BN_CASES,
  fastBnInputs,
  GATHER_CASES,
  type GatherInputs,
  reduceCases,
} from "../../tests/fixtures/conformance/norm_family_batch.ts";
import {
  batchNormReduceExample,
  fastBatchNormBackwardExample,
  syncBatchNormGatherStatsExample,
} from "../../tests/fixtures/conformance/norm_family_examples.ts";
import {
  type Call,
  conformanceCase,
  dtypeLabel,
  numel,
  placeOn,
  type VerifyCase,
} from "./model.ts";

const example = (dir: string, op: string) => `ops-nn ${dir}/examples/test_aclnn_${op}.cpp`;

/** The tensors of one aclnnFastBatchNormBackward call. */
type FastBnData = ReturnType<typeof fastBnInputs>;

function fastBnCall(
  i: FastBnData,
  training: boolean,
  outputMask: readonly [boolean, boolean, boolean],
): Call {
  return (d) => {
    const r = fastBatchNormBackward({
      gradOut: placeOn(i.gradOut, d),
      input: placeOn(i.input, d),
      weight: placeOn(i.weight, d),
      runningMean: placeOn(i.runningMean, d),
      runningVar: placeOn(i.runningVar, d),
      saveMean: placeOn(i.saveMean, d),
      saveInvstd: placeOn(i.saveInvstd, d),
      training,
      eps: 1e-5,
      outputMask: [...outputMask],
      version: 0,
    });
    return { gradInput: r.gradInput, gradWeight: r.gradWeight, gradBias: r.gradBias };
  };
}

function fastBnAll(): VerifyCase[] {
  const kernels = ["aclnnFastBatchNormBackward"] as const;
  return [
    conformanceCase(
      "fastBatchNormBackward",
      `${example("batch_norm_grad_v3", "fast_batch_norm_backward")} [1,2,4] (golden)`,
      { dtype: "float32", layout: "contiguous", kernels, dtypes: ["float32"], numel: 8 },
      () => fastBnCall(fastBatchNormBackwardExample(), true, [true, true, true]),
    ),
    ...FAST_BN_CASES.map((c, k) =>
      conformanceCase(
        "fastBatchNormBackward",
        `${c.source} [${c.shape}] ${c.training ? "training" : "eval"}`,
        {
          dtype: dtypeLabel(c.dtype, "float32", "params"),
          layout: "contiguous",
          kernels,
          dtypes: [c.dtype, "float32"],
          numel: numel(c.shape),
        },
        () => fastBnCall(fastBnInputs(c, 50000 + 10 * k), c.training, c.mask),
      )
    ),
  ];
}

function reduceCall(x: Tensor): Call {
  return (d) => {
    const r = batchNormReduce({ x: placeOn(x, d) });
    return { sum: r.sum, squareSum: r.squareSum };
  };
}

function reduceAll(): VerifyCase[] {
  const kernels = ["aclnnBatchNormReduce"] as const;
  return [
    conformanceCase(
      "batchNormReduce",
      `${example("bn_training_reduce", "batch_norm_reduce")} [1,2,3,4] (golden)`,
      { dtype: "float32", layout: "contiguous", kernels, dtypes: ["float32"], numel: 24 },
      () => reduceCall(batchNormReduceExample().x),
    ),
    // The torch_npu cases replay one numpy stream: each setup replays it and takes its own.
    ...reduceCases().map(({ source, x }, k) =>
      conformanceCase("batchNormReduce", source, {
        dtype: dtypeLabel(x.dtype, "float32", "outputs"),
        layout: "contiguous",
        kernels,
        dtypes: [x.dtype, "float32"],
        numel: x.numel,
      }, () => reduceCall(reduceCases()[k].x))
    ),
  ];
}

/** The outputs of one aclnnSyncBatchNormGatherStats call, the in-place statistics included. */
function gatherCall(i: GatherInputs, momentum: number, eps: number): Call {
  return (d) => {
    const mean = placeOn(i.mean, d);
    const variance = placeOn(i.variance, d);
    const r = syncBatchNormGatherStats({
      totalSum: placeOn(i.totalSum, d),
      totalSquareSum: placeOn(i.totalSquareSum, d),
      sampleCount: placeOn(i.sampleCount, d),
      mean,
      variance,
      momentum,
      eps,
    });
    return {
      batchMean: r.batchMean,
      batchInvstd: r.batchInvstd,
      "mean (in place)": mean,
      "variance (in place)": variance,
    };
  };
}

/**
 * aclnnSyncBatchNormGatherStats' example and peer cases. The example's channel 1 has a batch
 * variance of 0 formed as squareSum/n - mean^2 = 1 - 1, which 1/sqrt(var + 1e-5) magnifies
 * 5e4-fold: the kernels' float32 steps (the CPU backend's, and the software CANN's since it
 * follows them: tests/sim/sim_ops_sync_batch_norm_gather_stats.c) give the same bits there.
 */
function gatherAll(): VerifyCase[] {
  const kernels = ["aclnnSyncBatchNormGatherStats"] as const;
  const e = syncBatchNormGatherStatsExample();
  return [
    conformanceCase(
      "syncBatchNormGatherStats",
      `${example("sync_batch_norm_gather_stats", "sync_batch_norm_gather_stats")} [1,2] (golden)`,
      { dtype: "float32", layout: "contiguous", kernels, dtypes: ["float32"], numel: 2 },
      () => gatherCall(syncBatchNormGatherStatsExample(), e.momentum, e.eps),
    ),
    ...GATHER_CASES.map((c) =>
      conformanceCase("syncBatchNormGatherStats", c.source, {
        dtype: c.dtype,
        layout: "contiguous",
        kernels,
        dtypes: [c.dtype],
        numel: numel(c.inputs().totalSum.shape),
      }, () => gatherCall(c.inputs(), c.momentum, c.eps))
    ),
  ];
}

/** Every case of norm_family_batch.ts and of these operators' examples. */
export function batchFamilyCases(): VerifyCase[] {
  return [...fastBnAll(), ...reduceAll(), ...gatherAll()];
}
