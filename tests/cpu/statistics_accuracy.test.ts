/**
 * Statistics of data far from zero, on the CPU backend: constant channels and rows, and data
 * whose spread is a millionth of its mean, against the float64 oracle under the plain float32
 * entry of the tolerance table (no cancellation widening). Float32 lanes that add the values
 * themselves drift by several ulps of the mean over a block, and the variance takes the
 * square of that: a constant row of 10000.3 normalized to -0.21 instead of 0, and its rstd
 * (eps 1e-3) was 30.9 instead of 31.6 (row_sums.wat $rf_mean64, channel_pixel_blocks.wat: the
 * sums now run about each run's first element).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  adaLayerNormV2,
  addLayerNorm,
  batchNorm,
  batchNormStats,
  groupNorm,
  instanceNorm,
  layerNorm,
  setCpuThreads,
  Tensor,
} from "../../mod.ts";
import { assertClose } from "../helpers/assert.ts";
import { cancellation, F32_ARITHMETIC, TOLERANCE, type Tolerance } from "../helpers/tolerance.ts";
import {
  adaLayerNorm as adaLayerNorm64,
  batchNorm64,
  batchNormStats64,
  fusedLayerNorm,
  groupNorm64,
  instanceNorm64,
  layerNorm64,
} from "../oracle/mod.ts";

const F32 = TOLERANCE.float32;

/**
 * An output (x - mean) * rstd: float32 arithmetic with the mean rounded to float32 errs by a
 * few float32 epsilons of |x| * rstd (tolerance.ts `cancellation`), as CANN's kernels do; the
 * statistics themselves are held to the plain entry.
 */
function normalized(x: Tensor, rstd: ArrayLike<number>, expected: ArrayLike<number>): Tolerance {
  const maxAbs = (a: ArrayLike<number>) =>
    Array.from(a).reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  return cancellation(
    F32,
    maxAbs(x.toFloat64Array()) * maxAbs(rstd),
    Math.max(1, maxAbs(expected)),
  );
}

/** Constant 10000.3 (as float32), or 10000 + [0, 0.01): a spread of a millionth of the mean. */
function farFromZero(shape: number[], spread: boolean, seed: number): Tensor {
  return spread
    ? Tensor.random(shape, { seed, low: 1e4, high: 1e4 + 0.01 })
    : Tensor.full(shape, 10000.3);
}

/** The same data in channels-last storage, as an [N, C, ...spatial] view. */
function channelsLast(x: Tensor): Tensor {
  const rank = x.shape.length;
  const nhwc = [x.shape[0], ...x.shape.slice(2), x.shape[1]];
  const storage = Tensor.fromArray(
    Array.from(x.permute([0, ...range(2, rank), 1]).toArray()),
    nhwc,
  );
  return storage.permute([0, rank - 1, ...range(1, rank - 1)]);
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_, i) => from + i);
}

for (const threads of [1, 2]) {
  Deno.test(`statistics far from zero: layerNorm and addLayerNorm rows, ${threads} thread(s)`, () => {
    setCpuThreads(threads);
    for (const spread of [false, true]) {
      for (const [rows, cols] of [[2, 2060], [64, 1279], [3, 5]]) {
        const x = farFromZero([rows, cols], spread, 3);
        const eps = 1e-5;
        using r = layerNorm({ input: x, normalizedShape: [cols], eps });
        const e = layerNorm64([...x.toFloat64Array()], rows, cols, eps);
        const what = `${rows}x${cols} ${spread ? "spread" : "constant"}`;
        assertClose(r.mean!, e.mean, F32, `${what} mean`);
        assertClose(r.rstd!, e.rstd, F32, `${what} rstd`);
        assertClose(r.output, e.y, normalized(x, e.rstd, e.y), `${what} output`);
        if (!spread) assert.ok(r.output.toArray().every((v) => v === 0), `${what}: y is 0`);

        const zeros = Tensor.zeros([rows, cols]);
        using a = addLayerNorm({
          x1: x,
          x2: zeros,
          gamma: Tensor.ones([cols]),
          beta: Tensor.zeros([cols]),
          epsilon: eps,
        });
        const f = fusedLayerNorm(
          [...x.toFloat64Array()],
          new Array(rows * cols).fill(0),
          rows,
          cols,
          eps,
          new Array(cols).fill(1),
          new Array(cols).fill(0),
        );
        assertClose(a.rstd, f.rstd, F32, `addLayerNorm ${what} rstd`);

        // adaLayerNormV2: the rows as one batch of `rows` tokens, scale and shift 0.
        using d = adaLayerNormV2({
          x: x.reshape([1, rows, cols]),
          scale: Tensor.zeros([1, cols]),
          shift: Tensor.zeros([1, cols]),
          epsilon: eps,
        });
        const ed = adaLayerNorm64(
          [...x.toFloat64Array()],
          rows,
          cols,
          eps,
          new Array(cols).fill(0),
          new Array(cols).fill(0),
        );
        assertClose(d.rstd!, ed.rstd, F32, `adaLayerNorm ${what} rstd`);
        assertClose(a.y, f.y, normalized(x, f.rstd, f.y), `addLayerNorm ${what} y`);
      }
    }
  });

  Deno.test(`statistics far from zero: BatchNorm family channels, ${threads} thread(s)`, () => {
    setCpuThreads(threads);
    for (const spread of [false, true]) {
      // Contiguous rows of one channel (segments of 4096 and more), and channels-last pixels
      // (runs of 128), with C a multiple of 4 there.
      for (const shape of [[2, 3, 3000], [4, 8, 20, 20], [1, 1, 1024]]) {
        for (const layout of ["contiguous", "channels-last"] as const) {
          const dense = farFromZero(shape, spread, 5);
          const x = layout === "contiguous" ? dense : channelsLast(dense);
          const what = `${shape} ${layout} ${spread ? "spread" : "constant"}`;
          const values = x.toFloat64Array();
          const eps = 1e-5;
          using r = batchNorm({ input: x, training: true, eps });
          const e = batchNorm64({ x: values, shape, training: true, momentum: 0.1, eps });
          assertClose(r.saveMean, e.saveMean, F32, `${what} saveMean`);
          assertClose(r.saveInvstd, e.saveInvstd, F32, `${what} saveInvstd`);
          assertClose(r.output, e.output, normalized(x, e.saveInvstd, e.output), `${what} output`);
          if (!spread) assert.ok(r.output.toArray().every((v) => v === 0), `${what}: y is 0`);
          using s = batchNormStats({ input: x, eps });
          const es = batchNormStats64(values, shape, eps);
          assertClose(s.invstd, es.invstd, F32, `batchNormStats ${what} invstd`);

          const C = shape[1];
          const hw = shape.slice(2).reduce((a, b) => a * b, 1);
          const group = C % 2 === 0 ? C / 2 : 1;
          using g = groupNorm({ input: x, group, eps });
          const eg = groupNorm64(values, shape[0], C, hw, group, undefined, undefined, eps);
          assertClose(g.rstd, eg.rstd, F32, `groupNorm ${what} rstd`);
          assertClose(
            g.output,
            eg.output,
            normalized(x, eg.rstd, eg.output),
            `groupNorm ${what} output`,
          );
        }
      }
    }
  });

  Deno.test(`statistics far from zero: instanceNorm planes, ${threads} thread(s)`, () => {
    setCpuThreads(threads);
    for (const spread of [false, true]) {
      const shape = [2, 4, 30, 40];
      const x = farFromZero(shape, spread, 7);
      using r = instanceNorm({
        x,
        gamma: Tensor.ones([4]),
        beta: Tensor.zeros([4]),
        dataFormat: "NCHW",
        eps: 1e-5,
      });
      const e = instanceNorm64(x.toFloat64Array(), shape, false, [1, 1, 1, 1], [0, 0, 0, 0], 1e-5);
      const rstd = e.variance.map((v) => 1 / Math.sqrt(v + 1e-5));
      assertClose(r.y, e.y, normalized(x, rstd, e.y), `${spread ? "spread" : "constant"} y`);
      assertClose(r.mean, e.mean, F32, `${spread ? "spread" : "constant"} mean`);
      if (!spread) assert.ok(r.y.toArray().every((v) => v === 0), "constant planes: y is 0");
    }
  });
}

