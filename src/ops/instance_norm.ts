/**
 * aclnnInstanceNorm: InstanceNorm over a 4-D x, per (n, c) over its H * W elements:
 *
 * ```
 * mean = sum(x) / (H * W)
 * variance = sum((x - mean)^2) / (H * W)                      (biased)
 * y = (x - mean) / sqrt(variance + eps) * gamma[c] + beta[c]
 * ```
 *
 * `dataFormat` says how x is laid out: "NCHW" ([N, C, H, W]) or "NHWC" ([N, H, W, C]); mean and
 * variance are [N, C, 1, 1] or [N, 1, 1, C], all in x's dtype.
 *
 * @example
 * ```ts
 * import { instanceNorm, Tensor } from "@aclnn/norm";
 * const x = Tensor.fromArray([1, 2, 3, 4, 5, 6, 7, 9], [1, 2, 2, 2]);
 * const { mean, variance } = instanceNorm({
 *   x,
 *   gamma: Tensor.ones([2]),
 *   beta: Tensor.zeros([2]),
 *   dataFormat: "NCHW",
 * });
 * console.log(mean.toArray(), variance.toArray()); // [2.5, 6.75] [1.25, 2.1875]
 * ```
 *
 * @module
 */

import type { InstanceNormPlan, InstanceNormTensors } from "../backends/mod.ts";
import { formatShape } from "../tensor/layout.ts";
import { Tensor } from "../tensor/tensor.ts";
import { z } from "./zod.ts";
import {
  checkMaxRank,
  checkViewCopy,
  epsilonSchema,
  fillAll,
  INNER_NULLPTR,
  tilingFailure,
} from "./row_norm_checks.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnInstanceNorm";

/** Preallocated outputs of {@linkcode instanceNorm} (CANN's y, mean, variance). */
export interface InstanceNormOut {
  /** Receives y: x's shape and dtype (any strides). */
  y?: Tensor | null;
  /** Receives the per-(n, c) mean: [N, C, 1, 1] (NCHW) or [N, 1, 1, C] (NHWC), x's dtype. */
  mean?: Tensor | null;
  /** Receives the per-(n, c) biased variance: mean's shape, x's dtype. */
  variance?: Tensor | null;
}

/** Arguments of {@linkcode instanceNorm} (names as in CANN). */
export interface InstanceNormArgs {
  /** x: 4-D, float32 or float16, laid out as `dataFormat` says. */
  x: check.MaybeTensor;
  /** Per-channel scale: 1-D, C elements, x's dtype (required, as in CANN). */
  gamma: check.MaybeTensor;
  /** Per-channel offset: 1-D, C elements, x's dtype (required, as in CANN). */
  beta: check.MaybeTensor;
  /**
   * How x is laid out: a string starting with "NCHW" or "NHWC" (CANN compares the first four
   * characters only, so "NCHWxyz" is "NCHW").
   */
  dataFormat: string | null | undefined;
  /** Added to the variance (passed to the kernel as a C float). Default 1e-5. */
  eps?: number;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: InstanceNormOut;
}

/** Results of {@linkcode instanceNorm}; `using` frees the outputs the call allocated. */
export interface InstanceNormResult extends Disposable {
  /** y, x's shape and dtype. */
  y: Tensor;
  /** Per-(n, c) mean, [N, C, 1, 1] or [N, 1, 1, C]. */
  mean: Tensor;
  /** Per-(n, c) biased variance, mean's shape. */
  variance: Tensor;
}

const scalarsSchema = z.object({ eps: epsilonSchema(1e-5) });

