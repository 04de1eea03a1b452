/**
 * Large shapes, BatchNorm operators (CPU backend): batchNorm (training with running statistics,
 * and evaluation), batchNormStats, batchNormElemt, batchNormBackward (training and evaluation)
 * and batchNormReduceBackward, on 10^4 to 2.3 * 10^6 elements (large_shapes_channel_cases.ts:
 * one channel of up to millions of elements, channel counts that are not multiples of 4, many
 * channels across the channels-last limit of 8192, spatial sizes around the kernels'
 * thresholds, float32 gradOut and input of 16 MiB and more: cache blocks); every layout of
 * large_shapes.ts, float32/float16/bfloat16, data around 0, far from zero, constant and of a
 * large dynamic range, eps 1e-12 to 0.5. Each case runs at 1 and 2 threads (same bits) and is
 * held to the float64 oracle under the tolerance table (large_shapes.ts).
 *
 * @module
 */

import fc from "fast-check";
import {
  batchNorm,
  batchNormBackward,
  batchNormElemt,
  batchNormReduceBackward,
  batchNormStats,
} from "../../mod.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { TOLERANCE } from "../helpers/tolerance.ts";
import {
  batchNorm64,
  batchNormBackward64,
  batchNormElemt64,
  batchNormReduceBackward64,
  batchNormStats64,
  batchStats64,
  invstdOf,
} from "../oracle/mod.ts";
import { numel, uniform } from "./harness.ts";
import { channelCase, channelShapeArb, perChannel } from "./large_shapes_channel_cases.ts";
import {
  dataValues,
  largeProperty,
  maxAbs,
  meanTolerance,
  normalizedTolerance,
  outputs,
  placeIn,
} from "./large_shapes.ts";
import { contiguous } from "./layouts.ts";

const F32 = TOLERANCE.float32;
const f32 = "float32" as DType;

// ------------------------------------------------------------------ batchNorm

largeProperty(
  "batchNorm",
  channelCase(channelShapeArb(), (_, dtype) =>
    fc.record({
      training: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, fc.constant(false)),
      paramDType: fc.constantFrom(dtype, f32),
      affine: fc.boolean(),
      running: fc.boolean(),
    })),
  (c) => {
    const C = c.shape[1];
    const p = c.extra;
    const x = placeIn(dataValues(c.data, numel(c.shape), c.seed), c.shape, c.dtype, c.layout);
    const one = (seed: number, lo: number, hi: number) =>
      perChannel(C, c.seed + seed, p.paramDType, lo, hi);
    const weight = p.affine ? one(1, 0.5, 1.5) : undefined;
    const bias = p.affine ? one(2, -1, 1) : undefined;
    // Running statistics: updated in place, so each call takes fresh ones.
    const running = () =>
      p.running ? { runningMean: one(3, -1, 1), runningVar: one(4, 0.25, 2) } : {};
    const r0 = running();
    const e = batchNorm64({
      x: x.values,
      shape: c.shape,
      weight: weight?.values,
      bias: bias?.values,
      runningMean: r0.runningMean?.values,
      runningVar: r0.runningVar?.values,
      training: p.training,
      momentum: 0.1,
      eps: c.eps,
    });
    return {
      call() {
        const r = running();
        const out = batchNorm({
          input: x.tensor,
          weight: weight?.tensor,
          bias: bias?.tensor,
          runningMean: r.runningMean?.tensor,
          runningVar: r.runningVar?.tensor,
          training: p.training,
          momentum: 0.1,
          eps: c.eps,
        });
        return outputs({
          output: out.output,
          saveMean: p.training ? out.saveMean : undefined,
          saveInvstd: p.training ? out.saveInvstd : undefined,
          runningMean: r.runningMean?.tensor,
          runningVar: r.runningVar?.tensor,
        });
      },
      expect() {
        const invstd = p.training ? e.saveInvstd : invstdOf(r0.runningVar?.values ?? [1], c.eps);
        const terms = maxAbs(x.values) * maxAbs(invstd) * (weight ? maxAbs(weight.values) : 1);
        const tp = TOLERANCE[p.paramDType];
        return {
          output: {
            expected: e.output,
            tol: normalizedTolerance(TOLERANCE[c.dtype], terms, e.output),
          },
          ...(p.training
            ? {
              saveMean: { expected: e.saveMean, tol: meanTolerance(F32, x.values, e.saveMean) },
              saveInvstd: { expected: e.saveInvstd, tol: F32 },
            }
            : {}),
          ...(p.running
            ? {
              runningMean: { expected: e.runningMean!, tol: tp },
              runningVar: { expected: e.runningVar!, tol: tp },
            }
            : {}),
        };
      },
    };
  },
);