/**
 * Runs whose first 16 elements (the one-pass moments' pivot, row_sums.wat $rf_pivot16) sit far
 * from their mean: 1 against a run of [0, 0.001), every `run` elements. Squares taken about that
 * pivot in float32 err by about n/16 times more than squares about the mean (on the variance:
 * hundreds of half-ulps here); such a run takes the two passes about its mean instead
 * ($rf_moments), and its statistics keep the kernels' own bound (F32_ARITHMETIC; rstd ~16, so
 * that the bound's absolute part does not hide the error).
 */
function pivotFarFromMean(shape: number[], run: number, seed: number): Tensor {
  const values = Tensor.random(shape, { seed, low: 0, high: 1e-3 }).toFloat64Array();
  for (let start = 0; start < values.length; start += run) values.fill(1, start, start + 16);
  return Tensor.fromArray(Array.from(values), shape);
}

for (const threads of [1, 2]) {
  Deno.test(`statistics of runs whose pivot is far from their mean, ${threads} thread(s)`, () => {
    setCpuThreads(threads);
    const eps = 1e-8;
    for (const [rows, cols] of [[2, 16384], [3, 4100]]) {
      const x = pivotFarFromMean([rows, cols], cols, 11);
      using r = layerNorm({ input: x, normalizedShape: [cols], eps });
      const e = layerNorm64([...x.toFloat64Array()], rows, cols, eps);
      assertClose(r.mean!, e.mean, F32_ARITHMETIC.float32, `layerNorm ${rows}x${cols} mean`);
      assertClose(r.rstd!, e.rstd, F32_ARITHMETIC.float32, `layerNorm ${rows}x${cols} rstd`);
    }
    // BatchNorm's contiguous runs are segments of 4096 elements of a channel's rows.
    const shape = [2, 3, 16384];
    const x = pivotFarFromMean(shape, 4096, 13);
    using s = batchNormStats({ input: x, eps });
    const es = batchNormStats64(x.toFloat64Array(), shape, eps);
    assertClose(s.mean, es.mean, F32_ARITHMETIC.float32, "batchNormStats mean");
    assertClose(s.invstd, es.invstd, F32_ARITHMETIC.float32, "batchNormStats invstd");
    // Channels-last runs (128 pixels, pivots the mean of the first 8: channel_pixel_blocks.wat
    // $px_pivot) with outliers at each sample's first 16 pixels: within the bound too. (Their
    // pivots are at most 4 deviations away, so one pass would also hold here; which pass a run
    // takes is checked bit for bit in tests/cpu/pixel_kernels.test.ts.)
    const cl = [2, 8, 64, 64];
    const dense = pivotFarFromMean(cl, 64 * 64, 17);
    using c = batchNormStats({ input: channelsLast(dense), eps });
    const ec = batchNormStats64(dense.toFloat64Array(), cl, eps);
    assertClose(c.mean, ec.mean, F32_ARITHMETIC.float32, "channels-last batchNormStats mean");
    assertClose(c.invstd, ec.invstd, F32_ARITHMETIC.float32, "channels-last batchNormStats invstd");
  });
}
