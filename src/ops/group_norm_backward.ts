/**
 * aclnnGroupNormBackward: the gradients of GroupNorm with respect to its input, gamma and
 * beta. The data is read as (N, C, HxW) in logical row-major order (element
 * `(n * C + c) * HxW + hw`), split into `group` groups of D = C / group channels; mean and
 * rstd hold one value per (n, group), element `n * group + g`.
 *
 * Per (n, g), with xhat = (x - mean) * rstd, M = D * HxW and sums over the group's elements:
 *
 * ```
 * gradInput  = rstd * (dy * gamma - sum(dy * gamma) / M - xhat * sum(dy * gamma * xhat) / M)
 * gradGamma  = sum over n, hw of dy * xhat            (per channel)
 * gradBeta   = sum over n, hw of dy                   (per channel)
 * ```
 *
 * @example
 * ```ts
 * import { groupNormBackward, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([2, 4, 3], { seed: 1 });
 * const dy = Tensor.random([2, 4, 3], { seed: 2 });
 * const r = groupNormBackward({
 *   gradOut: dy, input: x, mean: Tensor.zeros([2, 2]), rstd: Tensor.ones([2, 2]), group: 2,
 * });
 * console.log(r.gradInput?.shape, r.gradGamma?.shape); // [2, 4, 3] [4]
 * ```
 *
 * @module
 */