// ------------------------------------------------------------------ batchNormStats

largeProperty(
  "batchNormStats",
  channelCase(channelShapeArb(), () => fc.constant({})),
  (c) => {
    const x = placeIn(dataValues(c.data, numel(c.shape), c.seed), c.shape, c.dtype, c.layout);
    const e = batchNormStats64(x.values, c.shape, c.eps);
    return {
      call: () => outputs({ ...batchNormStats({ input: x.tensor, eps: c.eps }) }),
      expect: () => ({
        mean: { expected: e.mean, tol: meanTolerance(F32, x.values, e.mean) },
        invstd: { expected: e.invstd, tol: F32 },
      }),
    };
  },
);

// ------------------------------------------------------------------ batchNormElemt

largeProperty(
  "batchNormElemt",
  channelCase(channelShapeArb(), () => fc.record({ affine: fc.boolean(), batch: fc.boolean() })),
  (c) => {
    const C = c.shape[1];
    const x = placeIn(dataValues(c.data, numel(c.shape), c.seed), c.shape, c.dtype, c.layout);
    // The batch's statistics (rounded to the dtype), or arbitrary ones.
    const s = batchStats64(x.values, c.shape);
    const place1 = (v: ArrayLike<number>) => placeIn(v, [C], c.dtype, contiguous(1));
    const mean = place1(c.extra.batch ? s.mean : uniform(C, c.seed + 1, -1, 1));
    const invstd = place1(
      c.extra.batch
        ? invstdOf(s.variance, c.eps).map((v) => Math.min(v, 6e4))
        : uniform(C, c.seed + 2, 0.5, 2),
    );
    const weight = c.extra.affine ? perChannel(C, c.seed + 3, c.dtype, 0.5, 1.5) : undefined;
    const bias = c.extra.affine ? perChannel(C, c.seed + 4, c.dtype, -1, 1) : undefined;
    const e = batchNormElemt64({
      x: x.values,
      shape: c.shape,
      mean: mean.values,
      invstd: invstd.values,
      weight: weight?.values,
      bias: bias?.values,
    });
    return {
      call: () =>
        outputs({
          output: batchNormElemt({
            input: x.tensor,
            mean: mean.tensor,
            invstd: invstd.tensor,
            weight: weight?.tensor,
            bias: bias?.tensor,
            eps: c.eps,
          }),
        }),
      expect() {
        const terms = maxAbs(x.values) * maxAbs(invstd.values) *
          (weight ? maxAbs(weight.values) : 1);
        return { output: { expected: e, tol: normalizedTolerance(TOLERANCE[c.dtype], terms, e) } };
      },
    };
  },
);

// ------------------------------------------------------------------ batchNormBackward

