/**
 * aclnnDeepNormGrad: the gradients of aclnnDeepNorm from the forward's per-row mean and rstd.
 * Per row of D = numel(gamma) elements, with s = alpha * x + gx (recomputed in float32, as the
 * kernel does), xm = s - mean and g = dy * gamma:
 *
 * ```
 * dgx    = rstd * (g - sum(g) / D - xm * rstd^2 * sum(g * xm) / D)   (LayerNorm's, at s)
 * dx     = alpha * dgx
 * dgamma = sum over rows of dy * xm * rstd
 * dbeta  = sum over rows of dy
 * ```
 *
 * @example
 * ```ts
 * import { deepNorm, deepNormGrad, Tensor } from "@aclnn/norm";
 * const x = Tensor.fromArray([1, 2, 3, 4], [1, 4]);
 * const gx = Tensor.fromArray([0, 1, 0, 1], [1, 4]);
 * const gamma = Tensor.ones([4]);
 * const f = deepNorm({ x, gx, beta: Tensor.zeros([4]), gamma, alpha: 2 });
 * const g = deepNormGrad({ dy: Tensor.ones([1, 4]), x, gx, gamma, mean: f.mean, rstd: f.rstd, alpha: 2 });
 * console.log(g.dbeta.toArray()); // [1, 1, 1, 1]
 * ```
 *
 * @module
 */

import type { DeepNormGradPlan, DeepNormGradTensors } from "../backends/mod.ts";
import { rowGeometry } from "../backends/mod.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import { Tensor } from "../tensor/tensor.ts";
import { z } from "./zod.ts";
import { checkDeepNormGradShapes, checkGradDTypes } from "./fused_grad_checks.ts";
import { placeRowNorm } from "./row_norm_checks.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnDeepNormGrad";

/** Preallocated outputs of {@linkcode deepNormGrad} (CANN dxOut, dgxOut, dbetaOut, dgammaOut). */
export interface DeepNormGradOut {
  /** Receives dx: dy's shape and dtype, any strides. */
  dx?: Tensor | null;
  /** Receives dgx: dy's shape and dtype, any strides. */
  dgx?: Tensor | null;
  /** Receives dbeta: float32, gamma's shape. */
  dbeta?: Tensor | null;
  /** Receives dgamma: float32, gamma's shape. */
  dgamma?: Tensor | null;
}

/** Arguments of {@linkcode deepNormGrad} (names as in CANN, Optional/Out dropped). */
export interface DeepNormGradArgs {
  /** dL/dy, rank 2-8, float32/float16/bfloat16. */
  dy: check.MaybeTensor;
  /** The forward's x (scaled by alpha): dy's shape and dtype. */
  x: check.MaybeTensor;
  /** The forward's gx: dy's shape and dtype. */
  gx: check.MaybeTensor;
  /** Scale of the forward: dy's trailing dims (1 to 7 of them, fewer than dy's), dy's dtype. */
  gamma: check.MaybeTensor;
  /** Per-row mean of the forward: float32, dy's dims before gamma's, one value per row. */
  mean: check.MaybeTensor;
  /** Per-row rstd of the forward: as mean. */
  rstd: check.MaybeTensor;
  /** x's factor in the forward (a float32 attribute in CANN). Default 0.3. */
  alpha?: number;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: DeepNormGradOut;
}

/** Results of {@linkcode deepNormGrad}; `using` frees the outputs the call allocated. */
export interface DeepNormGradResult extends Disposable {
  /** dL/dx = alpha * dgx, dy's dtype. */
  dx: Tensor;
  /** dL/dgx, dy's dtype. */
  dgx: Tensor;
  /** dL/dbeta, float32. */
  dbeta: Tensor;
  /** dL/dgamma, float32. */
  dgamma: Tensor;
}

const scalarsSchema = z.object({ alpha: check.finiteNumber.default(0.3) });