/**
 * Runs InstanceNorm as aclnnInstanceNorm does, on the CPU or on the NPU the tensors live on.
 *
 * Validation in CANN's order (hicann/ops-nn `norm/instance_norm_v3/op_host/op_api/
 * aclnn_instance_norm.cpp`, aclnnInstanceNormGetWorkspaceSize: CheckParams, CheckPlatform,
 * CheckInputAndWeightShape, then the empty check and the l0 operator):
 * 1. 161001: x, gamma, beta, dataFormat missing, or y/mean/variance given as `null` in `out`.
 * 2. 161002: dataFormat does not start with "NHWC" or "NCHW" (CheckParamValid: `strncmp` over
 *    four characters).
 * 3. 161002: x not float32/float16; gamma, beta, y, mean or variance not x's dtype.
 * 4. 161002: x of more than 8 dims.
 * 5. 161002 on the NPU path: the SoC is not an Atlas inference series (Ascend310P) chip
 *    (CheckPlatform, "aclnnInstanceNorm only supports Ascend310p"); the message names the SoC.
 * 6. 161002: x not 4-D, gamma or beta not 1-D, gamma's length not x's C (dim 3 for NHWC, 1 for
 *    NCHW).
 * 7. Any of x, gamma, beta, y, mean, variance empty: SUCCESS, nothing written (given outputs are
 *    left as they were, the ones this call allocates hold NaN).
 * 8. 561103: y not x's shape, mean or variance not [N, C, 1, 1] (NCHW) / [N, 1, 1, C] (NHWC)
 *    unless both hold one element (CANN's l0op::ViewCopy of the results); beta's length not C
 *    (not checked by CANN's op_api; its kernel, not in ops-nn, reads C values: refused here
 *    with the same code, unverified on a chip).
 * The Atlas inference kernel also needs C and H * W to span at least 32 bytes each
 * (aclnnInstanceNorm.md, 561103 "x，y的C轴或H*W长度小于32 Bytes"): the chip's limit, left to
 * CANN (the CPU backend computes any size).
 *
 * Without `out`: y has x's shape, dtype and memory layout; mean and variance are contiguous in
 * x's dtype.
 *
 * @example
 * ```ts
 * import { instanceNorm, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([2, 4, 4, 3], { seed: 1 }); // NHWC
 * const r = instanceNorm({ x, gamma: Tensor.ones([3]), beta: Tensor.zeros([3]), dataFormat: "NHWC" });
 * console.log(r.y.shape, r.mean.shape, r.variance.shape); // [2, 4, 4, 3] [2, 1, 1, 3] [2, 1, 1, 3]
 * ```
 */
export function instanceNorm(args: InstanceNormArgs): InstanceNormResult {
  return call(args);
}

type Output = "y" | "mean" | "variance";

/**
 * What validation established for one set of argument values; `empty`: a tensor is empty, so
 * CANN returns before computing anything (aclnn_instance_norm.cpp, hasEmptyTensor).
 */
type Validated = PlannedCall<Output, InstanceNormPlan, InstanceNormTensors> & {
  readonly empty: boolean;
  readonly statShape: readonly number[];
};

const call = defineOperator<InstanceNormArgs, Output, Validated, InstanceNormResult>({
  op: OP,
  args: ["x", "gamma", "beta", "dataFormat", "eps"],
  outputs: {
    y: (v) => Tensor.emptyLike(v.tensors.x, v.tensors.x.dtype, v.device),
    mean: (v) => Tensor.empty(v.statShape, v.tensors.x.dtype, v.device),
    variance: (v) => Tensor.empty(v.statShape, v.tensors.x.dtype, v.device),
  },
  validate,
  run: (v, o) => {
    if (v.empty) {
      // CANN writes nothing; the outputs this call allocated hold no result.
      for (const name of ["y", "mean", "variance"] as const) {
        if (!v.given[name]) fillAll(o[name]!, NaN);
      }
      return;
    }
    v.backend.instanceNorm(v.plan, { ...v.tensors, y: o.y!, mean: o.mean!, variance: o.variance! });
  },
});

