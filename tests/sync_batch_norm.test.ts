/**
 * SyncBatchNorm over W simulated ranks in one process (each rank a slice of the batch along
 * dim 0; all-gather = stack, all-reduce = sum): outputs, statistics, running statistics and
 * gradients equal single-process batchNorm/batchNormBackward on the whole batch.
 */

import assert from "node:assert/strict";
import { batchNorm } from "../src/ops/batch_norm.ts";
import { batchNormBackward } from "../src/ops/batch_norm_backward.ts";
import { createLocalProcessGroup } from "../src/ops/local_process_group.ts";
import { syncBatchNormBackward, syncBatchNormForward } from "../src/ops/sync_batch_norm.ts";
import type { DType } from "../src/tensor/dtype.ts";
import { Tensor } from "../src/tensor/tensor.ts";
import { assertClose, toleranceFor } from "./helpers/assert.ts";
import { liveDelta, openSim, simStats } from "./helpers/ffi_sim.ts";
import { batchNormForward64, dot, numericalGradient } from "./helpers/reference.ts";

const NULLPTR = 161001;
const INVALID = 161002;

function concat(parts: Tensor[]): Float64Array {
  const arrays = parts.map((t) => t.toFloat64Array());
  const out = new Float64Array(arrays.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of arrays) {
    out.set(a, at);
    at += a.length;
  }
  return out;
}

function sum(parts: Tensor[]): Float64Array {
  const out = new Float64Array(parts[0].numel);
  for (const t of parts) t.toFloat64Array().forEach((v, i) => out[i] += v);
  return out;
}

interface Problem {
  x: Tensor;
  dy: Tensor;
  weight: Tensor;
  bias: Tensor;
}

function problem(shape: number[], dtype: DType = "float32", paramDType: DType = dtype): Problem {
  const C = shape[1];
  return {
    x: Tensor.random(shape, { seed: 1, dtype, low: -1, high: 3 }),
    dy: Tensor.random(shape, { seed: 2, dtype }),
    weight: Tensor.random([C], { seed: 3, dtype: paramDType, low: 0.5, high: 1.5 }),
    bias: Tensor.random([C], { seed: 4, dtype: paramDType }),
  };
}

/** Runs forward + backward on every rank concurrently; `splits` are the ranks' batch sizes. */
async function runRanks(p: Problem, splits: number[], momentum = 0.1, eps = 1e-5) {
  const C = p.x.shape[1];
  const group = createLocalProcessGroup(splits.length);
  const starts = splits.map((_, r) => splits.slice(0, r).reduce((a, b) => a + b, 0));
  return await Promise.all(group.map(async (g, r) => {
    const input = p.x.slice(0, starts[r], starts[r] + splits[r]);
    const gradOut = p.dy.slice(0, starts[r], starts[r] + splits[r]);
    const runningMean = Tensor.zeros([C], "float32", p.x.device);
    const runningVar = Tensor.ones([C], "float32", p.x.device);
    const fwd = await syncBatchNormForward({
      input,
      weight: p.weight,
      bias: p.bias,
      runningMean,
      runningVar,
      momentum,
      eps,
      allGather: g.allGather,
    });
    const bwd = await syncBatchNormBackward({
      gradOut,
      input,
      weight: p.weight,
      mean: fwd.mean,
      invstd: fwd.invstd,
      counts: fwd.counts,
      allReduce: g.allReduce,
    });
    return { fwd, bwd, runningMean, runningVar };
  }));
}

function single(p: Problem, momentum = 0.1, eps = 1e-5) {
  const C = p.x.shape[1];
  const runningMean = Tensor.zeros([C]);
  const runningVar = Tensor.ones([C]);
  const fwd = batchNorm({
    input: p.x,
    weight: p.weight,
    bias: p.bias,
    runningMean,
    runningVar,
    training: true,
    momentum,
    eps,
  });
  const bwd = batchNormBackward({
    gradOut: p.dy,
    input: p.x,
    weight: p.weight,
    saveMean: fwd.saveMean,
    saveInvstd: fwd.saveInvstd,
    training: true,
    eps,
  });
  return { fwd, bwd, runningMean, runningVar };
}

