/**
 * SyncBatchNorm over W simulated ranks in one process (each rank a slice of the batch along
 * dim 0; all-gather = stack, all-reduce = sum): outputs, statistics, running statistics and
 * gradients equal the float64 oracle's whole-batch BatchNorm, on every backend (the NPU path
 * on the software CANN as Ascend 950 and as Atlas A2).
 */

import assert from "node:assert/strict";
import { createLocalProcessGroup } from "../../src/distributed/local_process_group.ts";
import { syncBatchNormBackward, syncBatchNormForward } from "../../src/ops/sync_batch_norm.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { forEachBackend } from "../helpers/backends.ts";
import { TOLERANCE } from "../helpers/tolerance.ts";
import {
  batchNorm64,
  batchNormBackwardAt64,
  batchNormForward64,
  batchNormReduceBackward64,
  dot,
  numericalGradient,
} from "../oracle/mod.ts";

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

/**
 * Every rank's outputs equal the oracle's whole-batch BatchNorm (training, running statistics
 * from 0/1, momentum 0.1): the output and gradInput slices, the global statistics, the running
 * statistics; each rank's gradWeight/gradBias are its local contributions (the oracle's
 * reductions over its slice at the global statistics).
 */
async function assertMatchesWholeBatch(p: Problem, splits: number[]) {
  const ranks = await runRanks(p, splits);
  const C = p.x.shape[1];
  const x = p.x.toFloat64Array();
  const dy = p.dy.toFloat64Array();
  const weight = p.weight.toFloat64Array();
  const eps = 1e-5;
  const whole = batchNorm64({
    x,
    shape: p.x.shape,
    weight,
    bias: p.bias.toFloat64Array(),
    runningMean: new Float64Array(C),
    runningVar: new Float64Array(C).fill(1),
    training: true,
    momentum: 0.1,
    eps,
  });
  const grads = batchNormBackwardAt64(
    dy,
    x,
    p.x.shape,
    weight,
    whole.saveMean,
    whole.saveInvstd,
    true,
  );
  const label = `${p.x.shape} ${p.x.dtype} splits ${splits}`;
  const perSample = x.length / p.x.shape[0];
  let at = 0;
  ranks.forEach((r, k) => {
    const n = splits[k] * perSample;
    const slice = (v: Float64Array) => v.slice(at, at + n);
    const rank = `${label} rank ${k}`;
    assertClose(r.fwd.output, slice(whole.output), undefined, `${rank} output`);
    assertClose(r.fwd.mean, whole.saveMean, undefined, `${rank} mean`);
    assertClose(r.fwd.invstd, whole.saveInvstd, undefined, `${rank} invstd`);
    assertClose(r.runningMean, whole.runningMean!, undefined, `${rank} runningMean`);
    assertClose(r.runningVar, whole.runningVar!, undefined, `${rank} runningVar`);
    assert.deepEqual(r.fwd.counts.shape, [splits.length]);
    assertClose(r.bwd.gradInput, slice(grads.gradInput), undefined, `${rank} gradInput`);
    const local = batchNormReduceBackward64(
      slice(dy),
      slice(x),
      [splits[k], ...p.x.shape.slice(1)],
      r.fwd.mean.toFloat64Array(),
      r.fwd.invstd.toFloat64Array(),
    );
    assertClose(r.bwd.gradWeight, local.gradWeight, undefined, `${rank} gradWeight`);
    assertClose(r.bwd.gradBias, local.gradBias, undefined, `${rank} gradBias`);
    at += n;
  });
}

forEachBackend(
  "SyncBatchNorm over 2 and 4 ranks equals whole-batch BatchNorm (float32)",
  async ({ device }) => {
    const on = (p: Problem): Problem => ({
      x: p.x.to(device),
      dy: p.dy.to(device),
      weight: p.weight.to(device),
      bias: p.bias.to(device),
    });
    await assertMatchesWholeBatch(on(problem([2, 3, 4, 5])), [1, 1]);
    await assertMatchesWholeBatch(on(problem([8, 64, 8, 8])), [4, 4]);
    await assertMatchesWholeBatch(on(problem([8, 16, 8, 8])), [2, 2, 2, 2]);
    await assertMatchesWholeBatch(on(problem([7, 5, 6])), [1, 3, 2, 1]); // uneven counts
    await assertMatchesWholeBatch(on(problem([6, 3])), [3, 3]); // rank 2 (N, C)
  },
);

