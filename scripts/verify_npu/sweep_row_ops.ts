/**
 * The row norms of the property sweep (sweep.ts): LayerNorm, RMSNorm and their fused forms over
 * the last dim of every sweep shape (gamma and beta of that dim, in the data's dtype), with the
 * statistics the backward calls take computed in float64 from the data (as a training step's
 * forward would give them). Every output, in-place updates included, is compared.
 *
 * @module
 */

import {
  addLayerNorm,
  type AddLayerNormResult,
  addRmsNorm,
  deepNorm,
  type Device,
  fastLayerNorm,
  gemmaRmsNorm,
  inplaceAddRmsNorm,
  layerNorm,
  layerNormBackward,
  rmsNorm,
  rmsNormGrad,
  Tensor,
} from "../../mod.ts";
import { type Outputs, placeOn } from "./model.ts";
import { dataTensor, type SweepOp, type SweepPoint, values } from "./sweep.ts";
import { addLayerNormStoresStatistics } from "../../src/backends/ascend/soc_fused.ts";

const LAYOUTS = ["contiguous", "channels-last", "strided"] as const;
const EPS = 1e-5;

/** The normalized (last) dim of a point, and the shape of its per-row statistics. */
function rows(p: SweepPoint): { H: number; statShape: number[] } {
  const H = p.shape[p.shape.length - 1];
  return { H, statShape: [...p.shape.slice(0, -1), 1] };
}

/**
 * float32 mean and rstd = 1/sqrt(var + eps) (LayerNorm; `rms`: rstd of the mean square) of
 * each row of `x`'s logical values, computed in float64.
 */
function rowStats(x: Tensor, rms: boolean): { mean: Tensor; rstd: Tensor } {
  const H = x.shape[x.rank - 1];
  const v = x.toFloat64Array();
  const n = v.length / H;
  const mean = new Float64Array(n);
  const rstd = new Float64Array(n);
  for (let r = 0; r < n; r++) {
    let s = 0;
    for (let j = 0; j < H; j++) s += v[r * H + j];
    const m = rms ? 0 : s / H;
    let q = 0;
    for (let j = 0; j < H; j++) q += (v[r * H + j] - m) ** 2;
    mean[r] = m;
    rstd[r] = 1 / Math.sqrt(q / H + EPS);
  }
  const shape = [...x.shape.slice(0, -1), 1];
  return {
    mean: Tensor.fromArray(mean, shape, "float32"),
    rstd: Tensor.fromArray(rstd, shape, "float32"),
  };
}

/**
 * A float32 statistic compared at the data's precision, where chips differ on the dtype they
 * form it in: AddRmsNorm's rstd from the float sum x or from x rounded to the data's dtype
 * (ops-nn norm/add_rms_norm/op_kernel: the Ascend 950 regbase kernel and the A2/A3 bfloat16
 * NORMAL template keep the float sum, the other templates round it); LayerNorm's mean and rstd
 * from LayerNormV4 in float, or from LayerNormV3 in the weight's and bias's dtypes
 * (tests/sim/README_norm.md, aclnnLayerNorm). The CPU backend keeps them in float32
 * (src/backends/cpu/wasm/row_norms.wat), so they move by up to the data dtype's rounding, past
 * float32's tolerance.
 */
export function atDataPrecision(t: Tensor, dtype: Tensor["dtype"]): Outputs[string] {
  return { dtype, shape: [...t.shape], values: t.toFloat64Array() };
}

/** A sweep op over one aclnn operator, with no variants and no mixed statistics. */
function rowOp(op: string, kernel: SweepOp["kernels"][number], build: SweepOp["build"]): SweepOp {
  return { op, kernels: [kernel], mixed: false, layouts: LAYOUTS, variants: [""], build };
}

/**
 * layerNorm, or fastLayerNorm (aclnnFastLayerNorm: layerNorm's math through LayerNormV4 alone,
 * ops-nn layer_norm_v4/op_host/op_api/aclnn_fast_layer_norm.cpp; Atlas A2/A3 only), whose mean
 * and rstd are compared at the data's precision as layerNorm's are.
 */
