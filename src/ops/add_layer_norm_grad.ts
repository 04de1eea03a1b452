/**
 * aclnnAddLayerNormGrad: the gradients of aclnnAddLayerNorm (without bias) from the forward's
 * per-row mean and rstd. Per row of D = numel(gamma) elements, with x = x1 + x2 (recomputed in
 * float32, as the kernel does), xm = x - mean and g = dy * gamma:
 *
 * ```
 * dx     = rstd * (g - sum(g) / D - xm * rstd^2 * sum(g * xm) / D) + dsum
 * dgamma = sum over rows of dy * xm * rstd
 * dbeta  = sum over rows of dy
 * ```
 *
 * dx is the gradient of both x1 and x2 (their sum is what was normalized); dsum is the
 * gradient that reached x along the residual branch (AddLayerNorm's additional output).
 *
 * @example
 * ```ts
 * import { addLayerNorm, addLayerNormGrad, Tensor } from "@aclnn/norm";
 * const x1 = Tensor.fromArray([1, 2, 3, 4], [1, 4]);
 * const x2 = Tensor.fromArray([1, 0, 1, 0], [1, 4]);
 * const gamma = Tensor.ones([4]);
 * const f = addLayerNorm({ x1, x2, gamma, beta: Tensor.zeros([4]) });
 * const g = addLayerNormGrad({ dy: Tensor.ones([1, 4]), x1, x2, rstd: f.rstd, mean: f.mean, gamma });
 * console.log(g.dbeta.toArray()); // [1, 1, 1, 1]
 * ```
 *
 * @module
 */

import type { AddLayerNormGradPlan, AddLayerNormGradTensors } from "../backends/mod.ts";
import { rowGeometry } from "../backends/mod.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import { Tensor } from "../tensor/tensor.ts";
import { checkAddLayerNormGradShapes, checkGradDTypes } from "./fused_grad_checks.ts";
import { placeRowNorm } from "./row_norm_checks.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnAddLayerNormGrad";

/** Preallocated outputs of {@linkcode addLayerNormGrad} (CANN dxOut, dgammaOut, dbetaOut). */
export interface AddLayerNormGradOut {
  /** Receives dx: dy's shape and dtype, any strides. */
  dx?: Tensor | null;
  /** Receives dgamma: float32, gamma's shape. */
  dgamma?: Tensor | null;
  /** Receives dbeta: float32, gamma's shape. */
  dbeta?: Tensor | null;
}

/** Arguments of {@linkcode addLayerNormGrad} (names as in CANN, Optional/Out dropped). */
export interface AddLayerNormGradArgs {
  /** dL/dy, rank 1-8, float32/float16/bfloat16. */
  dy: check.MaybeTensor;
  /** The forward's first summand: dy's shape and dtype. */
  x1: check.MaybeTensor;
  /** The forward's second summand: dy's shape and dtype. */
  x2: check.MaybeTensor;
  /** Per-row rstd of the forward: float32, dy's dims before gamma's then 1 for each gamma dim. */
  rstd: check.MaybeTensor;
  /** Per-row mean of the forward: rstd's shape, float32. */
  mean: check.MaybeTensor;
  /** Scale of the forward: dy's trailing dims, dy's dtype. */
  gamma: check.MaybeTensor;
  /** Gradient added to dx (the residual branch's): dy's shape and dtype. */
  dsum?: check.MaybeTensor;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: AddLayerNormGradOut;
}

/** Results of {@linkcode addLayerNormGrad}; `using` frees the outputs the call allocated. */
export interface AddLayerNormGradResult extends Disposable {
  /** dL/dx1 = dL/dx2, dy's dtype. */
  dx: Tensor;
  /** dL/dgamma, float32. */
  dgamma: Tensor;
  /** dL/dbeta, float32. */
  dbeta: Tensor;
}

