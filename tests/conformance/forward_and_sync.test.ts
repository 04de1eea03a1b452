/**
 * Conformance of the forward operators (batchNorm, batchNormStats, groupNorm) on PyTorch's
 * OpInfo samples, and of the SyncBatchNorm chain (batchNormStats -> gatherStatsWithCounts ->
 * batchNormReduceBackward -> batchNormElemtBackward, the decomposition of PyTorch's
 * torch/nn/modules/_functions.py SyncBatchNorm) against the single-device float64 answer, on
 * every backend (what a chip refuses, e.g. bfloat16 batchNormStats on Atlas A2, must be refused).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  AclnnError,
  batchNorm,
  batchNormElemtBackward,
  batchNormGatherStatsWithCounts,
  batchNormReduceBackward,
  batchNormStats,
  type DType,
  groupNorm,
  Tensor,
} from "../../mod.ts";
import { assertChipRefuses, chipAccepts, forEachBackend } from "../helpers/backends.ts";
import {
  batchNorm64,
  batchNormBackwardAt64,
  batchNormStats64,
  batchStats64,
  groupNorm64,
  invstdOf,
} from "../oracle/mod.ts";
import { expectClose, f64, fromValues, on, onOpt, runAll, uniform } from "./common.ts";

// pytorch/pytorch torch/testing/_internal/common_methods_invocations.py
// sample_inputs_batch_norm (S = 5): (input shape, training, momentum, eps); running_mean from
// make_tensor(low=0), running_var from make_tensor(low=0), values in [-9, 9] by default.
const BN_CASES: {
  shape: number[];
  training: boolean;
  momentum?: number;
  eps?: number;
  weight: boolean;
}[] = [
  { shape: [5, 5, 5], training: true, momentum: 0.5, eps: 0.6, weight: true },
  { shape: [3, 2, 4], training: false, momentum: -1.2, weight: true },
  { shape: [3, 1], training: true, momentum: 0.0, weight: true },
  { shape: [3, 2, 3, 4], training: true, momentum: -1.0, eps: 0.5, weight: true },
  { shape: [3, 2, 3, 4], training: false, momentum: -1.0, eps: 0.5, weight: false },
  { shape: [2, 1], training: false, weight: false },
];

forEachBackend(
  "forward: batchNorm on PyTorch OpInfo samples (fp32/fp16/bf16)",
  ({ device: target }) => {
    const runs = BN_CASES.flatMap((c) =>
      (["float32", "float16", "bfloat16"] as DType[]).map((dtype) => ({ c, dtype }))
    );
    runAll(runs, ({ c, dtype }, k) => {
      const C = c.shape[1];
      const eps = c.eps ?? 1e-5;
      const momentum = c.momentum ?? 0.1;
      const x = uniform(c.shape, dtype, 7000 + k, -9, 9);
      const w = c.weight ? uniform([C], dtype, 7100 + k, -9, 9) : undefined;
      const b = c.weight ? uniform([C], dtype, 7200 + k, -9, 9) : undefined;
      const rm = uniform([C], dtype, 7300 + k, 0, 9);
      const rv = uniform([C], dtype, 7400 + k, 0.1, 9);
      const rm0 = f64(rm);
      const rv0 = f64(rv);
      const rmT = on(rm, target);
      const rvT = on(rv, target);
      const r = batchNorm({
        input: on(x, target),
        weight: onOpt(w, target),
        bias: onOpt(b, target),
        runningMean: rmT,
        runningVar: rvT,
        training: c.training,
        momentum,
        eps,
      });
      const label = `batchNorm ${JSON.stringify(c.shape)} ${dtype} training=${c.training}`;
      // PyTorch: running = (1 - momentum) * running + momentum * batch (unbiased variance).
      const e = batchNorm64({
        x: f64(x),
        shape: c.shape,
        weight: w ? f64(w) : undefined,
        bias: b ? f64(b) : undefined,
        runningMean: rm0,
        runningVar: rv0,
        training: c.training,
        momentum,
        eps,
      });
      expectClose(r.output, e.output, `${label} output`);
      if (c.training) {
        expectClose(r.saveMean, e.saveMean, `${label} saveMean`);
        expectClose(r.saveInvstd, e.saveInvstd, `${label} saveInvstd`);
      }
      expectClose(rmT, e.runningMean!, `${label} runningMean`);
      expectClose(rvT, e.runningVar!, `${label} runningVar`);
      if (!c.training) {
        assert.deepEqual(f64(rmT), rm0, `${label} runningMean untouched`);
        assert.deepEqual(f64(rvT), rv0, `${label} runningVar untouched`);
      }
    });
  },
);

forEachBackend("forward: batchNormStats mean/invstd on PyTorch OpInfo shapes", (ctx) => {
  const target = ctx.device;
  runAll(BN_CASES, (c, k) => {
    for (const dtype of ["float32", "float16", "bfloat16"] as const) {
      const x = uniform(c.shape, dtype, 7500 + k, -9, 9);
      const eps = c.eps ?? 1e-5;
      const call = () => batchNormStats({ input: on(x, target), eps });
      if (!chipAccepts(ctx.soc, "aclnnBatchNormStats", [dtype])) {
        assertChipRefuses(ctx, call, "input");
        continue;
      }
      const r = call();
      const e = batchNormStats64(f64(x), c.shape, eps);
      const label = `batchNormStats ${JSON.stringify(c.shape)} ${dtype}`;
      expectClose(r.mean, e.mean, `${label} mean`);
      expectClose(r.invstd, e.invstd, `${label} invstd`);
    }
  });
});

// pytorch/pytorch common_methods_invocations.py sample_inputs_group_norm: ((1,6,3), 2, eps .5),
// ((2,6,3), 2, eps -.5) (an aclnn error, below), ((1,3), 1), ((S,S,S), 1, eps .5), ((1,2), 1), weight/bias or None;
// plus hicann/ops-nn norm/group_norm_grad/examples (the [2,3,4] group-1 input: its forward
// gives the example's mean {6.5, 18.5} and rstd 0.2896827).
forEachBackend(
  "forward: groupNorm on PyTorch OpInfo samples and the CANN example",
  ({ device: target }) => {
    const cases: { shape: number[]; group: number; eps: number; affine: boolean }[] = [
      { shape: [1, 6, 3], group: 2, eps: 0.5, affine: true },
      { shape: [1, 6, 3], group: 2, eps: 0.5, affine: false },
      { shape: [1, 3], group: 1, eps: 1e-5, affine: true },
      { shape: [5, 5, 5], group: 1, eps: 0.5, affine: false },
      { shape: [1, 2], group: 1, eps: 1e-5, affine: false },
      { shape: [2, 8, 3, 3], group: 8, eps: 1e-5, affine: true },
    ];
    const runs = cases.flatMap((c) =>
      (["float32", "float16", "bfloat16"] as DType[]).map((dtype) => ({ c, dtype }))
    );
    runAll(runs, ({ c, dtype }, k) => {
      const [N, C] = c.shape;
      const HxW = c.shape.slice(2).reduce((a, v) => a * v, 1);
      const x = uniform(c.shape, dtype, 7600 + k, -9, 9);
      const gamma = c.affine ? uniform([C], dtype, 7700 + k, -9, 9) : undefined;
      const beta = c.affine ? uniform([C], dtype, 7800 + k, -9, 9) : undefined;
      const r = groupNorm({
        input: on(x, target),
        gamma: onOpt(gamma, target),
        beta: onOpt(beta, target),
        group: c.group,
        eps: c.eps,
      });
      const e = groupNorm64(
        f64(x),
        N,
        C,
        HxW,
        c.group,
        gamma ? f64(gamma) : undefined,
        beta ? f64(beta) : undefined,
        c.eps,
      );
      const label = `groupNorm ${JSON.stringify(c.shape)} g${c.group} ${dtype}`;
      expectClose(r.output, e.output, `${label} output`);
      expectClose(r.mean, e.mean, `${label} mean`);
      expectClose(r.rstd, e.rstd, `${label} rstd`);
    });
    // PyTorch's ((2,6,3), 2, eps -0.5) sample is not a valid aclnn call: aclnnGroupNorm.md lists
    // "eps小于等于0" among its 161002 errors (hicann/ops-nn norm/group_norm/docs).
    assert.throws(
      () =>
        groupNorm({
          input: on(uniform([2, 6, 3], "float32", 7900, -9, 9), target),
          group: 2,
          eps: -0.5,
        }),
      (e: unknown) => e instanceof AclnnError && e.code === 161002,
    );
    const x = fromValues(Array.from({ length: 24 }, (_, i) => i + 1), [2, 3, 4], "float32");
    const r = groupNorm({ input: on(x, target), group: 1, eps: 1e-5 });
    expectClose(r.mean, [6.5, 18.5], "CANN example mean");
    expectClose(r.rstd, [0.2896827, 0.2896827], "CANN example rstd");
  },
);

// SyncBatchNorm over W simulated ranks (pytorch/pytorch torch/nn/modules/_functions.py
// SyncBatchNorm.forward/backward: batch_norm_stats per rank, all-gather, gather_stats_with
// counts, batch_norm_backward_reduce per rank, all-reduce, batch_norm_backward_elemt) must
// equal BatchNorm training on the concatenated batch. Uneven per-rank batches (counts differ).
forEachBackend("sync: SyncBatchNorm chain over 3 ranks equals one-device BatchNorm", (ctx) => {
  const target = ctx.device;
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    const C = 4;
    const inner = [3, 5];
    const perRank = [2, 1, 3];
    const eps = 1e-5;
    const xs = perRank.map((n, w) => uniform([n, C, ...inner], dtype, 8000 + w, -2, 2));
    const dys = perRank.map((n, w) => uniform([n, C, ...inner], dtype, 8100 + w, -1, 1));
    const weight = uniform([C], "float32", 8200, 0.5, 1.5);
    // Forward statistics.
    if (!chipAccepts(ctx.soc, "aclnnBatchNormStats", [dtype])) {
      assertChipRefuses(ctx, () => batchNormStats({ input: on(xs[0], target), eps }), "input");
      continue;
    }
    const stats = xs.map((x) => batchNormStats({ input: on(x, target), eps }));
    const means = Tensor.fromArray(stats.flatMap((s) => [...f64(s.mean)]), [3, C]);
    const invstds = Tensor.fromArray(stats.flatMap((s) => [...f64(s.invstd)]), [3, C]);
    const counts = Tensor.fromArray(perRank.map((n) => n * 15), [3]);
    const g = batchNormGatherStatsWithCounts({
      input: on(xs[0], target),
      mean: on(means, target),
      invstd: on(invstds, target),
      counts: on(counts, target),
      eps,
      momentum: 0.1,
    });
    // Backward: per-rank reductions, all-reduced (summed) here.
    const sumDy = new Float64Array(C);
    const sumDyXmu = new Float64Array(C);
    for (let w = 0; w < 3; w++) {
      const r = batchNormReduceBackward({
        gradOut: on(dys[w], target),
        input: on(xs[w], target),
        mean: g.mean,
        invstd: g.invstd,
        weight: on(weight, target),
        weightG: false,
        biasG: false,
      });
      f64(r.sumDy!).forEach((v, c) => sumDy[c] += v);
      f64(r.sumDyXmu!).forEach((v, c) => sumDyXmu[c] += v);
    }
    // The one-device answer on the concatenated batch.
    const N = perRank.reduce((a, b) => a + b);
    const shape = [N, C, ...inner];
    const xAll = new Float64Array(xs.flatMap((x) => [...f64(x)]));
    const dyAll = new Float64Array(dys.flatMap((d) => [...f64(d)]));
    const st = batchStats64(xAll, shape);
    expectClose(g.mean, st.mean, `${dtype} gathered mean`);
    expectClose(
      g.invstd,
      invstdOf(st.variance, eps),
      `${dtype} gathered invstd`,
    );
    const ref = batchNormBackwardAt64(
      dyAll,
      xAll,
      shape,
      f64(weight),
      f64(g.mean),
      f64(g.invstd),
      true,
    );
    let offset = 0;
    for (let w = 0; w < 3; w++) {
      const dx = batchNormElemtBackward({
        gradOut: on(dys[w], target),
        input: on(xs[w], target),
        mean: g.mean,
        invstd: g.invstd,
        weight: on(weight, target),
        sumDy: on(Tensor.fromArray(sumDy, [C]), target),
        sumDyXmu: on(Tensor.fromArray(sumDyXmu, [C]), target),
        counter: on(Tensor.fromArray(perRank.map((n) => n * 15), [3], "int32"), target),
      });
      const n = xs[w].numel;
      assert.equal(dx.dtype, dtype);
      expectClose(dx, ref.gradInput.slice(offset, offset + n), `${dtype} rank ${w} gradInput`);
      offset += n;
    }
  }
});
