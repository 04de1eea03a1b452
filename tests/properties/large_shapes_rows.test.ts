/**
 * Large shapes, row operators (CPU backend): layerNorm, layerNormBackward, rmsNorm, rmsNormGrad,
 * addRmsNorm, addLayerNorm and adaLayerNormV2, on 10^4 to 2.3 * 10^6 elements: rows of 1 to 5000
 * elements (the tails of 4, 16 and 64, the sums' blocks of 256 and 1024) and long rows around a
 * work item (2^16) and a thread's WebAssembly region (131064 floats), in 1-3 leading dims (one
 * or two normalized dims for layerNorm); every layout of large_shapes.ts,
 * float32/float16/bfloat16, data around 0, far from zero, constant and of a large dynamic range,
 * eps 1e-12 to 0.5. Each case runs at 1 and 2 threads (same bits) and is held to the float64
 * oracle under the tolerance table (large_shapes.ts).
 *
 * @module
 */

import fc from "fast-check";
import {
  adaLayerNormV2,
  addLayerNorm,
  addRmsNorm,
  layerNorm,
  layerNormBackward,
  rmsNorm,
  rmsNormGrad,
} from "../../mod.ts";
import { type DType, roundToDType } from "../../src/tensor/dtype.ts";
import { EXACT, looser, TOLERANCE } from "../helpers/tolerance.ts";
import {
  adaLayerNorm as adaLayerNorm64,
  fusedLayerNorm,
  layerNorm64,
  layerNormBackward64,
  rmsNorm64,
  rmsNormBackward64,
} from "../oracle/mod.ts";
import { numel, uniform } from "./harness.ts";
import {
  dataKindArb,
  dataValues,
  largeDtypeArb,
  largeEpsArb,
  largeLayoutArb,
  largeProperty,
  MAX_NUMEL,
  maxAbs,
  meanTolerance,
  normalizedTolerance,
  numelTargetArb,
  outputs,
  pick,
  placeIn,
  splitDim,
} from "./large_shapes.ts";
import { contiguous } from "./layouts.ts";

const F32 = TOLERANCE.float32;
const f32 = "float32" as DType;

