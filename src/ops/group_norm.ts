/**
 * aclnnGroupNorm: the GroupNorm forward pass. The input is read as (N, C, HxW) in logical
 * row-major order and split into `group` groups of D = C / group channels; per (n, g), over
 * the group's D * HxW elements:
 *
 * ```
 * mean = sum(x) / (D * HxW)
 * rstd = 1 / sqrt(sum((x - mean)^2) / (D * HxW) + eps)       (biased variance, as PyTorch)
 * output = (x - mean) * rstd * gamma[c] + beta[c]
 * ```
 *
 * mean and rstd have shape (N, group). (The aclnn page writes Var with 1/(n-1), but the
 * operator, like PyTorch's native_group_norm, uses the biased variance.)
 *
 * @example
 * ```ts
 * import { groupNorm, Tensor } from "@aclnn/norm";
 * const r = groupNorm({ input: Tensor.fromArray([1, 2, 3, 4], [1, 2, 2]), group: 1 });
 * console.log(r.mean.toArray()); // [2.5]
 * ```
 *
 * @module
 */

import { z } from "./zod.ts";
import type { GroupNormPlan, GroupNormTensors } from "../backends/mod.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import { formatShape } from "../tensor/layout.ts";
import { Tensor } from "../tensor/tensor.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

const OP = "aclnnGroupNorm";

/** Preallocated outputs of {@linkcode groupNorm} (CANN out/meanOut/rstdOut). */
export interface GroupNormOut {
  /** Receives y: input's shape and dtype (any strides). */
  output?: Tensor | null;
  /** Receives the per-(n, group) mean: shape (N, group), input's dtype. */
  mean?: Tensor | null;
  /** Receives the per-(n, group) 1/sqrt(var + eps): shape (N, group), input's dtype. */
  rstd?: Tensor | null;
}

/** Arguments of {@linkcode groupNorm} (names as in CANN; `input` is CANN's `self`). */
export interface GroupNormArgs {
  /** x: rank 2-8, float32/float16/bfloat16. */
  input: check.MaybeTensor;
  /** Per-channel scale: rank 1, C elements, input's dtype; all ones when absent. */
  gamma?: check.MaybeTensor;
  /** Per-channel offset: rank 1, C elements, input's dtype; zeros when absent. */
  beta?: check.MaybeTensor;
  /** Batch size; must equal input dim 0. Default input dim 0. */
  N?: number;
  /** Channels; must equal input dim 1. Default input dim 1. */
  C?: number;
  /** Elements per channel; must equal the product of input dims 2.. (1 for rank 2). */
  HxW?: number;
  /** Number of groups: > 0 and a divisor of C. */
  group: number;
  /** Added to the variance; must be > 0. Default 1e-5. */
  eps?: number;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: GroupNormOut;
}

/** Results of {@linkcode groupNorm}; `using` frees the outputs the call allocated. */
export interface GroupNormResult extends Disposable {
  /** y, input's shape and dtype. */
  output: Tensor;
  /** Per-(n, group) mean, shape (N, group). */
  mean: Tensor;
  /** Per-(n, group) 1/sqrt(biased var + eps), shape (N, group). */
  rstd: Tensor;
}

const scalarsSchema = z.object({
  N: check.int64.optional(),
  C: check.int64.optional(),
  HxW: check.int64.optional(),
  group: check.groupCount,
  eps: check.epsilon,
});

/**
 * Runs the GroupNorm forward pass as aclnnGroupNorm does, on the CPU or on the NPU the
 * tensors live on.
 *
 * Validation (aclnnGroupNorm documentation): 161001 when input is missing or an output is
 * given as `null` in `out`; 161002 when a tensor is not float32/float16/bfloat16, gamma,
 * beta or an output does not share input's dtype (aclnnGroupNorm takes no mixed precision on any
 * chip: float16/bfloat16 data with float32 gamma, beta, mean or rstd is refused on every
 * backend, unlike `groupNormBackward`'s float32 statistics on DAV_3510 chips such as
 * the Ascend 950), input's rank is outside 2-8, N/C/HxW are
 * negative, group <= 0, C is not divisible by group, eps <= 0, output's shape differs from
 * input's, mean/rstd are not (N, group), input dim 0 != N, dim 1 != C, the product of dims
 * 2.. != HxW, numel(input) != N * C * HxW, or gamma/beta are not rank 1 with C elements.
 *
 * Without `out`: output has input's shape, dtype and memory layout (channels-last in,
 * channels-last out); mean and rstd are (N, group) in input's dtype, as torch_npu allocates
 * them for aclnnGroupNorm (Ascend/op-plugin `op_plugin/config/op_plugin_functions.yaml`,
 * native_group_norm: out1/out2 `dtype: input`).
 *
 * @example
 * ```ts
 * import { groupNorm, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([2, 4, 3, 3], { seed: 1 });
 * const { output, mean, rstd } = groupNorm({ input: x, gamma: Tensor.ones([4]), group: 2 });
 * console.log(output.shape, mean.shape, rstd.shape); // [2, 4, 3, 3] [2, 2] [2, 2]
 * ```
 */