largeProperty(
  "batchNormBackward",
  channelCase(channelShapeArb(), (_, dtype) =>
    fc.record({
      training: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, fc.constant(false)),
      paramDType: fc.constantFrom(dtype, f32),
      saveDType: fc.constantFrom(dtype, f32),
      affine: fc.boolean(),
    })),
  (c) => {
    const C = c.shape[1];
    const p = c.extra;
    const n = numel(c.shape);
    const x = placeIn(dataValues(c.data, n, c.seed), c.shape, c.dtype, c.layout);
    const dy = placeIn(uniform(n, c.seed + 1, -1, 1), c.shape, c.dtype, c.layout);
    const weight = p.affine ? perChannel(C, c.seed + 2, p.paramDType, 0.5, 1.5) : undefined;
    const s = batchStats64(x.values, c.shape);
    const save = (v: ArrayLike<number>) => placeIn(v, [C], p.saveDType, contiguous(1));
    // Training: the batch's statistics as saved (16-bit saves: rstd kept in float16's range).
    const saveMean = p.training ? save(s.mean) : undefined;
    const saveInvstd = p.training
      ? save(invstdOf(s.variance, c.eps).map((v) => Math.min(v, 6e4)))
      : undefined;
    const runningMean = p.training ? undefined : perChannel(C, c.seed + 3, p.paramDType, -1, 1);
    const runningVar = p.training ? undefined : perChannel(C, c.seed + 4, p.paramDType, 0.1, 2);
    const e = batchNormBackward64({
      dy: dy.values,
      x: x.values,
      shape: c.shape,
      weight: weight?.values,
      runningMean: runningMean?.values,
      runningVar: runningVar?.values,
      saveMean: saveMean?.values,
      saveInvstd: saveInvstd?.values,
      training: p.training,
      eps: c.eps,
    });
    const gradDType = weight ? p.paramDType : c.dtype;
    return {
      call() {
        const r = batchNormBackward({
          gradOut: dy.tensor,
          input: x.tensor,
          weight: weight?.tensor,
          runningMean: runningMean?.tensor,
          runningVar: runningVar?.tensor,
          saveMean: saveMean?.tensor,
          saveInvstd: saveInvstd?.tensor,
          training: p.training,
          eps: c.eps,
          outputMask: [true, true, true],
        });
        return outputs({ gradInput: r.gradInput, gradWeight: r.gradWeight, gradBias: r.gradBias });
      },
      expect: () => ({
        gradInput: { expected: e.gradInput, tol: TOLERANCE[c.dtype] },
        gradWeight: { expected: e.gradWeight, tol: TOLERANCE[gradDType] },
        gradBias: { expected: e.gradBias, tol: TOLERANCE[gradDType] },
      }),
    };
  },
  // float32 gradOut and input of 16 MiB together, rows of 63: the cache blocks of
  // channels/cache_blocks.ts (BLOCKED_FROM_BYTES), in every budget.
  [{
    shape: [1024, 33, 63],
    dtype: "float32",
    layout: { kind: "contiguous", order: [0, 1, 2] },
    data: "uniform",
    eps: 1e-5,
    seed: 11,
    extra: { training: true, paramDType: "float32", saveDType: "float32", affine: true },
  }],
);

// ------------------------------------------------------------------ batchNormReduceBackward

largeProperty(
  "batchNormReduceBackward",
  channelCase(channelShapeArb(), (_, dtype) =>
    fc.record({
      statsDType: fc.constantFrom(dtype, f32),
      weightDType: fc.option(fc.constantFrom(dtype, f32), { nil: undefined }),
      batchMean: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, fc.constant(false)),
    })),
  (c) => {
    const C = c.shape[1];
    const p = c.extra;
    const n = numel(c.shape);
    const x = placeIn(dataValues(c.data, n, c.seed), c.shape, c.dtype, c.layout);
    const dy = placeIn(uniform(n, c.seed + 1, -1, 1), c.shape, c.dtype, c.layout);
    const meanValues = p.batchMean ? batchStats64(x.values, c.shape).mean : uniform(C, c.seed + 2);
    const mean = placeIn(meanValues, [C], p.statsDType, contiguous(1));
    const invstd = perChannel(C, c.seed + 3, p.statsDType, 0.5, 2);
    const weight = p.weightDType && perChannel(C, c.seed + 4, p.weightDType, 0.5, 1.5);
    const e = batchNormReduceBackward64(dy.values, x.values, c.shape, mean.values, invstd.values);
    const gradDType = p.weightDType ?? p.statsDType;
    const at = (v: ArrayLike<number>, dtype: DType) => ({ expected: v, tol: TOLERANCE[dtype] });
    return {
      call() {
        const r = batchNormReduceBackward({
          gradOut: dy.tensor,
          input: x.tensor,
          mean: mean.tensor,
          invstd: invstd.tensor,
          weight: weight?.tensor,
          inputG: true,
          weightG: true,
          biasG: true,
        });
        return outputs({ ...r });
      },
      expect: () => ({
        sumDy: at(e.sumDy, p.statsDType),
        sumDyXmu: at(e.sumDyXmu, p.statsDType),
        gradWeight: at(e.gradWeight, gradDType),
        gradBias: at(e.gradBias, gradDType),
      }),
    };
  },
);