/**
 * Computes the DeepNorm gradients as aclnnDeepNormGrad does, on the CPU or on the NPU the
 * tensors live on.
 *
 * Validation, in the order of CANN's generated operator (ops-nn `norm/deep_norm_grad/op_host/
 * deep_norm_grad_def.cpp`, then `arch22/deep_norm_grad_tiling.cpp`): 161001 when dy, x, gx,
 * gamma, mean or rstd is missing or an `out` entry is `null`; 161002 when dy is not
 * float32/float16/bfloat16, x, gx, gamma, dx or dgx has another dtype, or mean, rstd, dbeta,
 * dgamma are not float32. Every output empty: SUCCESS with nothing written. Then 561002 (the
 * tiling): dy rank not 2-8, gamma rank not 1-7, x/gx/dx/dgx/mean/rstd of another rank than dy,
 * dbeta/dgamma of another rank than gamma, gamma of dy's rank or more, a dim of dy 0, x/gx/dx/dgx
 * not dy's shape, mean/rstd not starting with dy's leading dims, gamma not dy's trailing dims,
 * dgamma/dbeta not gamma's shape, mean/rstd not one value per row (this package's rule: the
 * kernel reads one per row). On an NPU the chip's rules apply too (not on Atlas training or
 * 200I/500 A2; no bfloat16 on the Atlas inference series).
 *
 * @example
 * ```ts
 * import { deepNorm, deepNormGrad, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([2, 3, 16], { seed: 1, dtype: "bfloat16" });
 * const gx = Tensor.random([2, 3, 16], { seed: 2, dtype: "bfloat16" });
 * const gamma = Tensor.ones([16], "bfloat16");
 * const f = deepNorm({ x, gx, beta: Tensor.zeros([16], "bfloat16"), gamma, alpha: 0.87 });
 * const dy = Tensor.random([2, 3, 16], { seed: 3, dtype: "bfloat16" });
 * const r = deepNormGrad({ dy, x, gx, gamma, mean: f.mean, rstd: f.rstd, alpha: 0.87 });
 * console.log(r.dx.dtype, r.dgamma.dtype); // bfloat16 float32
 * ```
 */
export function deepNormGrad(args: DeepNormGradArgs): DeepNormGradResult {
  return call(args);
}

type Output = "dx" | "dgx" | "dbeta" | "dgamma";

/** What validation established; `empty`: every output is empty (no launch). */
type Validated = PlannedCall<Output, DeepNormGradPlan, DeepNormGradTensors> & {
  readonly empty: boolean;
};

const call = defineOperator<DeepNormGradArgs, Output, Validated, DeepNormGradResult>({
  op: OP,
  args: ["dy", "x", "gx", "gamma", "mean", "rstd", "alpha"],
  outputs: {
    dx: (v) => Tensor.emptyLike(v.tensors.dy, v.tensors.dy.dtype, v.device),
    dgx: (v) => Tensor.emptyLike(v.tensors.dy, v.tensors.dy.dtype, v.device),
    dbeta: (v) => Tensor.empty(v.tensors.gamma.shape, "float32", v.device),
    dgamma: (v) => Tensor.empty(v.tensors.gamma.shape, "float32", v.device),
  },
  validate,
  run: (v, o) => {
    if (v.empty) return;
    const outputs = { dx: o.dx!, dgx: o.dgx!, dbeta: o.dbeta!, dgamma: o.dgamma! };
    v.backend.deepNormGrad(v.plan, { ...v.tensors, ...outputs });
  },
});

function validate(args: DeepNormGradArgs): Validated {
  const dy = check.requireTensor(OP, "dy", args.dy);
  const x = check.requireTensor(OP, "x", args.x);
  const gx = check.requireTensor(OP, "gx", args.gx);
  const gamma = check.requireTensor(OP, "gamma", args.gamma);
  const mean = check.requireTensor(OP, "mean", args.mean);
  const rstd = check.requireTensor(OP, "rstd", args.rstd);
  const dx = check.requestedOutput(OP, "dx", args.out, true);
  const dgx = check.requestedOutput(OP, "dgx", args.out, true);
  const dbeta = check.requestedOutput(OP, "dbeta", args.out, true);
  const dgamma = check.requestedOutput(OP, "dgamma", args.out, true);
  const { alpha } = check.parseArguments(OP, scalarsSchema, args);

  // The OpDef's rows (deep_norm_grad_def.cpp; docs/norm_family_kernels.md 4).
  check.checkDType(OP, "dy", dy, FLOAT_DTYPES);
  checkGradDTypes(
    OP,
    [["dy", dy], ["x", x], ["gx", gx], ["gamma", gamma], ["dx", dx], ["dgx", dgx]],
    [["mean", mean], ["rstd", rstd], ["dbeta", dbeta], ["dgamma", dgamma]],
    ["x", "gx", "gamma", "mean", "rstd", "dx", "dgx", "dbeta", "dgamma"],
  );

  const geometry = rowGeometry(dy.shape, Math.max(0, dy.rank - gamma.rank));
  const given = { dx, dgx, dbeta, dgamma };
  const empty = (dx ?? dy).numel === 0 && (dgx ?? dy).numel === 0 &&
    (dbeta ?? gamma).numel === 0 && (dgamma ?? gamma).numel === 0;
  const read = { dy, x, gx, gamma, mean, rstd };
  const { device, backend } = placeRowNorm(OP, given, read, geometry);
  if (!empty) {
    const outputs = { ...(dx ? { dx } : {}), ...(dgx ? { dgx } : {}) };
    checkDeepNormGradShapes(OP, {
      dy,
      inputs: { x, gx },
      outputs,
      mean,
      rstd,
      gamma,
      dgamma: dgamma ?? gamma,
      dbeta: dbeta ?? gamma,
    }, geometry.rows);
  }
  const plan = { geometry, alpha: Math.fround(alpha) };
  return { device, backend, plan, tensors: read, given, empty };
}
