/**
 * aclnnGroupNormSwish: GroupNorm followed by Swish, fused. x is read as (N, C, HxW), in groups of
 * D = C / numGroups channels; per (n, g), over D * HxW elements:
 *
 * ```
 * mean = sum(x) / (D * HxW),  rstd = 1 / sqrt(sum((x - mean)^2) / (D * HxW) + eps)
 * g = (x - mean) * rstd * gamma[c] + beta[c]
 * y = g / (1 + exp(-swishScale * g))          (activateSwish false: y = g)
 * ```
 *
 * The numerator is g, not swishScale * g (CANN's kernel: hicann/ops-nn e5c3fa9
 * `norm/group_norm_swish/op_kernel/group_norm_swish_base.h:270-282`). mean and rstd hold
 * N * numGroups values in gamma's dtype. A generated operator (`op_host/group_norm_swish_def.cpp`;
 * docs/norm_family_kernels.md section 10).
 *
 * @example
 * ```ts
 * import { groupNormSwish, Tensor } from "@aclnn/norm";
 * const x = Tensor.fromArray([1, 2, 3, 4], [1, 2, 2]);
 * const r = groupNormSwish({ x, gamma: Tensor.ones([2]), beta: Tensor.zeros([2]), numGroups: 1 });
 * console.log(r.mean.toArray()); // [2.5]
 * ```
 *
 * @module
 */

import { z } from "./zod.ts";
import type { GroupNormSwishPlan, GroupNormSwishTensors } from "../backends/mod.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import { Tensor } from "../tensor/tensor.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";
import { TILING_ERROR, tilingFailure } from "./row_norm_checks.ts";

const OP = "aclnnGroupNormSwish";

/** Preallocated outputs of {@linkcode groupNormSwish} (CANN yOut/meanOut/rstdOut). */
export interface GroupNormSwishOut {
  /** Receives y: x's shape and dtype. */
  y?: Tensor | null;
  /** Receives the per-(n, group) mean: N * numGroups elements, gamma's dtype. */
  mean?: Tensor | null;
  /** Receives the per-(n, group) 1/sqrt(var + eps): as mean. */
  rstd?: Tensor | null;
}

/** Arguments of {@linkcode groupNormSwish} (names as in CANN's header, without Optional/Out). */
export interface GroupNormSwishArgs {
  /** Rank 2-8 (N, C, ...), float32/float16/bfloat16. */
  x: check.MaybeTensor;
  /** Per-channel scale: rank 1, C elements, x's dtype or float32. */
  gamma: check.MaybeTensor;
  /** Per-channel offset: as gamma, gamma's dtype. */
  beta: check.MaybeTensor;
  /** Number of groups: > 0 and a divisor of C. */
  numGroups: number;
  /** x's layout: "NCHW" (the only one CANN documents). Default "NCHW". */
  dataFormat?: string;
  /** Added to the variance (a float attribute). Default 1e-5. */
  eps?: number;
  /** Apply Swish after the normalization. Default true. */
  activateSwish?: boolean;
  /** s of g / (1 + exp(-s * g)) (a float attribute). Default 1. */
  swishScale?: number;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: GroupNormSwishOut;
}

/** Results of {@linkcode groupNormSwish}; `using` frees the outputs the call allocated. */
export interface GroupNormSwishResult extends Disposable {
  /** Swish(GroupNorm(x)), x's shape and dtype. */
  y: Tensor;
  /** Per-(n, group) mean, shape (N, numGroups), gamma's dtype. */
  mean: Tensor;
  /** Per-(n, group) 1/sqrt(biased var + eps), shape (N, numGroups), gamma's dtype. */
  rstd: Tensor;
}

const scalarsSchema = z.object({
  numGroups: check.groupCount,
  dataFormat: z.string({ invalid_type_error: "must be a string" }).default("NCHW"),
  eps: check.finiteNumber.default(1e-5),
  activateSwish: check.flag,
  swishScale: check.finiteNumber.default(1),
});

/**
 * Runs aclnnGroupNormSwish on the CPU or on the NPU the tensors live on.
 *
 * Validation, as CANN's generated operator makes it: 161001 when x, gamma or beta is missing or an
 * output is given as `null` (prototype order); 161002 when the dtypes are no row of the OpDef
 * (`group_norm_swish_def.cpp:69-104`: x float32/float16/bfloat16, gamma = beta in x's dtype or
 * float32, y in x's dtype, mean = rstd in gamma's); then the tiling's 561002
 * (`group_norm_swish_tiling.cpp:90-150`): x's rank outside 2-8, gamma/beta not rank 1 of C,
 * numGroups <= 0 or not a divisor of C, dataFormat not "NCHW", y not x's shape, mean/rstd not
 * N * numGroups elements. Runs on Ascend 950, A3 and A2 (not the Atlas inference series).
 *
 * @example
 * ```ts
 * import { groupNormSwish, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([2, 4, 3, 3], { seed: 1 });
 * const gamma = Tensor.ones([4]);
 * const r = groupNormSwish({ x, gamma, beta: Tensor.zeros([4]), numGroups: 2, swishScale: 0.5 });
 * console.log(r.y.shape, r.mean.shape); // [2, 4, 3, 3] [2, 2]
 * ```
 */