async function assertMatchesSingle(
  p: Problem,
  splits: number[],
  tol: { rtol: number; atol: number },
) {
  const ranks = await runRanks(p, splits);
  const ref = single(p);
  const label = `${p.x.shape} ${p.x.dtype} splits ${splits}`;
  assertClose(concat(ranks.map((r) => r.fwd.output)), ref.fwd.output, tol, `${label} output`);
  for (const r of ranks) {
    assertClose(r.fwd.mean, ref.fwd.saveMean, { rtol: 1e-5, atol: 1e-5 }, `${label} mean`);
    assertClose(r.fwd.invstd, ref.fwd.saveInvstd, { rtol: 1e-4, atol: 1e-5 }, `${label} invstd`);
    assertClose(r.runningMean, ref.runningMean, { rtol: 1e-5, atol: 1e-6 }, `${label} rm`);
    assertClose(r.runningVar, ref.runningVar, { rtol: 1e-4, atol: 1e-6 }, `${label} rv`);
    assert.deepEqual(r.fwd.counts.shape, [splits.length]);
  }
  assertClose(
    concat(ranks.map((r) => r.bwd.gradInput!)),
    ref.bwd.gradInput!,
    tol,
    `${label} gradInput`,
  );
  assertClose(sum(ranks.map((r) => r.bwd.gradWeight!)), ref.bwd.gradWeight!, {
    rtol: tol.rtol * 10,
    atol: tol.atol * 10,
  }, `${label} gradWeight`);
  assertClose(sum(ranks.map((r) => r.bwd.gradBias!)), ref.bwd.gradBias!, {
    rtol: tol.rtol * 10,
    atol: tol.atol * 10,
  }, `${label} gradBias`);
}

Deno.test("SyncBatchNorm over 2 and 4 ranks equals single-process BatchNorm (float32)", async () => {
  const tol = { rtol: 1e-4, atol: 1e-4 };
  await assertMatchesSingle(problem([2, 3, 4, 5]), [1, 1], tol);
  await assertMatchesSingle(problem([8, 64, 8, 8]), [4, 4], tol);
  await assertMatchesSingle(problem([8, 64, 8, 8]), [2, 2, 2, 2], tol);
  await assertMatchesSingle(problem([7, 5, 6]), [1, 3, 2, 1], tol); // uneven counts
  await assertMatchesSingle(problem([6, 3]), [3, 3], tol); // rank 2 (N, C)
});

Deno.test("SyncBatchNorm with float16/bfloat16 data (fp32 or own-dtype weights)", async () => {
  for (const dtype of ["float16", "bfloat16"] as DType[]) {
    const t = toleranceFor(dtype);
    const tol = { rtol: t.rtol * 4, atol: t.atol * 4 };
    await assertMatchesSingle(problem([4, 6, 5], dtype), [2, 2], tol);
    await assertMatchesSingle(problem([4, 6, 5], dtype, "float32"), [1, 1, 1, 1], tol);
  }
});

Deno.test("SyncBatchNorm backward equals finite differences of the whole-batch forward", async () => {
  const shape = [4, 2, 3];
  const p = problem(shape);
  const eps = 1e-3;
  const ranks = await runRanks(p, [2, 2], 0.1, eps);
  const dy = p.dy.toFloat64Array();
  const w = p.weight.toFloat64Array();
  const b = p.bias.toFloat64Array();
  const fd = numericalGradient(
    (v) => dot(dy, batchNormForward64(v, shape, w, b, eps).y),
    p.x.toFloat64Array(),
  );
  assertClose(concat(ranks.map((r) => r.bwd.gradInput!)), fd, { rtol: 1e-3, atol: 1e-4 });
});

