/**
 * batchNormGatherStatsWithCounts (aclnnBatchNormGatherStatsWithCounts): per-rank statistics
 * merged into the whole batch's (with the unbiased running update), float16/bfloat16
 * statistics with outputs in mean's dtype, every documented error code on the exact argument;
 * and, on every backend, a rank of count 0, which contributes nothing, also when first.
 *
 * @module
 */

import assert from "node:assert/strict";
import { batchNormGatherStatsWithCounts } from "../../src/ops/batch_norm_gather_stats_with_counts.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertAclnnError, assertClose } from "../helpers/assert.ts";
import { forEachBackend, on } from "../helpers/backends.ts";
import { TOLERANCE, toleranceFor } from "../helpers/tolerance.ts";
import { batchNorm64, batchNormGatherStatsWithCounts64 } from "../oracle/mod.ts";
import { INVALID, NULLPTR, rnd } from "../helpers/op_inputs.ts";
import { perRank } from "../fixtures/per_rank_stats.ts";

const F32 = TOLERANCE.float32;

Deno.test("batchNormGatherStatsWithCounts: global stats equal whole-batch stats; running update unbiased", () => {
  const x = rnd([7, 6, 3, 5], 3, "float32", -1, 4);
  const eps = 1e-5;
  const momentum = 0.3;
  const g = perRank(x, [3, 1, 2, 1], eps);
  const rm0 = rnd([6], 4);
  const rv0 = rnd([6], 5, "float32", 0.5, 2);
  const runningMean = rm0.clone();
  const runningVar = rv0.clone();
  const r = batchNormGatherStatsWithCounts({
    input: x.slice(0, 0, 3),
    ...g,
    runningMean,
    runningVar,
    momentum,
    eps,
  });
  // The whole batch's statistics and running update (batchNorm in training on all ranks' data).
  const whole = batchNorm64({
    x: x.toFloat64Array(),
    shape: x.shape,
    runningMean: rm0.toFloat64Array(),
    runningVar: rv0.toFloat64Array(),
    training: true,
    momentum,
    eps,
  });
  assertClose(r.mean, whole.saveMean, F32, "mean");
  assertClose(r.invstd, whole.saveInvstd, F32, "invstd");
  assertClose(runningMean, whole.runningMean!, F32, "runningMean");
  assertClose(runningVar, whole.runningVar!, F32, "runningVar");
  assert.equal(r.mean.dtype, "float32");
});

Deno.test("batchNormGatherStatsWithCounts: float16/bfloat16 stats, outputs in mean's dtype", () => {
  const x = rnd([8, 4, 6], 6, "float32", -1, 2);
  for (const dtype of ["float16", "bfloat16"] as DType[]) {
    const g = perRank(x, [4, 4], 1e-5, dtype);
    const r = batchNormGatherStatsWithCounts({ input: x, ...g, momentum: 0.1, eps: 1e-5 });
    assert.equal(r.mean.dtype, dtype);
    // The oracle on the same (rounded) per-rank statistics.
    const e = batchNormGatherStatsWithCounts64({
      mean: g.mean.toFloat64Array(),
      invstd: g.invstd.toFloat64Array(),
      counts: g.counts.toFloat64Array(),
      C: 4,
      momentum: 0.1,
      eps: 1e-5,
    });
    assertClose(r.mean, e.mean, toleranceFor(dtype), `${dtype} mean`);
    assertClose(r.invstd, e.invstd, toleranceFor(dtype), `${dtype} invstd`);
  }
});

