/**
 * The CPU backend's calls that the streaming kernels cannot run on the caller's tensors as they
 * are (src/backends/cpu/channels/staging.ts): mixed data dtypes (float32 copies, as aclnn promotes),
 * outputs that overlap an input other than element for element or write an element twice
 * (scratch output, then a copy), GroupNorm data with no strided [N, C, HxW] view (contiguous
 * copies), and storages beyond int32 element indices (copies of the view). Each runs the fast
 * kernels on the copies: the results must match the float64 oracle's kernels within 1 ulp and
 * the same call on copies made by hand bit for bit. Also aclnnBatchNormGatherStatsWithCounts,
 * which has no data pass, against the oracle's kernel bit for bit, and empty inputs, which get
 * CANN's fills without a data pass.
 */

import assert from "node:assert/strict";
import { cpuKernels } from "../../src/backends/cpu/mod.ts";
import { channelGeometry } from "../../src/backends/types.ts";
import { rowGeometry } from "../../src/backends/row_norm_types.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import {
  assertSameBits,
  assertSetsF32,
  batchNormTerms,
  type TensorSet,
  twinSet,
  values,
} from "../fixtures/cpu_cases.ts";
import { referenceKernels } from "../oracle/kernels/mod.ts";

type Kernels = typeof cpuKernels;
type Run = (kernels: Kernels, set: TensorSet) => void;

/** Runs the CPU kernels on `set` and the oracle's on its twin; compares every tensor. */
function compare(name: string, set: TensorSet, run: Run): void {
  const expected = twinSet(set);
  run(referenceKernels, expected);
  run(cpuKernels, set);
  // The float32 kernels' bound (assertSetsF32).
  assertSetsF32(set, expected, name, batchNormTerms(set, expected));
}

const random = (shape: number[], dtype: DType, seed: number, low = -1, high = 1) =>
  Tensor.fromArray(values(shape.reduce((a, b) => a * b, 1), seed, low, high), shape, dtype);

Deno.test("gatherStatsWithCounts equals the oracle's kernel bit for bit", () => {
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    for (const running of [true, false]) {
      const W = 3;
      const C = 5;
      const set: TensorSet = {
        mean: random([W, C], dtype, 1, -2, 2),
        invstd: random([W, C], dtype, 2, 0.5, 2),
        counts: Tensor.fromArray([7, 3, 11], [W], dtype),
        runningMean: running ? random([C], dtype, 3) : undefined,
        runningVar: running ? random([C], dtype, 4, 0.5, 2) : undefined,
        meanAll: Tensor.zeros([C], dtype),
        invstdAll: Tensor.zeros([C], dtype),
      };
      const expected = twinSet(set);
      const plan = { channels: C, ranks: W, momentum: 0.1, eps: 1e-5 };
      referenceKernels.batchNormGatherStatsWithCounts(plan, expected as never);
      cpuKernels.batchNormGatherStatsWithCounts(plan, set as never);
      for (const name of Object.keys(set)) {
        if (set[name]) assertSameBits(set[name]!, expected[name]!, `${dtype} ${running} ${name}`);
      }
    }
  }
  const none: TensorSet = {
    mean: Tensor.zeros([0, 4]),
    invstd: Tensor.zeros([0, 4]),
    counts: Tensor.zeros([0]),
    meanAll: Tensor.full([4], 5),
    invstdAll: Tensor.full([4], 5),
  };
  const plan = { channels: 4, ranks: 0, momentum: 0.1, eps: 1e-5 };
  cpuKernels.batchNormGatherStatsWithCounts(plan, none as never);
  assert.deepEqual(none.meanAll!.toArray(), [0, 0, 0, 0]);
  assert.deepEqual(none.invstdAll!.toArray(), [NaN, NaN, NaN, NaN]);
});

/** Data dtype combinations a mixed call may bring (gradOut, input, output). */
const MIXED: readonly [DType, DType, DType][] = [
  ["float16", "float32", "float32"],
  ["bfloat16", "float16", "float16"],
  ["float32", "float16", "bfloat16"],
  ["float16", "float16", "float32"],
];

