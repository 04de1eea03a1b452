/**
 * The fused row norms' gradients of the property sweep (sweep.ts): aclnnAddLayerNormGrad
 * (with and without dsum) and aclnnDeepNormGrad over the last dim of every sweep shape, with
 * the statistics of x1 + x2 (alpha * x + gx) computed in float64 from the data, as the
 * forward would give them; aclnnAdaLayerNormBackward over [B..., S, H] (scale [B..., H], shift
 * [B..., 1, H]; without and with weight and bias), its statistics rounded to the data's dtype
 * (the dtype CANN takes them in).
 *
 * @module
 */

import { adaLayerNormBackward, addLayerNormGrad, deepNormGrad, Tensor } from "../../mod.ts";
import { placeOn } from "./model.ts";
import { dataTensor, type SweepOp, type SweepPoint, values } from "./sweep.ts";

const LAYOUTS = ["contiguous", "channels-last", "strided"] as const;
const EPS = 1e-5;
const ALPHA = 0.3;

/**
 * float32 mean and rstd of each row of a * x1 + x2 (the logical values of both), in float64,
 * shaped as the data's leading dims then 1.
 */
function sumStats(x1: Tensor, x2: Tensor, a: number): { mean: Tensor; rstd: Tensor } {
  const H = x1.shape[x1.rank - 1];
  const u = x1.toFloat64Array();
  const v = x2.toFloat64Array();
  const n = u.length / H;
  const mean = new Float64Array(n);
  const rstd = new Float64Array(n);
  for (let r = 0; r < n; r++) {
    let s = 0;
    for (let j = 0; j < H; j++) s += a * u[r * H + j] + v[r * H + j];
    const m = s / H;
    let q = 0;
    for (let j = 0; j < H; j++) q += (a * u[r * H + j] + v[r * H + j] - m) ** 2;
    mean[r] = m;
    rstd[r] = 1 / Math.sqrt(q / H + EPS);
  }
  const shape = [...x1.shape.slice(0, -1), 1];
  return {
    mean: Tensor.fromArray(mean, shape, "float32"),
    rstd: Tensor.fromArray(rstd, shape, "float32"),
  };
}

/** The gradients' data of point `p`: dy, two summands, gamma, their statistics. */
function gradInputs(p: SweepPoint, a: number) {
  const H = p.shape[p.shape.length - 1];
  const dy = dataTensor(p, p.seed, -1, 1);
  const x1 = dataTensor(p, p.seed + 1);
  const x2 = dataTensor(p, p.seed + 2);
  const gamma = values([H], p.dtype, p.seed + 3, 0.5, 1.5);
  return { dy, x1, x2, gamma, ...sumStats(x1, x2, a) };
}

const addLayerNormGradOp: SweepOp = {
  op: "addLayerNormGrad",
  kernels: ["aclnnAddLayerNormGrad"],
  mixed: false,
  layouts: LAYOUTS,
  variants: ["", "dsum"],
  extraDTypes: ["float32"],
  build(p) {
    const t = gradInputs(p, 1);
    const dsum = p.variant === "dsum" ? dataTensor(p, p.seed + 4, -1, 1) : undefined;
    return (d) => {
      const r = addLayerNormGrad({
        dy: placeOn(t.dy, d),
        x1: placeOn(t.x1, d),
        x2: placeOn(t.x2, d),
        rstd: placeOn(t.rstd, d),
        mean: placeOn(t.mean, d),
        gamma: placeOn(t.gamma, d),
        dsum: dsum && placeOn(dsum, d),
      });
      return { dx: r.dx, dgamma: r.dgamma, dbeta: r.dbeta };
    };
  },
};

const deepNormGradOp: SweepOp = {
  op: "deepNormGrad",
  kernels: ["aclnnDeepNormGrad"],
  mixed: false,
  layouts: LAYOUTS,
  variants: [""],
  extraDTypes: ["float32"],
  build(p) {
    const t = gradInputs(p, ALPHA);
    return (d) => {
      const r = deepNormGrad({
        dy: placeOn(t.dy, d),
        x: placeOn(t.x1, d),
        gx: placeOn(t.x2, d),
        gamma: placeOn(t.gamma, d),
        mean: placeOn(t.mean, d),
        rstd: placeOn(t.rstd, d),
        alpha: ALPHA,
      });
      return { dx: r.dx, dgx: r.dgx, dbeta: r.dbeta, dgamma: r.dgamma };
    };
  },
};

const adaLayerNormBackwardOp: SweepOp = {
  op: "adaLayerNormBackward",
  kernels: ["aclnnAdaLayerNormBackward"],
  mixed: false,
  layouts: LAYOUTS,
  variants: ["", "affine"],
  extraDTypes: ["float32"],
  build(p) {
    const H = p.shape[p.shape.length - 1];
    const lead = p.shape.slice(0, -2);
    const input = dataTensor(p, p.seed + 1);
    const s = sumStats(input, Tensor.zeros(input.shape), 1);
    const stat = (t: Tensor) => Tensor.fromArray(t.toFloat64Array(), t.shape, p.dtype);
    const t = {
      gradOut: dataTensor(p, p.seed, -1, 1),
      input,
      rstd: stat(s.rstd),
      mean: stat(s.mean),
      scale: values([...lead, H], p.dtype, p.seed + 2, -0.5, 0.5),
      shift: values([...lead, 1, H], p.dtype, p.seed + 3),
    };
    const affine = p.variant === "affine";
    const weight = affine ? values([H], p.dtype, p.seed + 4, 0.5, 1.5) : undefined;
    const bias = affine ? values([H], p.dtype, p.seed + 5) : undefined;
    return (d) => {
      const r = adaLayerNormBackward({
        gradOut: placeOn(t.gradOut, d),
        input: placeOn(t.input, d),
        normalizedShape: [H],
        rstd: placeOn(t.rstd, d),
        mean: placeOn(t.mean, d),
        scale: placeOn(t.scale, d),
        shift: placeOn(t.shift, d),
        weight: weight && placeOn(weight, d),
        bias: bias && placeOn(bias, d),
      });
      return {
        gradInput: r.gradInput!,
        gradScale: r.gradScale!,
        gradShift: r.gradShift!,
        gradWeight: r.gradWeight!,
        gradBias: r.gradBias!,
      };
    };
  },
};

/** The fused gradients of the sweep, in the order of the report. */
export const SWEEP_ROW_GRAD_OPS: readonly SweepOp[] = [
  addLayerNormGradOp,
  deepNormGradOp,
  adaLayerNormBackwardOp,
];