/** dataFormat: present (161001), a string (161002) starting with "NHWC" or "NCHW" (161002). */
function checkDataFormat(value: unknown): string {
  if (value === undefined || value === null) check.missing(OP, "dataFormat");
  if (typeof value !== "string") {
    check.invalid(OP, "dataFormat", `must be a string ("NCHW" or "NHWC"), got ${typeof value}`);
  }
  if (!value.startsWith("NHWC") && !value.startsWith("NCHW")) {
    check.invalid(
      OP,
      "dataFormat",
      `(${JSON.stringify(value)}) must start with "NCHW" or "NHWC" (CANN compares the first ` +
        "four characters)",
    );
  }
  return value;
}

function validate(args: InstanceNormArgs): Validated {
  // CheckNotNull: x, gamma, beta, y, mean, variance, then dataFormat.
  const x = check.requireTensor(OP, "x", args.x);
  const gamma = check.requireTensor(OP, "gamma", args.gamma);
  const beta = check.requireTensor(OP, "beta", args.beta);
  const y = check.requestedOutput(OP, "y", args.out, true);
  const mean = check.requestedOutput(OP, "mean", args.out, true);
  const variance = check.requestedOutput(OP, "variance", args.out, true);
  // dataFormat: CheckNotNull's last check, then CheckParamValid.
  const dataFormat = checkDataFormat(args.dataFormat);
  const { eps } = check.parseArguments(OP, scalarsSchema, args);
  // CheckDtypeValid: x in {FLOAT, FLOAT16}, the others x's dtype.
  check.checkDType(OP, "x", x, ["float32", "float16"]);
  for (const [name, t] of Object.entries({ gamma, beta, y, mean, variance })) {
    if (t) check.checkSameDType(OP, name, t, "x", x);
  }
  // CheckShape: OP_CHECK_MAX_DIM(x, 8).
  checkMaxRank(OP, "x", x);
  check.checkWrites(OP, { y, mean, variance }, { x, gamma, beta });
  // CheckPlatform (the device's rules: Ascend310P only), after the parameter checks.
  const all = { x, gamma, beta, y, mean, variance };
  const { device, backend } = check.placeCall(OP, all);
  // CheckInputAndWeightShape.
  const channelsLast = dataFormat.startsWith("NHWC");
  if (x.rank !== 4 || gamma.rank !== 1 || beta.rank !== 1) {
    check.invalid(
      OP,
      x.rank !== 4 ? "x" : gamma.rank !== 1 ? "gamma" : "beta",
      `x must be 4-D, gamma and beta 1-D (x ${formatShape(x.shape)}, gamma ` +
        `${formatShape(gamma.shape)}, beta ${formatShape(beta.shape)})`,
    );
  }
  const [N, d1, d2, d3] = x.shape;
  const C = channelsLast ? d3 : d1;
  if (gamma.shape[0] !== C) {
    check.invalid(
      OP,
      "gamma",
      `length ${gamma.shape[0]} must equal x's C axis (${C}: x ${formatShape(x.shape)} is ` +
        `${channelsLast ? "NHWC" : "NCHW"})`,
    );
  }
  const statShape = channelsLast ? [N, 1, 1, C] : [N, C, 1, 1];
  const empty = [x, gamma, beta, y, mean, variance].some((t) => t !== undefined && t.numel === 0);
  if (!empty) {
    // CopyInstanceNormResults: l0op::ViewCopy of each result (561103).
    if (y) checkViewCopy(OP, "y", y, x.shape);
    if (mean) checkViewCopy(OP, "mean", mean, statShape);
    if (variance) checkViewCopy(OP, "variance", variance, statShape);
    if (beta.shape[0] !== C) {
      const rule = `length ${
        beta.shape[0]
      } must equal x's C axis (${C}): the kernel reads C values`;
      tilingFailure(OP, INNER_NULLPTR, "beta", rule);
    }
  }
  return {
    device,
    backend,
    plan: { N, C, HxW: channelsLast ? d1 * d2 : d2 * d3, eps, channelsLast, dataFormat },
    tensors: { x, gamma, beta },
    given: { y, mean, variance },
    empty,
    statShape,
  };
}