Deno.test("mixed data dtypes: every BatchNorm kernel within 1 ulp of the oracle's", () => {
  const shape = [3, 4, 5];
  const C = 4;
  const geometry = channelGeometry(shape);
  for (const [dyType, xType, outType] of MIXED) {
    const label = `${dyType}/${xType}/${outType}`;
    const ch = (seed: number, low = -1, high = 1) => random([C], "float32", seed, low, high);
    compare(`elemtBackward ${label}`, {
      gradOut: random(shape, dyType, 1),
      input: random(shape, xType, 2, -1, 3),
      mean: ch(3),
      invstd: ch(4, 0.5, 2),
      weight: ch(5),
      sumDy: ch(6, -5, 5),
      sumDyXmu: ch(7, -5, 5),
      counter: Tensor.fromArray([15], [1], "int32"),
      gradInput: Tensor.zeros(shape, outType),
    }, (k, t) => k.batchNormElemtBackward({ geometry }, t as never));
    for (const training of [true, false]) {
      compare(`backward ${training} ${label}`, {
        gradOut: random(shape, dyType, 8),
        input: random(shape, xType, 9),
        weight: ch(10),
        runningMean: ch(11),
        runningVar: ch(12, 0.5, 2),
        saveMean: ch(13),
        saveInvstd: ch(14, 0.5, 2),
        gradInput: Tensor.zeros(shape, outType),
        gradWeight: Tensor.zeros([C]),
        gradBias: Tensor.zeros([C]),
      }, (k, t) =>
        k.batchNormBackward(
          { geometry, training, eps: 1e-5, mask: [true, true, true] },
          t as never,
        ));
    }
    compare(`reduceBackward ${label}`, {
      gradOut: random(shape, dyType, 15),
      input: random(shape, xType, 16),
      mean: ch(17),
      invstd: ch(18, 0.5, 2),
      sumDy: Tensor.zeros([C]),
      sumDyXmu: Tensor.zeros([C]),
      gradWeight: Tensor.zeros([C]),
      gradBias: Tensor.zeros([C]),
    }, (k, t) =>
      k.batchNormReduceBackward(
        { geometry, inputG: true, weightG: true, biasG: true },
        t as never,
      ));
    compare(`elemt ${label}`, {
      input: random(shape, xType, 19),
      mean: ch(20),
      invstd: ch(21, 0.5, 2),
      output: Tensor.zeros(shape, outType),
    }, (k, t) => k.batchNormElemt({ geometry, eps: 1e-5 }, t as never));
    compare(`batchNorm ${label}`, {
      input: random(shape, xType, 22),
      runningMean: ch(23),
      runningVar: ch(24, 0.5, 2),
      output: Tensor.zeros(shape, outType),
      saveMean: Tensor.zeros([C]),
      saveInvstd: Tensor.zeros([C]),
    }, (k, t) => k.batchNorm({ geometry, training: true, momentum: 0.1, eps: 1e-5 }, t as never));
  }
});

Deno.test("mixed data dtypes compute on exact float32 copies, rounded once into the output", () => {
  const shape = [2, 3, 7];
  const geometry = channelGeometry(shape);
  const common = {
    mean: random([3], "float32", 3),
    invstd: random([3], "float32", 4, 0.5, 2),
    sumDy: random([3], "float32", 6, -5, 5),
    sumDyXmu: random([3], "float32", 7, -5, 5),
    counter: Tensor.fromArray([14], [1], "int32"),
  };
  const dy = random(shape, "float16", 1);
  const x = random(shape, "float32", 2);
  const mixed = Tensor.zeros(shape, "float32");
  cpuKernels.batchNormElemtBackward(
    { geometry },
    { ...common, gradOut: dy, input: x, gradInput: mixed },
  );
  const byHand = Tensor.zeros(shape, "float32");
  const dy32 = Tensor.fromArray(dy.toFloat64Array(), shape, "float32");
  cpuKernels.batchNormElemtBackward(
    { geometry },
    { ...common, gradOut: dy32, input: x, gradInput: byHand },
  );
  assertSameBits(mixed, byHand, "float16 gradOut, float32 input and gradInput");
});

