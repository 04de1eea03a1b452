/**
 * The forward operators on every backend (the NPU path on the software CANN as Ascend 950 and
 * as Atlas A2): batchNormStats (refused where the chip refuses the dtype),
 * batchNormGatherStatsWithCounts, batchNormElemt, batchNormElemtBackward, batchNorm in training
 * and evaluation, and groupNorm, each output on the device in the oracle's dtype and shape and
 * equal to the float64 oracle, for float32, float16 and bfloat16 data.
 *
 * @module
 */

import assert from "node:assert/strict";
import { batchNorm } from "../../src/ops/batch_norm.ts";
import { batchNormElemt } from "../../src/ops/batch_norm_elemt.ts";
import { batchNormElemtBackward } from "../../src/ops/batch_norm_elemt_backward.ts";
import { batchNormGatherStatsWithCounts } from "../../src/ops/batch_norm_gather_stats_with_counts.ts";
import { batchNormStats } from "../../src/ops/batch_norm_stats.ts";
import { groupNorm } from "../../src/ops/group_norm.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import {
  assertChipRefuses,
  type BackendContext,
  chipAccepts,
  forEachBackend,
  on,
} from "../helpers/backends.ts";
import {
  batchNorm64,
  batchNormElemt64,
  batchNormElemtBackward64,
  batchNormGatherStatsWithCounts64,
  batchNormStats64,
  groupNorm64,
} from "../oracle/mod.ts";
import { rnd } from "../helpers/op_inputs.ts";
import { perRank } from "../fixtures/per_rank_stats.ts";

/** An output on the backend's device, in the oracle's dtype and shape, equal to its values. */
function expectOn(
  ctx: BackendContext,
  got: Tensor,
  dtype: DType,
  shape: readonly number[],
  values: ArrayLike<number>,
  what: string,
): void {
  assert.equal(got.device, ctx.device, `${what} device`);
  assert.equal(got.dtype, dtype, `${what} dtype`);
  assert.deepEqual(got.shape, shape, `${what} shape`);
  assertClose(got, values, undefined, what);
}

