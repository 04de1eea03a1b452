/**
 * The activated GroupNorm gradients of the property sweep (sweep.ts), beside groupNorm's ops
 * (sweep_ops.ts): aclnnGroupNormSwishGrad (Ascend 950, A3, A2) with the forward's statistics
 * from the float64 oracle rounded to the point's dtype (the operator takes every tensor in one
 * dtype), scale 1 ("silu") and 0.6 ("swish 0.6"), each point's data seeded as the others are.
 *
 * @module
 */

import { groupNormSwishGrad, Tensor } from "../../mod.ts";
import { groupStats64 } from "../../tests/oracle/mod.ts";
import { placeOn } from "./model.ts";
import { dataTensor, type SweepOp, values } from "./sweep.ts";

const EPS = 1e-5;

const groupNormSwishGradOp: SweepOp = {
  op: "groupNormSwishGrad",
  kernels: ["aclnnGroupNormSwishGrad"],
  mixed: false,
  layouts: ["contiguous", "channels-last", "strided"],
  variants: ["silu", "swish 0.6"],
  build(p) {
    const [N, C] = p.shape;
    const HxW = p.shape.slice(2).reduce((a, b) => a * b, 1);
    const numGroups = C % 2 === 0 ? C / 2 : C;
    const dy = dataTensor(p, p.seed, -1, 1);
    const x = dataTensor(p, p.seed + 1);
    const st = groupStats64(x.toFloat64Array(), N, C, HxW, numGroups);
    const mean = Tensor.fromArray(st.mean, [N, numGroups], p.dtype);
    const rstd = Tensor.fromArray(
      st.variance.map((v) => 1 / Math.sqrt(v + EPS)),
      [N, numGroups],
      p.dtype,
    );
    const gamma = values([C], p.dtype, p.seed + 2, 0.5, 1.5);
    const beta = values([C], p.dtype, p.seed + 3, -0.5, 0.5);
    const swishScale = p.variant === "silu" ? 1 : 0.6;
    return (d) => {
      const r = groupNormSwishGrad({
        dy: placeOn(dy, d),
        mean: placeOn(mean, d),
        rstd: placeOn(rstd, d),
        x: placeOn(x, d),
        gamma: placeOn(gamma, d),
        beta: placeOn(beta, d),
        numGroups,
        swishScale,
      });
      return { dx: r.dx, dgamma: r.dgamma, dbeta: r.dbeta };
    };
  },
};

/** The activated GroupNorm operators of the sweep, in the order of the report. */
export const SWEEP_GROUP_NORM_ACT_OPS: readonly SweepOp[] = [groupNormSwishGradOp];