Deno.test("outputs overlapping an input run on a scratch output: shifted, zero stride", () => {
  const shape = [2, 6, 5];
  const geometry = channelGeometry(shape);
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    // gradInput over gradOut shifted by one element: only read-all-first is correct.
    const storage = random([2 * 6 * 5 + 1], dtype, 3).storage as Float32Array;
    compare(`shifted gradInput ${dtype}`, {
      gradOut: Tensor.fromData(storage, shape, { offset: 1 }),
      input: random(shape, dtype, 4),
      gradInput: Tensor.fromData(storage, shape, { offset: 0 }),
    }, (k, t) =>
      k.batchNormBackward(
        { geometry, training: false, eps: 1e-5, mask: [true, false, false] },
        t as never,
      ));
    // An output whose batch dim has stride 0: each element is written twice, the last wins.
    const out = Tensor.zeros([6, 5], dtype);
    compare(`zero-stride output ${dtype}`, {
      input: random(shape, dtype, 5),
      mean: random([6], dtype, 6),
      invstd: random([6], dtype, 7, 0.5, 2),
      output: new Tensor(out.storage, dtype, shape, [0, 5, 1]),
    }, (k, t) => k.batchNormElemt({ geometry, eps: 1e-5 }, t as never));
    // GroupNorm output over its input shifted by a row.
    const gn = random([2 * 6 * 5 + 5], dtype, 8).storage as Float32Array;
    compare(`shifted GroupNorm output ${dtype}`, {
      input: Tensor.fromData(gn, shape, { offset: 5 }),
      output: Tensor.fromData(gn, shape, { offset: 0 }),
      mean: Tensor.zeros([2, 3], dtype),
      rstd: Tensor.zeros([2, 3], dtype),
    }, (k, t) => k.groupNorm({ N: 2, C: 6, HxW: 5, group: 3, eps: 1e-5 }, t as never));
  }
});

Deno.test("GroupNorm data with no strided [N, C, HxW] view runs on contiguous copies", () => {
  const [N, C, H, W] = [2, 6, 4, 5];
  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    // input [N, C, H, W] with H and W transposed in memory; gradOut [N, C, H * W]: the two
    // shapes differ, and input's H and W cannot merge into one strided dim.
    const input = random([N, C, W, H], dtype, 1).transpose(2, 3);
    const set: TensorSet = {
      gradOut: random([N, C, H * W], dtype, 2),
      input,
      mean: random([N, 3], "float32", 3),
      rstd: random([N, 3], "float32", 4, 0.5, 2),
      gamma: random([C], dtype, 5),
      gradInput: Tensor.zeros([N, C, H, W], dtype),
      gradGamma: Tensor.zeros([C]),
      gradBeta: Tensor.zeros([C]),
    };
    const plan = { N, C, HxW: H * W, group: 3, mask: [true, true, true] as const };
    compare(`groupNormBackward ${dtype}`, set, (k, t) => k.groupNormBackward(plan, t as never));
  }
});

Deno.test("views into storages beyond int32 indices run on copies, with the same bits", () => {
  // 2^31 + 128 float16 elements (4 GiB of address space, untouched but for the views: the
  // system commits only the pages written).
  const big = new Float16Array(2 ** 31 + 128);
  const at = 2 ** 31 - 20; // the views straddle element 2^31
  const shape = [2, 6, 5];
  const compact = random(shape, "float16", 1);
  const x = Tensor.fromData(big, shape, { offset: at });
  x.copy_(compact);
  // BatchNormElemt, output in the same large storage after the input.
  const geometry = channelGeometry(shape);
  const stats = { mean: random([6], "float32", 2), invstd: random([6], "float32", 3, 0.5, 2) };
  const y = Tensor.fromData(big, shape, { offset: at + 60 });
  cpuKernels.batchNormElemt({ geometry, eps: 1e-5 }, { ...stats, input: x, output: y });
  const yWant = Tensor.zeros(shape, "float16");
  cpuKernels.batchNormElemt({ geometry, eps: 1e-5 }, { ...stats, input: compact, output: yWant });
  assertSameBits(Tensor.fromArray(y.toFloat64Array(), shape, "float16"), yWant, "batchNormElemt");
  // LayerNorm over the last dim, from the large storage into a small output.
  const plan = { geometry: rowGeometry(shape, 2), normalizedShape: [5], eps: 1e-5 };
  const row = (input: Tensor) => {
    const t = {
      input,
      output: Tensor.zeros(shape),
      mean: Tensor.zeros([2, 6, 1]),
      rstd: Tensor.zeros([2, 6, 1]),
    };
    cpuKernels.layerNorm(plan, t);
    return t;
  };
  const got = row(x);
  const want = row(compact);
  for (const name of ["output", "mean", "rstd"] as const) {
    assertSameBits(got[name], want[name], `layerNorm ${name}`);
  }
  // RMSNorm writing into the large storage.
  const rms = (xIn: Tensor, yOut: Tensor) => {
    const t = { x: xIn, gamma: random([5], "float32", 4), y: yOut, rstd: Tensor.zeros([2, 6, 1]) };
    cpuKernels.rmsNorm({ geometry: rowGeometry(shape, 2), epsilon: 1e-6 }, t);
    return t.rstd;
  };
  const yBig = Tensor.fromData(big, shape, { offset: at + 60 });
  const ySmall = Tensor.zeros(shape, "float16");
  assertSameBits(rms(x, yBig), rms(compact, ySmall), "rmsNorm rstd");
  assertSameBits(Tensor.fromArray(yBig.toFloat64Array(), shape, "float16"), ySmall, "rmsNorm y");
});