/**
 * Computes the AddLayerNorm gradients as aclnnAddLayerNormGrad does, on the CPU or on the NPU
 * the tensors live on.
 *
 * Validation, in the order of CANN's generated operator (ops-nn `norm/add_layer_norm_grad/
 * op_host/add_layer_norm_grad_def.cpp`, then `add_layer_norm_grad_tiling.cpp`): 161001 when dy,
 * x1, x2, rstd, mean or gamma is missing or an `out` entry is `null`; 161002 when dy is not
 * float32/float16/bfloat16, x1, x2, gamma, dsum or dx has another dtype, or rstd, mean, dgamma,
 * dbeta are not float32. Every output empty: SUCCESS with nothing written. Then 561002 (the
 * tiling): gamma empty, x1 or gamma rank not 1-8, rstd/mean of another rank than dy, dgamma/dbeta
 * of another rank than gamma, gamma of more dims than dy, a dim of x1 or mean 0, x1/x2/dx not
 * dy's shape, rstd not mean's, gamma not dy's trailing dims, mean not dy's leading dims then 1s,
 * dgamma/dbeta not gamma's shape, dsum not dy's shape (this package's rule: CANN reads dx's
 * elements from it unchecked). On an NPU the chip's rules apply too (not on Atlas training or
 * 200I/500 A2; no bfloat16 on the Atlas inference series).
 *
 * The column gradients are sums over rows in a fixed order here; CANN adds per-core partials
 * atomically (non-deterministic order) unless deterministic computing is set.
 *
 * @example
 * ```ts
 * import { addLayerNorm, addLayerNormGrad, Tensor } from "@aclnn/norm";
 * const x1 = Tensor.random([2, 3, 16], { seed: 1, dtype: "float16" });
 * const x2 = Tensor.random([2, 3, 16], { seed: 2, dtype: "float16" });
 * const gamma = Tensor.ones([16], "float16");
 * const f = addLayerNorm({ x1, x2, gamma, beta: Tensor.zeros([16], "float16") });
 * const dy = Tensor.random([2, 3, 16], { seed: 3, dtype: "float16" });
 * const { dx, dgamma } = addLayerNormGrad({ dy, x1, x2, rstd: f.rstd, mean: f.mean, gamma });
 * console.log(dx.dtype, dgamma.dtype, dgamma.shape); // float16 float32 [16]
 * ```
 */
export function addLayerNormGrad(args: AddLayerNormGradArgs): AddLayerNormGradResult {
  return call(args);
}

type Output = "dx" | "dgamma" | "dbeta";

/** What validation established; `empty`: every output is empty (no launch). */
type Validated = PlannedCall<Output, AddLayerNormGradPlan, AddLayerNormGradTensors> & {
  readonly empty: boolean;
};

const call = defineOperator<AddLayerNormGradArgs, Output, Validated, AddLayerNormGradResult>({
  op: OP,
  args: ["dy", "x1", "x2", "rstd", "mean", "gamma", "dsum"],
  outputs: {
    dx: (v) => Tensor.emptyLike(v.tensors.dy, v.tensors.dy.dtype, v.device),
    dgamma: (v) => Tensor.empty(v.tensors.gamma.shape, "float32", v.device),
    dbeta: (v) => Tensor.empty(v.tensors.gamma.shape, "float32", v.device),
  },
  validate,
  run: (v, o) => {
    if (v.empty) return;
    v.backend.addLayerNormGrad(v.plan, {
      ...v.tensors,
      dx: o.dx!,
      dgamma: o.dgamma!,
      dbeta: o.dbeta!,
    });
  },
});

function validate(args: AddLayerNormGradArgs): Validated {
  const dy = check.requireTensor(OP, "dy", args.dy);
  const x1 = check.requireTensor(OP, "x1", args.x1);
  const x2 = check.requireTensor(OP, "x2", args.x2);
  const rstd = check.requireTensor(OP, "rstd", args.rstd);
  const mean = check.requireTensor(OP, "mean", args.mean);
  const gamma = check.requireTensor(OP, "gamma", args.gamma);
  const dsum = check.optionalTensor(OP, "dsum", args.dsum);
  const dx = check.requestedOutput(OP, "dx", args.out, true);
  const dgamma = check.requestedOutput(OP, "dgamma", args.out, true);
  const dbeta = check.requestedOutput(OP, "dbeta", args.out, true);

  // The OpDef's rows (add_layer_norm_grad_def.cpp:23-139; docs/norm_family_kernels.md 2).
  check.checkDType(OP, "dy", dy, FLOAT_DTYPES);
  checkGradDTypes(
    OP,
    [["dy", dy], ["x1", x1], ["x2", x2], ["gamma", gamma], ["dsum", dsum], ["dx", dx]],
    [["rstd", rstd], ["mean", mean], ["dgamma", dgamma], ["dbeta", dbeta]],
    ["x1", "x2", "rstd", "mean", "gamma", "dsum", "dx", "dgamma", "dbeta"],
  );

  const geometry = rowGeometry(dy.shape, Math.max(0, dy.rank - gamma.rank));
  const given = { dx, dgamma, dbeta };
  const empty = (dx ?? dy).numel === 0 && (dgamma ?? gamma).numel === 0 &&
    (dbeta ?? gamma).numel === 0;
  const read = { dy, x1, x2, rstd, mean, gamma, dsum };
  const { device, backend } = placeRowNorm(OP, given, read, geometry);
  if (!empty) {
    checkAddLayerNormGradShapes(OP, {
      dy,
      inputs: { x1, x2 },
      outputs: dx ? { dx } : {},
      mean,
      rstd,
      gamma,
      dgamma: dgamma ?? gamma,
      dbeta: dbeta ?? gamma,
    }, dsum);
  }
  return { device, backend, plan: { geometry }, tensors: read, given, empty };
}