Deno.test("SyncBatchNorm: channels-last rank inputs, masks, single rank", async () => {
  const x = Tensor.random([4, 5, 5, 3], { seed: 9 }).permute([0, 3, 1, 2]); // [4, 3, 5, 5]
  const p: Problem = { ...problem([4, 3, 5, 5]), x };
  await assertMatchesSingle(p, [2, 2], { rtol: 1e-4, atol: 1e-4 });

  const [solo] = createLocalProcessGroup(1);
  const fwd = await syncBatchNormForward({ input: x, allGather: solo.allGather });
  const r = await syncBatchNormBackward({
    gradOut: p.dy,
    input: x,
    ...fwd,
    outputMask: [false, true, false],
    allReduce: () => {
      throw new Error("allReduce must not be called without gradInput");
    },
  });
  assert.equal(r.gradInput, null);
  assert.equal(r.gradBias, null);
  assert.deepEqual(r.gradWeight?.shape, [3]);
});

Deno.test("SyncBatchNorm: errors name the argument", async () => {
  const input = Tensor.random([2, 3, 4], { seed: 1 });
  const expectCode = async (fn: () => Promise<unknown>, code: number, argument: string) => {
    await assert.rejects(fn, (e: { code?: number; argument?: string; message?: string }) => {
      assert.equal(e.code, code, e.message);
      assert.equal(e.argument, argument, e.message);
      return true;
    });
  };
  await expectCode(
    () => syncBatchNormForward({ input: undefined, allGather: (t) => t.reshape([1, -1]) }),
    NULLPTR,
    "input",
  );
  await expectCode(
    () => syncBatchNormForward({ input, allGather: undefined as unknown as () => Tensor }),
    INVALID,
    "allGather",
  );
  await expectCode(
    () => syncBatchNormForward({ input, allGather: (t) => t }), // not stacked: [2C + 1]
    INVALID,
    "allGather",
  );
  await expectCode(
    () => syncBatchNormForward({ input: Tensor.zeros([2, 3], "int32"), allGather: (t) => t }),
    INVALID,
    "input",
  );
  const fwd = await syncBatchNormForward({ input, allGather: (t) => t.reshape([1, -1]) });
  await expectCode(
    () =>
      syncBatchNormBackward({
        gradOut: input,
        input,
        ...fwd,
        allReduce: (t) => t.slice(0, 0, 2),
      }),
    INVALID,
    "allReduce",
  );
  await expectCode(
    () =>
      syncBatchNormBackward({
        gradOut: input,
        input,
        ...fwd,
        counts: undefined,
        allReduce: (t) => t,
      }),
    NULLPTR,
    "counts",
  );
  await expectCode(
    () =>
      syncBatchNormBackward({
        gradOut: input,
        input,
        ...fwd,
        outputMask: [true],
        allReduce: (t) => t,
      }),
    INVALID,
    "outputMask",
  );
  assert.throws(() => createLocalProcessGroup(0), RangeError);
});

Deno.test("SyncBatchNorm on the software CANN (4 ranks) equals the CPU backend", async () => {
  const before = simStats();
  {
    using npu = openSim();
    const host = problem([8, 5, 3, 4]);
    const dev: Problem = {
      x: host.x.to(npu),
      dy: host.dy.to(npu),
      weight: host.weight.to(npu),
      bias: host.bias.to(npu),
    };
    const cpu = await runRanks(host, [2, 2, 2, 2]);
    const npuRanks = await runRanks(dev, [2, 2, 2, 2]);
    const tol = { rtol: 1e-4, atol: 1e-4 };
    npuRanks.forEach((r, i) => {
      assert.notEqual(r.fwd.output.device, "cpu");
      assertClose(r.fwd.output, cpu[i].fwd.output, tol, `rank ${i} output`);
      assertClose(r.fwd.invstd, cpu[i].fwd.invstd, tol, `rank ${i} invstd`);
      assertClose(r.runningVar, cpu[i].runningVar, tol, `rank ${i} runningVar`);
      assertClose(r.bwd.gradInput!, cpu[i].bwd.gradInput!, tol, `rank ${i} gradInput`);
      assertClose(r.bwd.gradWeight!, cpu[i].bwd.gradWeight!, tol, `rank ${i} gradWeight`);
    });
  }
  assert.deepEqual(liveDelta(before, simStats()), {});
});