Deno.test("empty inputs get CANN's fills: statistics 0 and NaN, gradient sums 0", () => {
  const seven = (shape: number[]) => Tensor.full(shape, 7);
  const read = (t: Tensor | undefined) => t!.toArray();
  for (const shape of [[0, 3, 4], [2, 3, 0]]) {
    const geometry = channelGeometry(shape);
    const empty = Tensor.zeros(shape);
    const stats = { input: empty, mean: seven([3]), invstd: seven([3]) };
    cpuKernels.batchNormStats({ geometry, eps: 1e-5 }, stats);
    assert.deepEqual([read(stats.mean), read(stats.invstd)], [[0, 0, 0], [NaN, NaN, NaN]]);
    for (const training of [true, false]) {
      const t = {
        input: empty,
        runningMean: seven([3]),
        runningVar: seven([3]),
        output: Tensor.zeros(shape),
        saveMean: seven([3]),
        saveInvstd: seven([3]),
      };
      cpuKernels.batchNorm({ geometry, training, momentum: 0.1, eps: 1e-5 }, t);
      assert.deepEqual(
        [t.saveMean, t.saveInvstd, t.runningMean, t.runningVar].map(read),
        [[0, 0, 0], [NaN, NaN, NaN], [7, 7, 7], [7, 7, 7]],
        `batchNorm training ${training}`,
      );
    }
    // invstd of an empty batch is NaN; the reduction's outputs are 0 all the same.
    const reduce = {
      gradOut: empty,
      input: empty,
      mean: Tensor.zeros([3]),
      invstd: Tensor.full([3], NaN),
      sumDy: seven([3]),
      sumDyXmu: seven([3]),
      gradWeight: seven([3]),
      gradBias: seven([3]),
    };
    cpuKernels.batchNormReduceBackward(
      { geometry, inputG: true, weightG: true, biasG: true },
      reduce,
    );
    assert.deepEqual(
      [reduce.sumDy, reduce.sumDyXmu, reduce.gradWeight, reduce.gradBias].map(read),
      [[0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]],
    );
    const backward = {
      gradOut: empty,
      input: empty,
      saveMean: Tensor.zeros([3]),
      saveInvstd: Tensor.full([3], NaN),
      gradInput: Tensor.zeros(shape),
      gradWeight: seven([3]),
      gradBias: seven([3]),
    };
    cpuKernels.batchNormBackward(
      { geometry, training: true, eps: 1e-5, mask: [true, true, true] },
      backward,
    );
    assert.deepEqual(read(backward.gradWeight), [0, 0, 0]);
    assert.deepEqual(read(backward.gradBias), [0, 0, 0]);
  }
  const [N, C, HxW] = [2, 4, 0];
  const gn = {
    input: Tensor.zeros([N, C, HxW]),
    output: Tensor.zeros([N, C, HxW]),
    mean: seven([N, 2]),
    rstd: seven([N, 2]),
  };
  cpuKernels.groupNorm({ N, C, HxW, group: 2, eps: 1e-5 }, gn);
  assert.deepEqual([read(gn.mean), read(gn.rstd)], [[0, 0, 0, 0], [NaN, NaN, NaN, NaN]]);
  const gnBack = {
    gradOut: Tensor.zeros([N, C, HxW]),
    input: Tensor.zeros([N, C, HxW]),
    mean: Tensor.zeros([N, 2]),
    rstd: Tensor.full([N, 2], NaN),
    gradInput: Tensor.zeros([N, C, HxW]),
    gradGamma: seven([C]),
    gradBeta: seven([C]),
  };
  cpuKernels.groupNormBackward({ N, C, HxW, group: 2, mask: [true, true, true] }, gnBack);
  assert.deepEqual(read(gnBack.gradGamma), [0, 0, 0, 0]);
  assert.deepEqual(read(gnBack.gradBeta), [0, 0, 0, 0]);
});