forEachBackend("forward ops: every forward op equals the oracle", (ctx) => {
  const d = ctx.device;
  for (const dtype of ["float32", "float16", "bfloat16"] as DType[]) {
    const shape = [4, 6, 3, 5];
    const C = shape[1];
    const x = rnd(shape, 1, dtype, -1, 2);
    const xd = on(x, d);
    const x64 = x.toFloat64Array();
    const label = (op: string) => `${op} ${dtype}`;

    const stats = () => batchNormStats({ input: xd, eps: 1e-4 });
    if (chipAccepts(ctx.soc, "aclnnBatchNormStats", [dtype])) {
      const s = stats();
      const e = batchNormStats64(x64, shape, 1e-4);
      expectOn(ctx, s.mean, "float32", [C], e.mean, label("stats mean"));
      expectOn(ctx, s.invstd, "float32", [C], e.invstd, label("stats invstd"));
    } else assertChipRefuses(ctx, stats, "input");

    const g = perRank(x, [1, 3], 1e-4, "float32");
    const rm = rnd([C], 4);
    const rv = rnd([C], 5, "float32", 0.5, 2);
    const rmd = on(rm.clone(), d);
    const rvd = on(rv.clone(), d);
    const gs = batchNormGatherStatsWithCounts({
      input: xd,
      mean: on(g.mean, d),
      invstd: on(g.invstd, d),
      counts: on(g.counts, d),
      runningMean: rmd,
      runningVar: rvd,
      momentum: 0.2,
      eps: 1e-4,
    });
    const ge = batchNormGatherStatsWithCounts64({
      mean: g.mean.toFloat64Array(),
      invstd: g.invstd.toFloat64Array(),
      counts: g.counts.toFloat64Array(),
      C,
      runningMean: rm.toFloat64Array(),
      runningVar: rv.toFloat64Array(),
      momentum: 0.2,
      eps: 1e-4,
    });
    expectOn(ctx, gs.mean, "float32", [C], ge.mean, label("gather mean"));
    expectOn(ctx, gs.invstd, "float32", [C], ge.invstd, label("gather invstd"));
    expectOn(ctx, rmd, "float32", [C], ge.runningMean!, label("gather runningMean"));
    expectOn(ctx, rvd, "float32", [C], ge.runningVar!, label("gather runningVar"));

    const stat = (seed: number, low = -1, high = 1) => rnd([C], seed, dtype, low, high);
    const p = { mean: stat(6), invstd: stat(7, 0.5, 2), weight: stat(8), bias: stat(9) };
    expectOn(
      ctx,
      batchNormElemt({
        input: xd,
        mean: on(p.mean, d),
        invstd: on(p.invstd, d),
        weight: on(p.weight, d),
        bias: on(p.bias, d),
      }),
      dtype,
      shape,
      batchNormElemt64({
        x: x64,
        shape,
        mean: p.mean.toFloat64Array(),
        invstd: p.invstd.toFloat64Array(),
        weight: p.weight.toFloat64Array(),
        bias: p.bias.toFloat64Array(),
      }),
      label("elemt"),
    );

    const dy = rnd(shape, 10, dtype);
    const eb = {
      mean: rnd([C], 11),
      invstd: rnd([C], 12, "float32", 0.5, 2),
      weight: rnd([C], 13),
      sumDy: rnd([C], 14),
      sumDyXmu: rnd([C], 15),
      counter: Tensor.fromArray([30, 30], [2], "int32"),
    };
    expectOn(
      ctx,
      batchNormElemtBackward({
        gradOut: on(dy, d),
        input: xd,
        mean: on(eb.mean, d),
        invstd: on(eb.invstd, d),
        weight: on(eb.weight, d),
        sumDy: on(eb.sumDy, d),
        sumDyXmu: on(eb.sumDyXmu, d),
        counter: on(eb.counter, d),
      }),
      dtype,
      shape,
      batchNormElemtBackward64({
        dy: dy.toFloat64Array(),
        x: x64,
        shape,
        mean: eb.mean.toFloat64Array(),
        invstd: eb.invstd.toFloat64Array(),
        weight: eb.weight.toFloat64Array(),
        sumDy: eb.sumDy.toFloat64Array(),
        sumDyXmu: eb.sumDyXmu.toFloat64Array(),
        counter: [30, 30],
      }),
      label("elemt backward"),
    );

    for (const training of [true, false]) {
      const rm2 = rnd([C], 16);
      const rv2 = rnd([C], 17, "float32", 0.5, 2);
      const rm2d = on(rm2.clone(), d);
      const rv2d = on(rv2.clone(), d);
      const w = rnd([C], 18);
      const flags = { training, momentum: 0.3, eps: 1e-4 };
      const bn = batchNorm({
        input: xd,
        weight: on(w, d),
        runningMean: rm2d,
        runningVar: rv2d,
        ...flags,
      });
      const e = batchNorm64({
        x: x64,
        shape,
        weight: w.toFloat64Array(),
        runningMean: rm2.toFloat64Array(),
        runningVar: rv2.toFloat64Array(),
        ...flags,
      });
      const what = label(`batchNorm training=${training}`);
      expectOn(ctx, bn.output, dtype, shape, e.output, `${what} output`);
      expectOn(ctx, rm2d, "float32", [C], e.runningMean!, `${what} runningMean`);
      expectOn(ctx, rv2d, "float32", [C], e.runningVar!, `${what} runningVar`);
      const saves = training ? [C] : [0];
      expectOn(ctx, bn.saveMean, training ? "float32" : dtype, saves, e.saveMean, `${what} mean`);
      expectOn(ctx, bn.saveInvstd, training ? "float32" : dtype, saves, e.saveInvstd, what);
    }

    const gamma = rnd([C], 19, dtype);
    const gn = groupNorm({ input: xd, gamma: on(gamma, d), group: 3, eps: 1e-4 });
    const ge2 = groupNorm64(x64, 4, C, 15, 3, gamma.toFloat64Array(), undefined, 1e-4);
    expectOn(ctx, gn.output, dtype, shape, ge2.output, label("groupNorm output"));
    expectOn(ctx, gn.mean, dtype, [4, 3], ge2.mean, label("groupNorm mean"));
    expectOn(ctx, gn.rstd, dtype, [4, 3], ge2.rstd, label("groupNorm rstd"));
  }
});