Deno.test("SyncBatchNorm with float16/bfloat16 data (fp32 or own-dtype weights)", async () => {
  for (const dtype of ["float16", "bfloat16"] as DType[]) {
    await assertMatchesWholeBatch(problem([4, 6, 5], dtype), [2, 2]);
    await assertMatchesWholeBatch(problem([4, 6, 5], dtype, "float32"), [1, 1, 1, 1]);
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
  // float32 gradients at float32 global statistics vs exact derivatives.
  assertClose(concat(ranks.map((r) => r.bwd.gradInput!)), fd, TOLERANCE.float32);
});

Deno.test("SyncBatchNorm: channels-last rank inputs, masks, single rank", async () => {
  const x = Tensor.random([4, 5, 5, 3], { seed: 9 }).permute([0, 3, 1, 2]); // [4, 3, 5, 5]
  const p: Problem = { ...problem([4, 3, 5, 5]), x };
  await assertMatchesWholeBatch(p, [2, 2]);

  const [solo] = createLocalProcessGroup(1);
  const fwd = await syncBatchNormForward({ input: x, allGather: solo.allGather });
  const r = await syncBatchNormBackward({
    gradOut: p.dy,
    input: x,
    mean: fwd.mean,
    invstd: fwd.invstd,
    counts: fwd.counts,
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
  // No argument object at all: 161001 like every other operator, not a TypeError.
  await expectCode(() => syncBatchNormForward(undefined as never), NULLPTR, "args");
  await expectCode(() => syncBatchNormBackward(undefined as never), NULLPTR, "args");
  await expectCode(() => syncBatchNormBackward(null as never), NULLPTR, "args");
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
        mean: fwd.mean,
        invstd: fwd.invstd,
        counts: fwd.counts,
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
        mean: fwd.mean,
        invstd: fwd.invstd,
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
        mean: fwd.mean,
        invstd: fwd.invstd,
        counts: fwd.counts,
        outputMask: [true],
        allReduce: (t) => t,
      }),
    INVALID,
    "outputMask",
  );
  assert.throws(() => createLocalProcessGroup(0), RangeError);
});

// An empty rank sends count 0 and its row must weigh nothing, first or not: CANN's gather-stats
// reduces the ranks as sums weighted by their counts (ops-nn
// aclnn_batch_norm_gather_stats_with_counts.cpp ReduceMeanWithCount; the 950's fused kernel), where
// a count of 0 adds nothing, as in the CPU backend's closed formula (the issue 12 failure came
// from a sequential merge with a factor 1 / (n + count), which the software CANN no longer models).
forEachBackend("SyncBatchNorm: an empty rank adds nothing, wherever it is", async ({ device }) => {
  const x = Tensor.random([6, 2, 3], { seed: 3, distribution: "normal", low: 1, high: 2 });
  const whole = batchNorm64({
    x: x.toFloat64Array(),
    shape: x.shape,
    training: true,
    momentum: 0.1,
    eps: 1e-5,
  });
  for (const empty of [1, 0, 2]) {
    const parts = [x.slice(0, 0, 3), x.slice(0, 3, 6)];
    parts.splice(empty, 0, x.slice(0, 0, 0));
    const group = createLocalProcessGroup(3);
    const ranks = await Promise.all(
      group.map((g, r) =>
        syncBatchNormForward({ input: parts[r].to(device), eps: 1e-5, allGather: g.allGather })
      ),
    );
    const what = `empty rank ${empty}`;
    for (const r of ranks) {
      assertClose(r.mean, whole.saveMean, undefined, `${what}: mean`);
      assertClose(r.invstd, whole.saveInvstd, undefined, `${what}: invstd`);
    }
    assertClose(concat(ranks.map((r) => r.output)), whole.output, undefined, `${what}: output`);
  }
});

/**
 * float16 data with a constant channel (var + eps < 1.53e-5, so invstd > 256): the statistics
 * stay float32 end to end, as torch_npu keeps them. A float16 invstd would make the chip rebuild
 * the variance as 1/invstd^2 - eps in float16 (ops-nn aclnn_batch_norm_elemt.cpp), which
 * overflows: NaN where x == mean. Two ranks, on Atlas A2, A3 and Ascend 950.
 */
forEachBackend(
  "SyncBatchNorm float16 with a constant channel equals the CPU backend",
  async ({ device }) => {
    const shape = [4, 3, 6];
    const base = Tensor.random(shape, { seed: 11, low: -1, high: 1 }).toFloat64Array();
    // Channel 1 constant (var 0), channel 2 nearly constant (var ~1e-8).
    const values = base.map((v, i) => {
      const c = Math.floor(i / 6) % 3;
      return c === 1 ? 0.5 : c === 2 ? 2 + v * 1e-4 : v;
    });
    const run = async (d: typeof device) => {
      const x = Tensor.fromArray(values, shape, "float16").to(d);
      const dy = Tensor.random(shape, { seed: 12, dtype: "float16" }).to(d);
      const group = createLocalProcessGroup(2);
      return await Promise.all(group.map(async (g, r) => {
        const input = x.slice(0, 2 * r, 2 * r + 2);
        const fwd = await syncBatchNormForward({ input, allGather: g.allGather });
        const bwd = await syncBatchNormBackward({
          gradOut: dy.slice(0, 2 * r, 2 * r + 2),
          input,
          mean: fwd.mean,
          invstd: fwd.invstd,
          counts: fwd.counts,
          allReduce: g.allReduce,
        });
        return [fwd.output, fwd.invstd, bwd.gradInput!].map((t) => t.toFloat64Array());
      }));
    };
    const cpu = await run("cpu");
    const npu = await run(device);
    cpu.forEach((rank, r) =>
      rank.forEach((want, k) => {
        const got = npu[r][k];
        assert.ok(got.every(Number.isFinite), `rank ${r} output ${k} is finite: ${got}`);
        assertClose(got, want, TOLERANCE.float16, `rank ${r} output ${k}`);
      })
    );
    assert.ok(cpu[0][1][1] > 256, `invstd of the constant channel is ${cpu[0][1][1]}`);
  },
  { cpu: false, socs: ["Ascend910B4", "Ascend910_9391", "Ascend950PR_9599", "Ascend910_9599"] },
);
