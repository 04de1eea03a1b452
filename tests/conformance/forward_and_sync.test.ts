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
  groupNorm,
  Tensor,
} from "../../mod.ts";
import {
  BN_FORWARD_CASES,
  bnForwardInputs,
  bnStatsInput,
  FORWARD_DTYPES,
  forwardRuns,
  GN_FORWARD_CASES,
  gnForwardExample,
  gnForwardInputs,
} from "../fixtures/conformance/forward.ts";
import { assertChipRefuses, chipAccepts, forEachBackend } from "../helpers/backends.ts";
import {
  batchNorm64,
  batchNormBackwardAt64,
  batchNormStats64,
  batchStats64,
  groupNorm64,
  invstdOf,
} from "../oracle/mod.ts";
import { expectClose, f64, on, onOpt, runAll, uniform } from "./common.ts";

// PyTorch OpInfo samples (tests/fixtures/conformance/forward.ts).
forEachBackend(
  "forward: batchNorm on PyTorch OpInfo samples (fp32/fp16/bf16)",
  ({ device: target }) => {
    runAll(forwardRuns(BN_FORWARD_CASES), ({ c, dtype }, k) => {
      const i = bnForwardInputs(c, dtype, k);
      const { eps, momentum } = i;
      const x = i.input;
      const w = i.weight;
      const b = i.bias;
      const rm = i.runningMean;
      const rv = i.runningVar;
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
  runAll(BN_FORWARD_CASES, (c, k) => {
    for (const dtype of FORWARD_DTYPES) {
      const x = bnStatsInput(c, dtype, k);
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

// PyTorch OpInfo group_norm samples and the CANN example (tests/fixtures/conformance/forward.ts).
forEachBackend(
  "forward: groupNorm on PyTorch OpInfo samples and the CANN example",
  ({ device: target }) => {
    runAll(forwardRuns(GN_FORWARD_CASES), ({ c, dtype }, k) => {
      const [N, C] = c.shape;
      const HxW = c.shape.slice(2).reduce((a, v) => a * v, 1);
      const { input: x, gamma, beta } = gnForwardInputs(c, dtype, k);
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
    const example = gnForwardExample();
    const r = groupNorm({ input: on(example.input, target), group: 1, eps: 1e-5 });
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