Deno.test("batchNormGatherStatsWithCounts: documented error codes", () => {
  const x = rnd([4, 3], 1);
  const ok = {
    input: x,
    mean: Tensor.zeros([2, 3]),
    invstd: Tensor.ones([2, 3]),
    counts: Tensor.fromArray([2, 2], [2]),
    momentum: 0.1,
    eps: 1e-5,
  };
  batchNormGatherStatsWithCounts(ok);
  for (const name of ["input", "mean", "invstd", "counts"] as const) {
    assertAclnnError(() => batchNormGatherStatsWithCounts({ ...ok, [name]: null }), NULLPTR, name);
  }
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, out: { mean: null } }),
    NULLPTR,
    "out.mean",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, counts: Tensor.fromArray([2, 2], [2], "int32") }),
    INVALID,
    "counts",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, runningVar: Tensor.zeros([3], "int32") }),
    INVALID,
    "runningVar",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, input: Tensor.zeros([3]) }),
    INVALID,
    "input",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, mean: Tensor.zeros([6]) }),
    INVALID,
    "mean",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, invstd: Tensor.ones([2, 3, 1]) }),
    INVALID,
    "invstd",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, counts: Tensor.ones([2, 1]) }),
    INVALID,
    "counts",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, counts: Tensor.ones([3]) }),
    INVALID,
    "counts",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, invstd: Tensor.ones([1, 3]) }),
    INVALID,
    "invstd",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, mean: Tensor.zeros([2, 4]) }),
    INVALID,
    "mean",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, runningMean: Tensor.zeros([4]) }),
    INVALID,
    "runningMean",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, out: { invstd: Tensor.zeros([2]) } }),
    INVALID,
    "out.invstd",
  );
  assertAclnnError(
    () => batchNormGatherStatsWithCounts({ ...ok, momentum: Number.NaN }),
    INVALID,
    "momentum",
  );
});

// batchNormGatherStatsWithCounts takes counts >= 0 (a rank may hold no element). CANN reduces the
// ranks as sums weighted by their counts (ops-nn aclnn_batch_norm_gather_stats_with_counts.cpp
// ReduceMeanWithCount; the 950's fused kernel: tests/sim/sim_ops.c run_gather_stats), where a
// count of 0 contributes nothing wherever it is, as in the CPU backend's closed formula; PyTorch's
// CUDA kernel, which merges ranks one by one with a factor 1 / (n + count), would give NaN for a
// leading count of 0 (0 * 0 * 1/0), and drops such ranks first.
forEachBackend(
  "batchNormGatherStatsWithCounts: a rank of count 0 contributes nothing, also first",
  (ctx) => {
    const d = ctx.device;
    const C = 3;
    const mean = Tensor.fromArray([5, 5, 5, 1, 2, 3, 4, 5, 6], [3, C]);
    const invstd = Tensor.fromArray([9, 9, 9, 1, 1, 1, 0.5, 0.5, 0.5], [3, C]);
    for (const counts of [[4, 0, 4], [0, 4, 4]]) {
      const e = batchNormGatherStatsWithCounts64({
        mean: mean.toFloat64Array(),
        invstd: invstd.toFloat64Array(),
        counts,
        C,
        momentum: 0.1,
        eps: 1e-5,
      });
      // Without the empty rank, the same answer: it contributes nothing.
      const kept = counts.map((n, w) => n > 0 ? w : -1).filter((w) => w >= 0);
      const pick = (t: Tensor) =>
        kept.flatMap((w) => [...t.toFloat64Array().slice(w * C, w * C + C)]);
      const without = batchNormGatherStatsWithCounts64({
        mean: pick(mean),
        invstd: pick(invstd),
        counts: kept.map((w) => counts[w]),
        C,
        momentum: 0.1,
        eps: 1e-5,
      });
      assertClose(e.mean, without.mean, undefined, "oracle: an empty rank adds nothing");
      const r = batchNormGatherStatsWithCounts({
        input: Tensor.zeros([2, C], "float32", d),
        mean: on(mean, d),
        invstd: on(invstd, d),
        counts: on(Tensor.fromArray(counts, [3]), d),
        momentum: 0.1,
        eps: 1e-5,
      });
      assertClose(r.mean, e.mean, undefined, `counts ${counts}: mean`);
      assertClose(r.invstd, e.invstd, undefined, `counts ${counts}: invstd`);
    }
  },
);