export function groupNorm(args: GroupNormArgs): GroupNormResult {
  return call(args);
}

type Output = "output" | "mean" | "rstd";

/** What validation established for one set of argument values. */
type Validated = PlannedCall<Output, GroupNormPlan, GroupNormTensors>;

const call = defineOperator<GroupNormArgs, Output, Validated, GroupNormResult>({
  op: OP,
  args: ["input", "gamma", "beta", "N", "C", "HxW", "group", "eps"],
  outputs: {
    output: (v) => Tensor.emptyLike(v.tensors.input, v.tensors.input.dtype, v.device),
    mean: (v) => Tensor.empty([v.plan.N, v.plan.group], v.tensors.input.dtype, v.device),
    rstd: (v) => Tensor.empty([v.plan.N, v.plan.group], v.tensors.input.dtype, v.device),
  },
  validate,
  run: (v, o) =>
    v.backend.groupNorm(v.plan, { ...v.tensors, output: o.output!, mean: o.mean!, rstd: o.rstd! }),
});

/**
 * aclnnGroupNorm takes no mixed precision on any chip: gamma, beta, out, meanOut and rstdOut must
 * each have self's dtype, in that order, with no branch on SocVersion or NpuArch (hicann/ops-nn
 * `norm/group_norm/op_host/op_api/aclnn_group_norm.cpp` CheckDtypeValid, lines 69-87 at
 * e5c3fa932, and in every release branch since 8.5.0). Only aclnnGroupNormSilu, which this
 * package does not bind, takes float32 gamma/beta with 16-bit data
 * (`norm/group_norm_silu/op_host/op_api/aclnn_group_norm_silu.cpp` CheckDtypeValid 73-121).
 * The CPU backend refuses the same calls, so no backend accepts what every chip refuses.
 */
function checkNoMixedPrecision(name: string, t: Tensor, input: Tensor): void {
  if (t.dtype === input.dtype) return;
  check.invalid(
    OP,
    name,
    `dtype ${t.dtype} must equal input dtype ${input.dtype}: aclnnGroupNorm takes no mixed ` +
      "precision on any chip (gamma, beta, output, mean and rstd all have input's dtype). Fix: " +
      `pass ${name} in ${input.dtype}` +
      (t.dtype === "float32" ? ", or run the whole call in float32" : ""),
  );
}

function validate(args: GroupNormArgs): Validated {
  const input = check.requireTensor(OP, "input", args.input);
  const gamma = check.optionalTensor(OP, "gamma", args.gamma);
  const beta = check.optionalTensor(OP, "beta", args.beta);
  const scalars = check.parseArguments(OP, scalarsSchema, args);
  const { group, eps } = scalars;
  const output = check.requestedOutput(OP, "output", args.out, true);
  const mean = check.requestedOutput(OP, "mean", args.out, true);
  const rstd = check.requestedOutput(OP, "rstd", args.out, true);

  const all = { input, gamma, beta, output, mean, rstd };
  for (const [name, t] of Object.entries(all)) if (t) check.checkDType(OP, name, t, FLOAT_DTYPES);
  for (const [name, t] of Object.entries({ gamma, beta, output, mean, rstd })) {
    if (t) checkNoMixedPrecision(name, t, input);
  }
  check.checkRank(OP, "input", input, 2, 8);
  const shapeHxW = input.shape.slice(2).reduce((a, b) => a * b, 1);
  const N = scalars.N ?? input.shape[0];
  const C = scalars.C ?? input.shape[1];
  const HxW = scalars.HxW ?? shapeHxW;
  check.checkGroupGeometry(OP, { N, C, HxW }, group);
  if (output) check.checkShape(OP, "output", output, input.shape, "input");
  for (const [name, t] of Object.entries({ mean, rstd })) {
    if (t) check.checkShape(OP, name, t, [N, group], "(N, group)");
  }
  if (input.shape[0] !== N) {
    check.invalid(OP, "N", `(${N}) must equal input dim 0 (${input.shape[0]})`);
  }
  if (input.shape[1] !== C) {
    check.invalid(OP, "C", `(${C}) must equal input dim 1 (${input.shape[1]})`);
  }
  if (shapeHxW !== HxW) {
    check.invalid(
      OP,
      "HxW",
      `(${HxW}) must equal the product of input dims 2.. (${shapeHxW}; shape ${
        formatShape(input.shape)
      })`,
    );
  }
  check.checkNumel(OP, "input", input, N * C * HxW, "N * C * HxW");
  for (const [name, t] of Object.entries({ gamma, beta })) {
    if (!t) continue;
    check.checkPerChannelShape(OP, name, t, C);
  }
  check.checkWrites(OP, { output, mean, rstd }, { input, gamma, beta });
  const { device, backend } = check.placeCall(OP, all);

  return {
    device,
    backend,
    plan: { N, C, HxW, group, eps },
    tensors: { input, gamma, beta },
    given: { output, mean, rstd },
  };
}