const layerNormForm = (op: "layerNorm" | "fastLayerNorm") =>
  rowOp(op, op === "layerNorm" ? "aclnnLayerNorm" : "aclnnFastLayerNorm", (p) => {
    const { H } = rows(p);
    const input = dataTensor(p, p.seed);
    const weight = values([H], p.dtype, p.seed + 1, 0.5, 1.5);
    const bias = values([H], p.dtype, p.seed + 2, -0.5, 0.5);
    const run = op === "layerNorm" ? layerNorm : fastLayerNorm;
    return (d) => {
      const r = run({
        input: placeOn(input, d),
        normalizedShape: [H],
        weight: placeOn(weight, d),
        bias: placeOn(bias, d),
        eps: EPS,
      });
      return {
        output: r.output,
        "mean (data's precision)": atDataPrecision(r.mean, p.dtype),
        "rstd (data's precision)": atDataPrecision(r.rstd, p.dtype),
      };
    };
  });

const layerNormBackwardOp = rowOp("layerNormBackward", "aclnnLayerNormBackward", (p) => {
  const { H } = rows(p);
  const gradOut = dataTensor(p, p.seed, -1, 1);
  const input = dataTensor(p, p.seed + 1);
  const weight = values([H], p.dtype, p.seed + 2, 0.5, 1.5);
  const bias = values([H], p.dtype, p.seed + 3, -0.5, 0.5);
  const { mean, rstd } = rowStats(input, false);
  return (d) => {
    const r = layerNormBackward({
      gradOut: placeOn(gradOut, d),
      input: placeOn(input, d),
      normalizedShape: [H],
      mean: placeOn(mean, d),
      rstd: placeOn(rstd, d),
      weight: placeOn(weight, d),
      bias: placeOn(bias, d),
      outputMask: [true, true, true],
    });
    return { gradInput: r.gradInput, gradWeight: r.gradWeight, gradBias: r.gradBias };
  };
});

/** rmsNorm or gemmaRmsNorm (the same arguments and outputs). */
function rmsForwardOp(op: "rmsNorm" | "gemmaRmsNorm"): SweepOp {
  const call = op === "rmsNorm" ? rmsNorm : gemmaRmsNorm;
  return rowOp(op, op === "rmsNorm" ? "aclnnRmsNorm" : "aclnnGemmaRmsNorm", (p) => {
    const { H } = rows(p);
    const x = dataTensor(p, p.seed);
    const gamma = values([H], p.dtype, p.seed + 1, 0.5, 1.5);
    return (d) => {
      const r = call({ x: placeOn(x, d), gamma: placeOn(gamma, d), epsilon: 1e-6 });
      return { y: r.y, rstd: r.rstd };
    };
  });
}

const rmsNormGradOp = rowOp("rmsNormGrad", "aclnnRmsNormGrad", (p) => {
  const { H } = rows(p);
  const dy = dataTensor(p, p.seed, -1, 1);
  const x = dataTensor(p, p.seed + 1);
  const gamma = values([H], p.dtype, p.seed + 2, 0.5, 1.5);
  const { rstd } = rowStats(x, true);
  return (d) => {
    const r = rmsNormGrad({
      dy: placeOn(dy, d),
      x: placeOn(x, d),
      rstd: placeOn(rstd, d),
      gamma: placeOn(gamma, d),
    });
    return { dx: r.dx, dgamma: r.dgamma };
  };
});

const addRmsNormOp = rowOp("addRmsNorm", "aclnnAddRmsNorm", (p) => {
  const { H } = rows(p);
  const x1 = dataTensor(p, p.seed);
  const x2 = dataTensor(p, p.seed + 1);
  const gamma = values([H], p.dtype, p.seed + 2, 0.5, 1.5);
  return (d) => {
    const r = addRmsNorm({
      x1: placeOn(x1, d),
      x2: placeOn(x2, d),
      gamma: placeOn(gamma, d),
      epsilon: 1e-6,
    });
    return { y: r.y, "rstd (data's precision)": atDataPrecision(r.rstd, p.dtype), x: r.x };
  };
});

