/**
 * Large shapes, GroupNorm and InstanceNorm (CPU backend): groupNorm, groupNormSilu,
 * groupNormBackward (every divisor of C as the group count) and instanceNorm (NCHW and NHWC), on
 * 10^4 to 2.3 * 10^6 elements (large_shapes_channel_cases.ts); every layout of large_shapes.ts,
 * float32/float16/bfloat16 (instanceNorm: float32/float16), data around 0, far from zero,
 * constant and of a large dynamic range, eps 1e-12 to 0.5. Each case runs at 1 and 2 threads
 * (same bits) and is held to the float64 oracle under the tolerance table (large_shapes.ts).
 *
 * @module
 */

import fc from "fast-check";
import { groupNorm, groupNormBackward, groupNormSilu, instanceNorm } from "../../mod.ts";
import type { DType } from "../../src/tensor/dtype.ts";
import { looser, TOLERANCE } from "../helpers/tolerance.ts";
import {
  groupNorm64,
  groupNormBackward64,
  groupNormSwish64,
  groupStats64,
  instanceNorm64,
  invstdOf,
} from "../oracle/mod.ts";
import { numel, uniform } from "./harness.ts";
import {
  channelCase,
  channelShapeArb,
  groupArb,
  groupChannels,
  nchw,
  perChannel,
} from "./large_shapes_channel_cases.ts";
import {
  dataValues,
  largeProperty,
  maxAbs,
  meanTolerance,
  normalizedTolerance,
  outputs,
  placeIn,
  splitDim,
} from "./large_shapes.ts";
import { contiguous } from "./layouts.ts";

const f32 = "float32" as DType;

// ------------------------------------------------------------------ GroupNorm

largeProperty(
  "groupNorm",
  channelCase(
    channelShapeArb(groupChannels),
    (s) => fc.record({ group: groupArb(s[1]), affine: fc.boolean(), silu: fc.boolean() }),
  ),
  (c) => {
    const { N, C, HxW } = nchw(c.shape);
    const p = c.extra;
    const x = placeIn(dataValues(c.data, numel(c.shape), c.seed), c.shape, c.dtype, c.layout);
    const gamma = p.affine ? perChannel(C, c.seed + 1, c.dtype, 0.5, 1.5) : undefined;
    const beta = p.affine ? perChannel(C, c.seed + 2, c.dtype, -1, 1) : undefined;
    const e = groupNorm64(x.values, N, C, HxW, p.group, gamma?.values, beta?.values, c.eps);
    return {
      call: () =>
        outputs({
          ...groupNorm({
            input: x.tensor,
            gamma: gamma?.tensor,
            beta: beta?.tensor,
            group: p.group,
            eps: c.eps,
          }),
        }),
      expect() {
        const terms = maxAbs(x.values) * maxAbs(e.rstd) * (gamma ? maxAbs(gamma.values) : 1);
        const t = TOLERANCE[c.dtype];
        return {
          output: { expected: e.output, tol: normalizedTolerance(t, terms, e.output) },
          mean: { expected: e.mean, tol: meanTolerance(t, x.values, e.mean) },
          rstd: { expected: e.rstd, tol: t },
        };
      },
    };
  },
);

largeProperty(
  "groupNormSilu",
  channelCase(
    channelShapeArb(groupChannels),
    (s) => fc.record({ group: groupArb(s[1]), affine: fc.boolean() }),
  ),
  (c) => {
    const { N, C, HxW } = nchw(c.shape);
    const p = c.extra;
    const x = placeIn(dataValues(c.data, numel(c.shape), c.seed), c.shape, c.dtype, c.layout);
    const gamma = p.affine ? perChannel(C, c.seed + 1, c.dtype, 0.5, 1.5) : undefined;
    const beta = p.affine ? perChannel(C, c.seed + 2, c.dtype, -1, 1) : undefined;
    const e = groupNormSwish64(x.values, N, C, HxW, p.group, gamma?.values, beta?.values, c.eps, 1);
    return {
      call: () =>
        outputs({
          ...groupNormSilu({
            self: x.tensor,
            gamma: gamma?.tensor,
            beta: beta?.tensor,
            group: p.group,
            eps: c.eps,
          }),
        }),
      expect() {
        const terms = maxAbs(x.values) * maxAbs(e.rstd) * (gamma ? maxAbs(gamma.values) : 1);
        const t = TOLERANCE[c.dtype];
        // SiLU's vectorised exp: tests/ops/group_norm_silu.test.ts's room (4e-6 absolute).
        const silu = looser(normalizedTolerance(t, terms, e.output), { rtol: 0, atol: 4e-6 });
        return {
          output: { expected: e.output, tol: silu },
          mean: { expected: e.mean, tol: meanTolerance(t, x.values, e.mean) },
          rstd: { expected: e.rstd, tol: t },
        };
      },
    };
  },
);

