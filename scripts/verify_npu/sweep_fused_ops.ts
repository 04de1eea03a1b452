/**
 * The fused forwards of the property sweep (sweep.ts): aclnnAddRmsNormCast and adaptive
 * LayerNorm (aclnnAdaLayerNorm, aclnnAdaLayerNormV2) over the last dim of every sweep shape, and
 * GroupNorm with SiLU / Swish (aclnnGroupNormSilu, aclnnGroupNormSiluV2, aclnnGroupNormSwish)
 * over dim 1. Outputs whose precision chips choose differently are compared at the data's
 * precision (atDataPrecision, sweep_row_ops.ts).
 *
 * @module
 */

import {
  adaLayerNorm,
  adaLayerNormV2,
  addRmsNormCast,
  groupNormSilu,
  groupNormSiluV2,
  groupNormSwish,
} from "../../mod.ts";
import { placeOn } from "./model.ts";
import { dataTensor, type SweepOp, type SweepPoint, values } from "./sweep.ts";
import { atDataPrecision } from "./sweep_row_ops.ts";

const ROW_LAYOUTS = ["contiguous", "channels-last", "strided"] as const;

const addRmsNormCastOp: SweepOp = {
  op: "addRmsNormCast",
  kernels: ["aclnnAddRmsNormCast"],
  mixed: false,
  layouts: ROW_LAYOUTS,
  variants: [""],
  dtypes: ["float16", "bfloat16"],
  extraDTypes: ["float32"],
  build(p) {
    const H = p.shape[p.shape.length - 1];
    const x1 = dataTensor(p, p.seed);
    const x2 = dataTensor(p, p.seed + 1);
    const gamma = values([H], p.dtype, p.seed + 2, 0.5, 1.5);
    return (d) => {
      const r = addRmsNormCast({
        x1: placeOn(x1, d),
        x2: placeOn(x2, d),
        gamma: placeOn(gamma, d),
        epsilon: 1e-6,
      });
      // A2/A3 store y1 = float(y2) and take rstd from the rounded sum (docs/norm_family_kernels.md
      // section 7); the 950 and the CPU backend keep both in float32.
      return {
        "y1 (data's precision)": atDataPrecision(r.y1, p.dtype),
        y2: r.y2,
        "rstd (data's precision)": atDataPrecision(r.rstd, p.dtype),
        x: r.x,
      };
    };
  },
};

/** adaLayerNorm's inputs of point `p`: x [B..., S, H], scale and shift [B..., 1, H]. */
function adaInputs(p: SweepPoint) {
  const H = p.shape[p.shape.length - 1];
  const perBatch = [...p.shape.slice(0, -2), 1, H];
  return {
    x: dataTensor(p, p.seed),
    scale: values(perBatch, p.dtype, p.seed + 1, -0.5, 0.5),
    shift: values(perBatch, p.dtype, p.seed + 2, -0.5, 0.5),
    weight: values([H], p.dtype, p.seed + 3, 0.5, 1.5),
    bias: values([H], p.dtype, p.seed + 4, -0.5, 0.5),
  };
}

const adaLayerNormOp: SweepOp = {
  op: "adaLayerNorm",
  kernels: ["aclnnAdaLayerNorm"],
  mixed: false,
  layouts: ROW_LAYOUTS,
  variants: [""],
  build(p) {
    const t = adaInputs(p);
    return (d) => {
      const r = adaLayerNorm({
        x: placeOn(t.x, d),
        scale: placeOn(t.scale, d),
        shift: placeOn(t.shift, d),
        weight: placeOn(t.weight, d),
        bias: placeOn(t.bias, d),
        epsilon: 1e-5,
      });
      return { output: r.output };
    };
  },
};