const inplaceAddRmsNormOp = rowOp("inplaceAddRmsNorm", "aclnnInplaceAddRmsNorm", (p) => {
  const { H } = rows(p);
  const x1 = dataTensor(p, p.seed);
  const x2 = dataTensor(p, p.seed + 1);
  const gamma = values([H], p.dtype, p.seed + 2, 0.5, 1.5);
  return (d) => {
    const x1Ref = placeOn(x1, d);
    const x2Ref = placeOn(x2, d);
    const r = inplaceAddRmsNorm({ x1Ref, x2Ref, gamma: placeOn(gamma, d), epsilon: 1e-6 });
    return {
      "rstd (data's precision)": atDataPrecision(r.rstd, p.dtype),
      "x1Ref (in place)": x1Ref,
      "x2Ref (in place)": x2Ref,
    };
  };
});

/** addLayerNorm's call on point `p`, with or without bias (variant "bias"). */
function addLayerNormCall(p: SweepPoint): (d: Device) => AddLayerNormResult {
  const { H } = rows(p);
  const x1 = dataTensor(p, p.seed);
  const x2 = dataTensor(p, p.seed + 1);
  const gamma = values([H], p.dtype, p.seed + 2, 0.5, 1.5);
  const beta = values([H], p.dtype, p.seed + 3, -0.5, 0.5);
  const bias = p.variant === "bias" ? values([H], p.dtype, p.seed + 4, -0.5, 0.5) : undefined;
  return (d) =>
    addLayerNorm({
      x1: placeOn(x1, d),
      x2: placeOn(x2, d),
      gamma: placeOn(gamma, d),
      beta: placeOn(beta, d),
      bias: bias && placeOn(bias, d),
      epsilon: EPS,
      additionalOutput: true,
    });
}

const addLayerNormOp: SweepOp = {
  ...rowOp("addLayerNorm", "aclnnAddLayerNorm", (p) => {
    const run = addLayerNormCall(p);
    return (d) => {
      const r = run(d);
      return { y: r.y, x: r.x };
    };
  }),
  variants: ["", "bias"],
};

/**
 * addLayerNorm's mean and rstd, on the chips whose kernel writes them (not the Atlas inference
 * series, where the library gives NaN: soc_fused.ts addLayerNormStoresStatistics).
 */
const addLayerNormStatisticsOp: SweepOp = {
  ...rowOp("addLayerNorm (mean and rstd)", "aclnnAddLayerNorm", (p) => {
    const run = addLayerNormCall(p);
    return (d) => {
      const r = run(d);
      return { mean: r.mean, rstd: r.rstd };
    };
  }),
  alsoRefused: (family) =>
    addLayerNormStoresStatistics(family)
      ? undefined
      : `aclnnAddLayerNorm writes no mean or rstd on ${family.name}`,
};

const deepNormOp = rowOp("deepNorm", "aclnnDeepNorm", (p) => {
  const { H } = rows(p);
  const x = dataTensor(p, p.seed);
  const gx = dataTensor(p, p.seed + 1);
  const gamma = values([H], p.dtype, p.seed + 2, 0.5, 1.5);
  const beta = values([H], p.dtype, p.seed + 3, -0.5, 0.5);
  return (d) => {
    const r = deepNorm({
      x: placeOn(x, d),
      gx: placeOn(gx, d),
      beta: placeOn(beta, d),
      gamma: placeOn(gamma, d),
      alpha: 0.3,
      epsilon: 1e-6,
    });
    return { mean: r.mean, rstd: r.rstd, y: r.y };
  };
});

/** The row norms of the sweep, in the order of the report. */
export const SWEEP_ROW_OPS: readonly SweepOp[] = [
  layerNormForm("layerNorm"),
  layerNormForm("fastLayerNorm"),
  layerNormBackwardOp,
  rmsForwardOp("rmsNorm"),
  rmsNormGradOp,
  addRmsNormOp,
  rmsForwardOp("gemmaRmsNorm"),
  inplaceAddRmsNormOp,
  addLayerNormOp,
  addLayerNormStatisticsOp,
  deepNormOp,
];