largeProperty(
  "groupNormBackward",
  channelCase(channelShapeArb(groupChannels), (s, dtype) =>
    fc.record({
      group: groupArb(s[1]),
      statsDType: fc.constantFrom(dtype, f32),
      affine: fc.boolean(),
    })),
  (c) => {
    const { N, C, HxW } = nchw(c.shape);
    const p = c.extra;
    const n = numel(c.shape);
    const x = placeIn(dataValues(c.data, n, c.seed), c.shape, c.dtype, c.layout);
    const dy = placeIn(uniform(n, c.seed + 1, -1, 1), c.shape, c.dtype, c.layout);
    // The forward's statistics (rstd kept in float16's range for 16-bit statistics).
    const st = groupStats64(x.values, N, C, HxW, p.group);
    const stats = (v: ArrayLike<number>) => placeIn(v, [N, p.group], p.statsDType, contiguous(2));
    const mean = stats(st.mean);
    const rstd = stats(invstdOf(st.variance, c.eps).map((v) => Math.min(v, 6e4)));
    const gamma = p.affine ? perChannel(C, c.seed + 2, p.statsDType, 0.5, 1.5) : undefined;
    const e = groupNormBackward64(
      dy.values,
      x.values,
      mean.values,
      rstd.values,
      gamma?.values,
      N,
      C,
      HxW,
      p.group,
    );
    return {
      call() {
        const r = groupNormBackward({
          gradOut: dy.tensor,
          input: x.tensor,
          mean: mean.tensor,
          rstd: rstd.tensor,
          gamma: gamma?.tensor,
          group: p.group,
          outputMask: [true, true, true],
        });
        return outputs({ ...r });
      },
      expect: () => ({
        gradInput: { expected: e.gradInput, tol: TOLERANCE[c.dtype] },
        gradGamma: { expected: e.gradGamma, tol: TOLERANCE[p.statsDType] },
        gradBeta: { expected: e.gradBeta, tol: TOLERANCE[p.statsDType] },
      }),
    };
  },
);

// ------------------------------------------------------------------ instanceNorm

largeProperty(
  "instanceNorm",
  channelCase(
    channelShapeArb().map(([N, C, ...spatial]) => {
      const [H, W] = splitDim(numel(spatial), 2);
      return [N, C, H, W ?? 1];
    }),
    () => fc.record({ nhwc: fc.boolean() }),
    fc.constantFrom<DType>("float32", "float16"), // aclnnInstanceNorm has no bfloat16
  ),
  (c) => {
    // c.shape is [N, C, H, W]; NHWC cases take x as [N, H, W, C].
    const [N, C, H, W] = c.shape;
    const shape = c.extra.nhwc ? [N, H, W, C] : [N, C, H, W];
    const x = placeIn(dataValues(c.data, numel(shape), c.seed), shape, c.dtype, c.layout);
    const gamma = perChannel(C, c.seed + 1, c.dtype, 0.5, 1.5);
    const beta = perChannel(C, c.seed + 2, c.dtype, -1, 1);
    const eps32 = Math.fround(c.eps); // the kernel's eps is a float (README "Numerics")
    const e = instanceNorm64(x.values, shape, c.extra.nhwc, gamma.values, beta.values, eps32);
    return {
      call: () =>
        outputs({
          ...instanceNorm({
            x: x.tensor,
            gamma: gamma.tensor,
            beta: beta.tensor,
            dataFormat: c.extra.nhwc ? "NHWC" : "NCHW",
            eps: c.eps,
          }),
        }),
      expect() {
        const rstd = invstdOf(e.variance, eps32);
        const terms = maxAbs(x.values) * maxAbs(rstd) * maxAbs(gamma.values);
        const t = TOLERANCE[c.dtype];
        return {
          y: { expected: e.y, tol: normalizedTolerance(t, terms, e.y) },
          mean: { expected: e.mean, tol: meanTolerance(t, x.values, e.mean) },
          variance: { expected: e.variance, tol: t },
        };
      },
    };
  },
);
