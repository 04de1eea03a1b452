/**
 * aclnnGroupNormSwishGrad: the gradient of aclnnGroupNormSwish with the forward's mean and rstd.
 * x is read as (N, C, HxW), in groups of D = C / numGroups channels; per (n, g), m = D * HxW
 * elements, s = swishScale, in float32 as CANN's kernel computes it (hicann/ops-nn e5c3fa9
 * `norm/group_norm_swish_grad/op_kernel/group_norm_swish_grad.h:186-346`; docs/
 * norm_family_kernels.md section 11):
 *
 * ```
 * xhat = x * rstd + (-mean * rstd),  t = xhat * gamma[c] + beta[c]
 * e = exp(-s * t), d = 1 + e, q = t / d, u = (t - q) * s + 1, dYNew = (u / d) * dy
 * c1 = sum_c gamma[c] * sum_hw dYNew / m,  c2 = sum_c gamma[c] * sum_hw xhat * dYNew / m
 * dx = dYNew * (rstd * gamma[c]) - (xhat * (rstd * c2) + rstd * c1)
 * dgamma[c] = sum_{n, hw} xhat * dYNew,  dbeta[c] = sum_{n, hw} dYNew
 * ```
 *
 * A generated operator (`op_host/group_norm_swish_grad_def.cpp`).
 *
 * @example
 * ```ts
 * import { groupNormSwishGrad, Tensor } from "@aclnn/norm";
 * const x = Tensor.fromArray([1, 2, 3, 4], [1, 2, 2]);
 * const r = groupNormSwishGrad({
 *   dy: Tensor.ones([1, 2, 2]), mean: Tensor.fromArray([2.5], [1, 1]),
 *   rstd: Tensor.fromArray([0.894], [1, 1]), x, gamma: Tensor.ones([2]), beta: Tensor.zeros([2]),
 *   numGroups: 1,
 * });
 * console.log(r.dx.shape); // [1, 2, 2]
 * ```
 *
 * @module
 */

import { z } from "./zod.ts";
import type { GroupNormSwishGradPlan, GroupNormSwishGradTensors } from "../backends/mod.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import { Tensor } from "../tensor/tensor.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";
import { TILING_ERROR, tilingFailure } from "./row_norm_checks.ts";

const OP = "aclnnGroupNormSwishGrad";

/** Preallocated outputs of {@linkcode groupNormSwishGrad} (CANN dxOut/dgammaOut/dbetaOut). */
export interface GroupNormSwishGradOut {
  /** Receives dx: x's shape and dtype. */
  dx?: Tensor | null;
  /** Receives dgamma: C elements, x's dtype (left as it is when dgammaIsRequire is false). */
  dgamma?: Tensor | null;
  /** Receives dbeta: C elements, x's dtype (left as it is when dbetaIsRequire is false). */
  dbeta?: Tensor | null;
}

/** Arguments of {@linkcode groupNormSwishGrad} (names as in CANN's header, without Optional/Out). */
export interface GroupNormSwishGradArgs {
  /** dL/dy of the forward's y: x's shape and dtype. */
  dy: check.MaybeTensor;
  /** The forward's mean: N * numGroups elements, x's dtype. */
  mean: check.MaybeTensor;
  /** The forward's rstd: as mean. */
  rstd: check.MaybeTensor;
  /** The forward's input: rank 2-8 (N, C, ...), float32/float16/bfloat16. */
  x: check.MaybeTensor;
  /** Per-channel scale: rank 1, C elements, x's dtype. */
  gamma: check.MaybeTensor;
  /** Per-channel offset: as gamma. */
  beta: check.MaybeTensor;
  /** Number of groups: > 0 and a divisor of C. */
  numGroups: number;
  /** x's layout: "NCHW" (the only one CANN documents). Default "NCHW". */
  dataFormat?: string;
  /** s of the forward's t / (1 + exp(-s * t)) (a float attribute). Default 1. */
  swishScale?: number;
  /** Compute dgamma. Default true. */
  dgammaIsRequire?: boolean;
  /** Compute dbeta. Default true. */
  dbetaIsRequire?: boolean;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: GroupNormSwishGradOut;
}

/** Results of {@linkcode groupNormSwishGrad}; `using` frees the outputs the call allocated. */
export interface GroupNormSwishGradResult extends Disposable {
  /** dL/dx, x's shape and dtype. */
  dx: Tensor;
  /** dL/dgamma, shape (C), x's dtype (unwritten when not required). */
  dgamma: Tensor;
  /** dL/dbeta, shape (C), x's dtype (unwritten when not required). */
  dbeta: Tensor;
}

const scalarsSchema = z.object({
  numGroups: check.groupCount,
  dataFormat: z.string({ invalid_type_error: "must be a string" }).default("NCHW"),
  swishScale: check.finiteNumber.default(1),
  dgammaIsRequire: check.flag,
  dbetaIsRequire: check.flag,
});