export function groupNormSwish(args: GroupNormSwishArgs): GroupNormSwishResult {
  return call(args);
}

type Output = "y" | "mean" | "rstd";

/** What validation established for one set of argument values. */
type Validated = PlannedCall<Output, GroupNormSwishPlan, GroupNormSwishTensors>;

const call = defineOperator<GroupNormSwishArgs, Output, Validated, GroupNormSwishResult>({
  op: OP,
  args: ["x", "gamma", "beta", "numGroups", "dataFormat", "eps", "activateSwish", "swishScale"],
  outputs: {
    y: (v) => Tensor.emptyLike(v.tensors.x, v.tensors.x.dtype, v.device),
    mean: (v) => Tensor.empty([v.plan.N, v.plan.numGroups], v.tensors.gamma.dtype, v.device),
    rstd: (v) => Tensor.empty([v.plan.N, v.plan.numGroups], v.tensors.gamma.dtype, v.device),
  },
  validate,
  run: (v, o) =>
    v.backend.groupNormSwish(v.plan, { ...v.tensors, y: o.y!, mean: o.mean!, rstd: o.rstd! }),
});

function tiling(argument: string, rule: string): never {
  return tilingFailure(OP, TILING_ERROR, argument, rule);
}

function validate(args: GroupNormSwishArgs): Validated {
  const x = check.requireTensor(OP, "x", args.x);
  const gamma = check.requireTensor(OP, "gamma", args.gamma);
  const beta = check.requireTensor(OP, "beta", args.beta);
  const y = check.requestedOutput(OP, "y", args.out, true);
  const mean = check.requestedOutput(OP, "mean", args.out, true);
  const rstd = check.requestedOutput(OP, "rstd", args.out, true);
  const scalars = check.parseArguments(OP, scalarsSchema, args);
  const { numGroups, dataFormat } = scalars;

  // The OpDef's rows.
  check.checkDType(OP, "x", x, FLOAT_DTYPES);
  if (gamma.dtype !== x.dtype && gamma.dtype !== "float32") {
    check.invalid(OP, "gamma", `dtype ${gamma.dtype} must be x's (${x.dtype}) or float32`);
  }
  check.checkSameDType(OP, "beta", beta, "gamma", gamma);
  if (y) check.checkSameDType(OP, "y", y, "x", x);
  if (mean) check.checkSameDType(OP, "mean", mean, "gamma", gamma);
  if (rstd) check.checkSameDType(OP, "rstd", rstd, "gamma", gamma);

  // The tiling.
  if (x.rank < 2 || x.rank > 8) tiling("x", `rank ${x.rank} must be in 2..8`);
  const [N, C] = x.shape;
  for (const [name, t] of Object.entries({ gamma, beta })) {
    if (t.rank !== 1 || t.shape[0] !== C) {
      tiling(name, `must be rank 1 of C = x dim 1 (${C}) elements`);
    }
  }
  if (numGroups <= 0) tiling("numGroups", `(${numGroups}) must be greater than 0`);
  if (C % numGroups !== 0) tiling("numGroups", `(${numGroups}) must divide C = x dim 1 (${C})`);
  if (dataFormat !== "NCHW") tiling("dataFormat", `"${dataFormat}" is not supported (only "NCHW")`);
  if (y && !check.sameShape(y.shape, x.shape)) tiling("y", "must have x's shape");
  for (const [name, t] of Object.entries({ mean, rstd })) {
    if (t && t.numel !== N * numGroups) {
      tiling(name, `must hold N * numGroups = ${N * numGroups} elements`);
    }
  }
  check.checkWrites(OP, { y, mean, rstd }, { x, gamma, beta });
  const { device, backend } = check.placeCall(OP, { x, gamma, beta, y, mean, rstd }, { N, C });
  const HxW = x.shape.slice(2).reduce((a, b) => a * b, 1);
  return {
    device,
    backend,
    plan: { N, C, HxW, ...scalars },
    tensors: { x, gamma, beta },
    given: { y, mean, rstd },
  };
}