import { z } from "./zod.ts";
import type { GroupNormBackwardPlan, GroupNormBackwardTensors } from "../backends/mod.ts";
import { ACLNN_ERR_PARAM_INVALID } from "../errors.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import { formatShape } from "../tensor/layout.ts";
import type { Tensor } from "../tensor/tensor.ts";
import { defineOperator, emptyLikeWhen, emptyWhen, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnGroupNormBackward";

/** Preallocated outputs of {@linkcode groupNormBackward}. */
export interface GroupNormBackwardOut {
  /** Receives dL/dinput: input's shape, gradOut's dtype (any strides). */
  gradInput?: Tensor | null;
  /** Receives dL/dgamma: gamma's shape (C elements when gamma is absent), mean's dtype. */
  gradGamma?: Tensor | null;
  /** Receives dL/dbeta: gamma's shape (C elements when gamma is absent), mean's dtype. */
  gradBeta?: Tensor | null;
}

/** Arguments of {@linkcode groupNormBackward} (names as in CANN). */
export interface GroupNormBackwardArgs {
  /** dL/dy: N*C*HxW elements, float32/float16/bfloat16, rank 0-8. */
  gradOut: check.MaybeTensor;
  /** x, the forward's input: N*C*HxW elements, gradOut's dtype, rank 0-8. */
  input: check.MaybeTensor;
  /** Per-(n, group) mean saved by the forward: N*group elements, gradOut's dtype or float32. */
  mean: check.MaybeTensor;
  /** Per-(n, group) 1/sqrt(var + eps) saved by the forward: N*group elements, mean's dtype. */
  rstd: check.MaybeTensor;
  /** Per-channel scale: C elements, mean's dtype; all ones when absent. */
  gamma?: check.MaybeTensor;
  /** Batch size. Default input dim 0 (required when input has rank < 2). */
  N?: number;
  /** Channels. Default input dim 1 (required when input has rank < 2). */
  C?: number;
  /** Elements per channel. Default the product of input dims 2.. (required when rank < 2). */
  HxW?: number;
  /** Number of groups: > 0 and a divisor of C. */
  group: number;
  /** Which of gradInput, gradGamma, gradBeta to compute. Default [true, true, true]. */
  outputMask?: readonly boolean[];
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: GroupNormBackwardOut;
}

/**
 * Results; an output is null when its outputMask entry is false. `using` frees the outputs the
 * call allocated.
 */
export interface GroupNormBackwardResult extends Disposable {
  /** dL/dinput, shape of `input`. */
  gradInput: Tensor | null;
  /** dL/dgamma per channel. */
  gradGamma: Tensor | null;
  /** dL/dbeta per channel. */
  gradBeta: Tensor | null;
}

const scalarsSchema = z.object({
  N: check.int64.optional(),
  C: check.int64.optional(),
  HxW: check.int64.optional(),
  group: check.groupCount,
  outputMask: check.outputMask("gradInput, gradGamma, gradBeta"),
});

/** N, C and HxW: given values win, the rest come from input's shape (rank >= 2). */
function resolveGeometry(
  input: Tensor,
  given: { N?: number; C?: number; HxW?: number },
): { N: number; C: number; HxW: number } {
  const fromShape = input.rank >= 2
    ? {
      N: input.shape[0],
      C: input.shape[1],
      HxW: input.shape.slice(2).reduce((a, b) => a * b, 1),
    }
    : undefined;
  const pick = (name: "N" | "C" | "HxW"): number => {
    const v = given[name] ?? fromShape?.[name];
    if (v === undefined) {
      check.invalid(
        OP,
        name,
        `is required when input has rank < 2 (input shape ${formatShape(input.shape)})`,
      );
    }
    return v;
  };
  return { N: pick("N"), C: pick("C"), HxW: pick("HxW") };
}

/**
 * Computes the GroupNorm gradients as aclnnGroupNormBackward does, on the CPU or on the NPU
 * the tensors live on.
 *
 * Validation follows the aclnn documentation. 161001: gradOut, input, mean or rstd missing,
 * or an output the mask asks for given as `null` in `out`. 161002: gradOut dtype not
 * float32/float16/bfloat16; input dtype != gradOut's; mean dtype neither gradOut's nor
 * float32 (fp16/bf16 data with fp32 statistics is legal here and on DAV_3510 chips such as the
 * Ascend 950; on every other chip the Ascend backend refuses it, naming the SoC, as
 * hicann/ops-nn `aclnn_group_norm_backward.cpp` CheckDtypeValid does, lines 144-172 at
 * e5c3fa932; `groupNorm` itself writes mean and rstd in its input's dtype on every chip);
 * rstd or gamma dtype != mean's;
 * outputMask without 3 entries; gradInput shape != input's or dtype != gradOut's;
 * gradGamma/gradBeta shape != gamma's (numel != C when gamma is absent) or dtype != mean's;
 * N, C or HxW negative (or missing when input has rank < 2); group <= 0; C not divisible
 * by group; numel(input) or numel(gradOut) != N*C*HxW; numel(mean) or numel(rstd) !=
 * N*group; gamma present with numel != C. Masked-off outputs are neither validated nor
 * written.
 *
 * Real Atlas A2/A3 chips add two hardware limits, C <= 240000 and C / group <= 8000; they
 * are not checked here (the CPU backend has no such limit) and the native library reports
 * them when the tensors live on such an NPU.
 *
 * Without `out`, gradInput has input's shape and memory layout in gradOut's dtype, and
 * gradGamma/gradBeta have gamma's shape ([C] without gamma) in mean's dtype.
 *
 * @example
 * ```ts
 * import { groupNormBackward, Tensor } from "@aclnn/norm";
 * const x = Tensor.fromArray(Array.from({ length: 24 }, (_, i) => i + 1), [2, 3, 4]);
 * const { gradInput, gradGamma, gradBeta } = groupNormBackward({
 *   gradOut: x,
 *   input: x,
 *   mean: Tensor.fromArray([6.5, 18.5], [2, 1]),
 *   rstd: Tensor.fromArray([0.2896827, 0.2896827], [2, 1]),
 *   gamma: Tensor.ones([3]),
 *   group: 1,
 * });
 * console.log(gradInput?.shape, gradGamma?.toArray(), gradBeta?.toArray());
 * // [2, 3, 4] [-75.89..., 2.89..., 155.84...] [68, 100, 132]
 * ```
 */
export function groupNormBackward(args: GroupNormBackwardArgs): GroupNormBackwardResult {
  return call(args);
}

type Output = "gradInput" | "gradGamma" | "gradBeta";

/** What validation established for one set of argument values. */
interface Validated extends PlannedCall<Output, GroupNormBackwardPlan, GroupNormBackwardTensors> {
  /** Shape of gradGamma/gradBeta when allocated (gamma's, else [C]). */
  readonly perChannelShape: readonly number[];
}

const call = defineOperator<GroupNormBackwardArgs, Output, Validated>({
  op: OP,
  args: ["gradOut", "input", "mean", "rstd", "gamma", "N", "C", "HxW", "group", "outputMask"],
  outputs: {
    gradInput: (v) =>
      emptyLikeWhen(v.plan.mask[0], v.tensors.input, v.tensors.gradOut.dtype, v.device),
    gradGamma: (v) => emptyWhen(v.plan.mask[1], v.perChannelShape, v.tensors.mean.dtype, v.device),
    gradBeta: (v) => emptyWhen(v.plan.mask[2], v.perChannelShape, v.tensors.mean.dtype, v.device),
  },
  validate,
  run: (v, o) => v.backend.groupNormBackward(v.plan, { ...v.tensors, ...o }),
});

function validate(args: GroupNormBackwardArgs): Validated {
  const gradOut = check.requireTensor(OP, "gradOut", args.gradOut);
  const input = check.requireTensor(OP, "input", args.input);
  const mean = check.requireTensor(OP, "mean", args.mean);
  const rstd = check.requireTensor(OP, "rstd", args.rstd);
  const gamma = check.optionalTensor(OP, "gamma", args.gamma);
  const scalars = check.parseArguments(OP, scalarsSchema, args);
  const mask = scalars.outputMask as [boolean, boolean, boolean];
  const group = scalars.group;
  // CANN returns 161002 for a null output whose mask bit is set
  // (aclnn_group_norm_backward.cpp CheckParams maps CheckMaskNotNull to 161002).
  const INVALID = ACLNN_ERR_PARAM_INVALID;
  const gradInput = check.requestedOutput(OP, "gradInput", args.out, mask[0], INVALID);
  const gradGamma = check.requestedOutput(OP, "gradGamma", args.out, mask[1], INVALID);
  const gradBeta = check.requestedOutput(OP, "gradBeta", args.out, mask[2], INVALID);

  // dtypes
  check.checkDType(OP, "gradOut", gradOut, FLOAT_DTYPES);
  check.checkSameDType(OP, "input", input, "gradOut", gradOut);
  check.checkDType(OP, "mean", mean, FLOAT_DTYPES);
  if (mean.dtype !== gradOut.dtype && mean.dtype !== "float32") {
    check.invalid(
      OP,
      "mean",
      `dtype ${mean.dtype} must be float32 or gradOut dtype ${gradOut.dtype}`,
    );
  }
  check.checkSameDType(OP, "rstd", rstd, "mean", mean);
  if (gamma) check.checkSameDType(OP, "gamma", gamma, "mean", mean);
  if (gradInput) check.checkSameDType(OP, "gradInput", gradInput, "gradOut", gradOut);
  if (gradGamma) check.checkSameDType(OP, "gradGamma", gradGamma, "mean", mean);
  if (gradBeta) check.checkSameDType(OP, "gradBeta", gradBeta, "mean", mean);
  const tensors = { gradOut, input, mean, rstd, gamma, gradInput, gradGamma, gradBeta };
  for (const [name, t] of Object.entries(tensors)) if (t) check.checkRank(OP, name, t, 0, 8);

  // geometry and output shapes
  const { N, C, HxW } = resolveGeometry(input, scalars);
  if (gradInput) check.checkShape(OP, "gradInput", gradInput, input.shape, "input");
  for (const [name, t] of Object.entries({ gradGamma, gradBeta })) {
    if (!t) continue;
    if (gamma) check.checkShape(OP, name, t, gamma.shape, "gamma");
    else check.checkNumel(OP, name, t, C, "C (gamma is absent)");
  }
  check.checkGroupGeometry(OP, { N, C, HxW }, group);
  const total = N * C * HxW;
  check.checkNumel(OP, "input", input, total, "N * C * HxW");
  check.checkNumel(OP, "gradOut", gradOut, total, "N * C * HxW");
  check.checkNumel(OP, "mean", mean, N * group, "N * group");
  check.checkNumel(OP, "rstd", rstd, N * group, "N * group");
  if (gamma) check.checkNumel(OP, "gamma", gamma, C, "C");
  check.checkWrites(OP, { gradInput, gradGamma, gradBeta }, { gradOut, input, mean, rstd, gamma });
  const { device, backend } = check.placeCall(OP, tensors, { N, C, HxW, group });

  return {
    device,
    backend,
    plan: { N, C, HxW, group, mask },
    tensors: { gradOut, input, mean, rstd, gamma },
    given: { gradInput, gradGamma, gradBeta },
    perChannelShape: gamma ? gamma.shape : [C],
  };
}