/**
 * Runs aclnnGroupNormSwishGrad on the CPU or on the NPU the tensors live on.
 *
 * Validation, as CANN's generated operator makes it: 161001 when an input is missing or an
 * output is given as `null` (prototype order dy, mean, rstd, x, gamma, beta, dx, dgamma,
 * dbeta); 161002 when the dtypes are no row of the OpDef (`group_norm_swish_grad_def.cpp`:
 * all nine one dtype, float32/float16/bfloat16); then the tiling's 561002
 * (`group_norm_swish_grad_tiling.cpp:114-170`): x's rank outside 2-8, dy not x's shape,
 * mean/rstd not N * numGroups elements, gamma/beta not rank 1 of C, numGroups <= 0 or not a
 * divisor of C, dataFormat not "NCHW", dx not x's shape, dgamma/dbeta not C elements. Runs on
 * Ascend 950, A3 and A2 (not the Atlas inference series).
 *
 * @example
 * ```ts
 * import { groupNormSwish, groupNormSwishGrad, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([2, 4, 3, 3], { seed: 1 });
 * const gamma = Tensor.ones([4]);
 * const beta = Tensor.zeros([4]);
 * const f = groupNormSwish({ x, gamma, beta, numGroups: 2 });
 * const dy = Tensor.random([2, 4, 3, 3], { seed: 2 });
 * const g = groupNormSwishGrad({ dy, mean: f.mean, rstd: f.rstd, x, gamma, beta, numGroups: 2 });
 * console.log(g.dx.shape, g.dgamma.shape); // [2, 4, 3, 3] [4]
 * ```
 */
export function groupNormSwishGrad(args: GroupNormSwishGradArgs): GroupNormSwishGradResult {
  return call(args);
}

type Output = "dx" | "dgamma" | "dbeta";

/** What validation established for one set of argument values. */
type Validated = PlannedCall<Output, GroupNormSwishGradPlan, GroupNormSwishGradTensors>;

const call = defineOperator<GroupNormSwishGradArgs, Output, Validated, GroupNormSwishGradResult>({
  op: OP,
  args: [
    "dy",
    "mean",
    "rstd",
    "x",
    "gamma",
    "beta",
    "numGroups",
    "dataFormat",
    "swishScale",
    "dgammaIsRequire",
    "dbetaIsRequire",
  ],
  outputs: {
    dx: (v) => Tensor.emptyLike(v.tensors.x, v.tensors.x.dtype, v.device),
    dgamma: (v) => Tensor.zeros([v.plan.C], v.tensors.x.dtype, v.device),
    dbeta: (v) => Tensor.zeros([v.plan.C], v.tensors.x.dtype, v.device),
  },
  validate,
  run: (v, o) =>
    v.backend.groupNormSwishGrad(v.plan, {
      ...v.tensors,
      dx: o.dx!,
      dgamma: o.dgamma!,
      dbeta: o.dbeta!,
    }),
});

function tiling(argument: string, rule: string): never {
  return tilingFailure(OP, TILING_ERROR, argument, rule);
}

function validate(args: GroupNormSwishGradArgs): Validated {
  const dy = check.requireTensor(OP, "dy", args.dy);
  const mean = check.requireTensor(OP, "mean", args.mean);
  const rstd = check.requireTensor(OP, "rstd", args.rstd);
  const x = check.requireTensor(OP, "x", args.x);
  const gamma = check.requireTensor(OP, "gamma", args.gamma);
  const beta = check.requireTensor(OP, "beta", args.beta);
  const dx = check.requestedOutput(OP, "dx", args.out, true);
  const dgamma = check.requestedOutput(OP, "dgamma", args.out, true);
  const dbeta = check.requestedOutput(OP, "dbeta", args.out, true);
  const scalars = check.parseArguments(OP, scalarsSchema, args);
  const { numGroups, dataFormat } = scalars;

  // The OpDef's rows: every tensor of one dtype (float32, float16, bfloat16), in prototype order.
  check.checkDType(OP, "dy", dy, FLOAT_DTYPES);
  const others = { mean, rstd, x, gamma, beta, dx, dgamma, dbeta };
  for (const [name, t] of Object.entries(others)) {
    if (t) check.checkSameDType(OP, name, t, "dy", dy);
  }

  // The tiling.
  if (x.rank < 2 || x.rank > 8) tiling("x", `rank ${x.rank} must be in 2..8`);
  const [N, C] = x.shape;
  if (!check.sameShape(dy.shape, x.shape)) tiling("dy", "must have x's shape");
  for (const [name, t] of Object.entries({ mean, rstd })) {
    if (t.numel !== N * numGroups) {
      tiling(name, `must hold N * numGroups = ${N * numGroups} elements`);
    }
  }
  for (const [name, t] of Object.entries({ gamma, beta })) {
    if (t.rank !== 1 || t.shape[0] !== C) {
      tiling(name, `must be rank 1 of C = x dim 1 (${C}) elements`);
    }
  }
  if (numGroups <= 0) tiling("numGroups", `(${numGroups}) must be greater than 0`);
  if (C % numGroups !== 0) tiling("numGroups", `(${numGroups}) must divide C = x dim 1 (${C})`);
  if (dataFormat !== "NCHW") tiling("dataFormat", `"${dataFormat}" is not supported (only "NCHW")`);
  if (dx && !check.sameShape(dx.shape, x.shape)) tiling("dx", "must have x's shape");
  for (const [name, t] of Object.entries({ dgamma, dbeta })) {
    if (t && t.numel !== C) tiling(name, `must hold C = ${C} elements`);
  }
  check.checkWrites(OP, { dx, dgamma, dbeta }, { dy, mean, rstd, x, gamma, beta });
  const { device, backend } = check.placeCall(
    OP,
    { dy, mean, rstd, x, gamma, beta, dx, dgamma, dbeta },
    { N, C },
  );
  const HxW = x.shape.slice(2).reduce((a, b) => a * b, 1);
  return {
    device,
    backend,
    plan: { N, C, HxW, ...scalars },
    tensors: { dy, mean, rstd, x, gamma, beta },
    given: { dx, dgamma, dbeta },
  };
}