const adaLayerNormV2Op: SweepOp = {
  op: "adaLayerNormV2",
  kernels: ["aclnnAdaLayerNormV2"],
  mixed: false,
  layouts: ROW_LAYOUTS,
  variants: [""],
  build(p) {
    const t = adaInputs(p);
    return (d) => {
      const r = adaLayerNormV2({
        x: placeOn(t.x, d),
        scale: placeOn(t.scale, d),
        shift: placeOn(t.shift, d),
        weight: placeOn(t.weight, d),
        bias: placeOn(t.bias, d),
        epsilon: 1e-5,
      });
      return { output: r.output, mean: r.mean, rstd: r.rstd };
    };
  },
};

/** The group count of a point: C / 2 for even C, else C (as sweep_ops.ts's GroupNorm). */
function groupsOf(C: number): number {
  return C % 2 === 0 ? C / 2 : C;
}

/**
 * The sweep shapes with at least 8 elements per group: the A2/A3 and inference-series kernels of
 * aclnnGroupNormSilu take the variance as E[x^2] - mean^2 in float32 (docs/norm_family_kernels.md
 * section 9), which a group of two close values (shape [3,4], group 2) cancels to a few bits:
 * its rstd lands 5e-4 from the CPU backend's two-pass one, a documented difference of those chips,
 * not a fault to report.
 */
function groupsOfEight(shape: readonly number[]): boolean {
  const C = shape[1];
  const perGroup = (C / groupsOf(C)) * shape.slice(2).reduce((a, b) => a * b, 1);
  return perGroup >= 8;
}

/** groupNormSilu, or groupNormSiluV2 with its activation on ("") or off ("plain"). */
function groupNormSiluOp(v2: boolean): SweepOp {
  return {
    op: v2 ? "groupNormSiluV2" : "groupNormSilu",
    kernels: [v2 ? "aclnnGroupNormSiluV2" : "aclnnGroupNormSilu"],
    mixed: false,
    layouts: ["contiguous", "channels-last", "strided"],
    variants: v2 ? ["", "plain"] : [""],
    takes: groupsOfEight,
    build(p) {
      const C = p.shape[1];
      const self = dataTensor(p, p.seed);
      const gamma = values([C], p.dtype, p.seed + 1, 0.5, 1.5);
      const beta = values([C], p.dtype, p.seed + 2, -0.5, 0.5);
      return (d) => {
        const args = {
          self: placeOn(self, d),
          gamma: placeOn(gamma, d),
          beta: placeOn(beta, d),
          group: groupsOf(C),
          eps: 1e-5,
        };
        const r = v2
          ? groupNormSiluV2({ ...args, activateSilu: p.variant !== "plain" })
          : groupNormSilu(args);
        return { output: r.output, mean: r.mean, rstd: r.rstd };
      };
    },
  };
}

const groupNormSwishOp: SweepOp = {
  op: "groupNormSwish",
  kernels: ["aclnnGroupNormSwish"],
  mixed: false,
  layouts: ["contiguous", "channels-last", "strided"],
  variants: ["", "scale 0.7"],
  build(p) {
    const C = p.shape[1];
    const x = dataTensor(p, p.seed);
    const gamma = values([C], p.dtype, p.seed + 1, 0.5, 1.5);
    const beta = values([C], p.dtype, p.seed + 2, -0.5, 0.5);
    return (d) => {
      const r = groupNormSwish({
        x: placeOn(x, d),
        gamma: placeOn(gamma, d),
        beta: placeOn(beta, d),
        numGroups: groupsOf(C),
        eps: 1e-5,
        activateSwish: true,
        swishScale: p.variant === "" ? 1 : 0.7,
      });
      return { y: r.y, mean: r.mean, rstd: r.rstd };
    };
  },
};

/** The fused forwards of the sweep, in the order of the report. */
export const SWEEP_FUSED_OPS: readonly SweepOp[] = [
  addRmsNormCastOp,
  adaLayerNormOp,
  adaLayerNormV2Op,
  groupNormSiluOp(false),
  groupNormSiluOp(true),
  groupNormSwishOp,
];