/** Row lengths: every tail of 4/16/64 and the sums' blocks, any up to 5000, or a long row. */
const colsArb = fc.oneof(
  {
    weight: 6,
    arbitrary: pick(
      [1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 255, 256, 257, 1023, 1024, 1025, 4097],
      1,
      5000,
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom(65535, 65537, 131063, 131064, 131065, 131072, 262147) },
);

/** A row case: shape [...leading, ...normalized] and its rows x cols. */
interface RowShape {
  readonly shape: number[];
  readonly rows: number;
  readonly cols: number;
  /** How many trailing dims are normalized (their product is cols). */
  readonly normDims: number;
}

const rowShapeArb: fc.Arbitrary<RowShape> = fc.tuple(
  colsArb,
  numelTargetArb,
  fc.integer({ min: 1, max: 3 }),
  fc.integer({ min: 1, max: 2 }),
).map(([cols, target, leadDims, normParts]) => {
  const rows = Math.max(1, Math.min(Math.round(target / cols), Math.floor(MAX_NUMEL / cols)));
  const norm = splitDim(cols, normParts);
  return { shape: [...splitDim(rows, leadDims), ...norm], rows, cols, normDims: norm.length };
});

/** A case's fields drawn for every row operator. */
function rowCase<T>(extra: (dtype: DType) => fc.Arbitrary<T>, shapes = rowShapeArb) {
  return shapes.chain((rs) =>
    largeDtypeArb.chain((dtype) =>
      fc.record({
        shape: fc.constant(rs.shape),
        rows: fc.constant(rs.rows),
        cols: fc.constant(rs.cols),
        normDims: fc.constant(rs.normDims),
        dtype: fc.constant(dtype),
        layout: largeLayoutArb(rs.shape.length),
        data: dataKindArb,
        eps: largeEpsArb,
        seed: fc.integer({ min: 1, max: 1_000_000 }),
        extra: extra(dtype),
      })
    )
  );
}

/** A per-column tensor of the normalized dims' shape, uniform in [lo, hi), contiguous. */
function perColumn(shape: readonly number[], seed: number, dtype: DType, lo: number, hi: number) {
  return placeIn(uniform(numel(shape), seed, lo, hi), shape, dtype, contiguous(shape.length));
}

/** The normalized dims of a row case. */
function normShape(c: { shape: readonly number[]; normDims: number }): number[] {
  return c.shape.slice(c.shape.length - c.normDims);
}

/** The statistics' shape of a row case: leading dims, then 1 per normalized dim. */
function statsShape(c: { shape: readonly number[]; normDims: number }): number[] {
  return c.shape.map((d, i) => (i < c.shape.length - c.normDims ? d : 1));
}

/**
 * `v` as the oracle's row functions type their inputs: they only index them, and read a
 * Float64Array alike (Array.from would copy 2 * 10^6 values in about a second).
 */
const arr = (v: Float64Array) => v as unknown as number[];

// ------------------------------------------------------------------ layerNorm

largeProperty(
  "layerNorm",
  rowCase((dtype) =>
    fc.record({
      paramDType: fc.constantFrom(dtype, f32),
      weight: fc.boolean(),
      bias: fc.boolean(),
    })
  ),
  (c) => {
    const p = c.extra;
    const x = placeIn(dataValues(c.data, numel(c.shape), c.seed), c.shape, c.dtype, c.layout);
    const ns = normShape(c);
    const weight = p.weight ? perColumn(ns, c.seed + 1, p.paramDType, 0.5, 1.5) : undefined;
    const bias = p.bias ? perColumn(ns, c.seed + 2, p.paramDType, -1, 1) : undefined;
    const e = layerNorm64(
      arr(x.values),
      c.rows,
      c.cols,
      c.eps,
      weight && arr(weight.values),
      bias && arr(bias.values),
    );
    return {
      call: () =>
        outputs({
          ...layerNorm({
            input: x.tensor,
            normalizedShape: ns,
            weight: weight?.tensor,
            bias: bias?.tensor,
            eps: c.eps,
          }),
        }),
      expect() {
        const terms = maxAbs(x.values) * maxAbs(e.rstd) * (weight ? maxAbs(weight.values) : 1);
        return {
          output: { expected: e.y, tol: normalizedTolerance(TOLERANCE[c.dtype], terms, e.y) },
          mean: { expected: e.mean, tol: meanTolerance(F32, x.values, e.mean) },
          rstd: { expected: e.rstd, tol: F32 },
        };
      },
    };
  },
);

// ------------------------------------------------------------------ layerNormBackward

largeProperty(
  "layerNormBackward",
  rowCase((dtype) => fc.record({ weightDType: fc.option(fc.constantFrom(dtype, f32)) })),
  (c) => {
    const n = numel(c.shape);
    const x = placeIn(dataValues(c.data, n, c.seed), c.shape, c.dtype, c.layout);
    const dy = placeIn(uniform(n, c.seed + 1, -1, 1), c.shape, c.dtype, c.layout);
    const ns = normShape(c);
    const wd = c.extra.weightDType;
    const weight = wd ? perColumn(ns, c.seed + 2, wd, 0.5, 1.5) : undefined;
    // The forward's statistics, as float32 (the forward's outputs).
    const f = layerNorm64(arr(x.values), c.rows, c.cols, c.eps);
    const ss = statsShape(c);
    const mean = placeIn(f.mean, ss, f32, contiguous(ss.length));
    const rstd = placeIn(f.rstd, ss, f32, contiguous(ss.length));
    const e = layerNormBackward64(
      arr(dy.values),
      arr(x.values),
      arr(mean.values),
      arr(rstd.values),
      c.rows,
      c.cols,
      weight && arr(weight.values),
    );
    const sums = looser(F32, TOLERANCE[c.dtype]);
    return {
      call() {
        const r = layerNormBackward({
          gradOut: dy.tensor,
          input: x.tensor,
          normalizedShape: ns,
          mean: mean.tensor,
          rstd: rstd.tensor,
          weight: weight?.tensor,
          outputMask: [true, true, true],
        });
        return outputs({ gradInput: r.gradInput, gradWeight: r.gradWeight, gradBias: r.gradBias });
      },
      expect: () => ({
        gradInput: { expected: e.gradInput, tol: TOLERANCE[c.dtype] },
        gradWeight: { expected: e.gradWeight, tol: sums },
        gradBias: { expected: e.gradBias, tol: sums },
      }),
    };
  },
);

// ------------------------------------------------------------------ rmsNorm, rmsNormGrad

largeProperty(
  "rmsNorm",
  rowCase((dtype) => fc.record({ gammaDType: fc.constantFrom(dtype, f32) })),
  (c) => {
    const x = placeIn(dataValues(c.data, numel(c.shape), c.seed), c.shape, c.dtype, c.layout);
    const gamma = perColumn(normShape(c), c.seed + 1, c.extra.gammaDType, 0.5, 1.5);
    const e = rmsNorm64(arr(x.values), c.rows, c.cols, c.eps, arr(gamma.values));
    return {
      call: () => outputs({ ...rmsNorm({ x: x.tensor, gamma: gamma.tensor, epsilon: c.eps }) }),
      expect: () => ({
        y: { expected: e.y, tol: TOLERANCE[c.dtype] },
        rstd: { expected: e.rstd, tol: F32 },
      }),
    };
  },
);

largeProperty(
  "rmsNormGrad",
  rowCase((dtype) => fc.record({ gammaDType: fc.constantFrom(dtype, f32) })),
  (c) => {
    const n = numel(c.shape);
    const x = placeIn(dataValues(c.data, n, c.seed), c.shape, c.dtype, c.layout);
    const dy = placeIn(uniform(n, c.seed + 1, -1, 1), c.shape, c.dtype, c.layout);
    const gamma = perColumn(normShape(c), c.seed + 2, c.extra.gammaDType, 0.5, 1.5);
    const f = rmsNorm64(arr(x.values), c.rows, c.cols, c.eps, arr(gamma.values));
    const ss = statsShape(c);
    const rstd = placeIn(f.rstd, ss, f32, contiguous(ss.length));
    const e = rmsNormBackward64(
      arr(dy.values),
      arr(x.values),
      arr(rstd.values),
      arr(gamma.values),
      c.rows,
      c.cols,
    );
    return {
      call: () =>
        outputs({
          ...rmsNormGrad({ dy: dy.tensor, x: x.tensor, rstd: rstd.tensor, gamma: gamma.tensor }),
        }),
      expect: () => ({
        dx: { expected: e.dx, tol: TOLERANCE[c.dtype] },
        dgamma: { expected: e.dgamma, tol: looser(F32, TOLERANCE[c.dtype]) },
      }),
    };
  },
);

// ------------------------------------------------------------------ addRmsNorm, addLayerNorm

largeProperty(
  "addRmsNorm",
  rowCase(() => fc.constant({})),
  (c) => {
    const n = numel(c.shape);
    const x1 = placeIn(dataValues(c.data, n, c.seed), c.shape, c.dtype, c.layout);
    const x2 = placeIn(dataValues(c.data, n, c.seed + 1), c.shape, c.dtype, c.layout);
    const gamma = perColumn(normShape(c), c.seed + 2, c.dtype, 0.5, 1.5);
    // rstd and y from the float sum, x the sum rounded to the dtype (README "Numerics").
    const sum = arr(x1.values.map((v, i) => v + x2.values[i]));
    const e = rmsNorm64(sum, c.rows, c.cols, c.eps, arr(gamma.values));
    return {
      call: () =>
        outputs({
          ...addRmsNorm({ x1: x1.tensor, x2: x2.tensor, gamma: gamma.tensor, epsilon: c.eps }),
        }),
      expect: () => ({
        y: { expected: e.y, tol: TOLERANCE[c.dtype] },
        rstd: { expected: e.rstd, tol: F32 },
        x: { expected: sum.map((v) => roundToDType(v, c.dtype)), tol: EXACT },
      }),
    };
  },
);

largeProperty(
  "addLayerNorm",
  rowCase(() => fc.record({ bias: fc.boolean() })),
  (c) => {
    const n = numel(c.shape);
    const ns = normShape(c);
    const x1 = placeIn(dataValues(c.data, n, c.seed), c.shape, c.dtype, c.layout);
    const x2 = placeIn(dataValues(c.data, n, c.seed + 1), c.shape, c.dtype, c.layout);
    const gamma = perColumn(ns, c.seed + 2, c.dtype, 0.5, 1.5);
    const beta = perColumn(ns, c.seed + 3, c.dtype, -1, 1);
    const bias = c.extra.bias ? perColumn(ns, c.seed + 4, c.dtype, -1, 1) : undefined;
    const e = fusedLayerNorm(
      arr(x1.values),
      arr(x2.values),
      c.rows,
      c.cols,
      c.eps,
      arr(gamma.values),
      arr(beta.values),
      { bias: bias && arr(bias.values) },
    );
    return {
      call: () =>
        outputs({
          ...addLayerNorm({
            x1: x1.tensor,
            x2: x2.tensor,
            gamma: gamma.tensor,
            beta: beta.tensor,
            bias: bias?.tensor,
            epsilon: c.eps,
            additionalOutput: true,
          }),
        }),
      expect() {
        const terms = maxAbs(e.x) * maxAbs(e.rstd) * maxAbs(gamma.values);
        return {
          y: { expected: e.y, tol: normalizedTolerance(TOLERANCE[c.dtype], terms, e.y) },
          mean: { expected: e.mean, tol: meanTolerance(F32, e.x, e.mean) },
          rstd: { expected: e.rstd, tol: F32 },
          // The float32 sum rounded once to the dtype (tests/ops/add_layer_norm.test.ts).
          x: { expected: e.x, tol: looser(F32, TOLERANCE[c.dtype]) },
        };
      },
    };
  },
);

// ------------------------------------------------------------------ adaLayerNormV2

/** [B, S, H] shapes: the rows as B batches of S tokens. */
const adaShapeArb: fc.Arbitrary<RowShape> = fc.tuple(colsArb, numelTargetArb, pick([1, 2, 3], 1, 9))
  .map(([H, target, B0]) => {
    const rows = Math.max(1, Math.min(Math.round(target / H), Math.floor(MAX_NUMEL / H)));
    const B = Math.min(B0, rows);
    const S = Math.max(1, Math.floor(rows / B));
    return { shape: [B, S, H], rows: B * S, cols: H, normDims: 1 };
  });

largeProperty(
  "adaLayerNormV2",
  rowCase((dtype) =>
    fc.record({
      paramDType: fc.option(fc.constantFrom(dtype, f32), { nil: undefined }),
      broadcastS: fc.boolean(),
    }), adaShapeArb),
  (c) => {
    const [B, S, H] = c.shape;
    const p = c.extra;
    const x = placeIn(dataValues(c.data, numel(c.shape), c.seed), c.shape, c.dtype, c.layout);
    const form = p.broadcastS ? [B, 1, H] : [B, H];
    const scale = perColumn(form, c.seed + 1, c.dtype, -0.5, 0.5);
    const shift = perColumn(form, c.seed + 2, c.dtype, -1, 1);
    const weight = p.paramDType && perColumn([H], c.seed + 3, p.paramDType, 0.5, 1.5);
    const bias = p.paramDType && perColumn([H], c.seed + 4, p.paramDType, -1, 1);
    const e = adaLayerNorm64(
      arr(x.values),
      S,
      H,
      c.eps,
      arr(scale.values),
      arr(shift.values),
      weight && arr(weight.values),
      bias && arr(bias.values),
    );
    return {
      call: () =>
        outputs({
          ...adaLayerNormV2({
            x: x.tensor,
            scale: scale.tensor,
            shift: shift.tensor,
            weight: weight?.tensor,
            bias: bias?.tensor,
            epsilon: c.eps,
          }),
        }),
      expect() {
        const terms = maxAbs(x.values) * maxAbs(e.rstd) * (weight ? maxAbs(weight.values) : 1) *
          (1 + maxAbs(scale.values));
        const t = looser(TOLERANCE[c.dtype], F32); // tests/ops/ada_layer_norm.test.ts
        return {
          output: { expected: e.y, tol: normalizedTolerance(t, terms, e.y) },
          mean: { expected: e.mean, tol: meanTolerance(t, x.values, e.mean) },
          rstd: { expected: e.rstd, tol: t },
        };
      },
    };
  },
);
