/**
 * aclnnGroupNormSilu and aclnnGroupNormSiluV2: GroupNorm followed by SiLU, fused. self is read as
 * (N, C, HxW) (HxW the product of dims 2..), in groups of D = C / group channels; per (n, g),
 * over D * HxW elements:
 *
 * ```
 * mean = sum(x) / (D * HxW),  rstd = 1 / sqrt(sum((x - mean)^2) / (D * HxW) + eps)
 * g = (x - mean) * rstd * gamma[c] + beta[c]
 * output = g / (1 + exp(-g))          (V2 with activateSilu false: output = g)
 * ```
 *
 * mean and rstd hold N * group values (n * group + g). Sources: hicann/ops-nn e5c3fa9
 * `norm/group_norm_silu/op_host/op_api/aclnn_group_norm_silu.cpp`, `docs/aclnnGroupNormSilu.md`,
 * `docs/aclnnGroupNormSiluV2.md` (docs/norm_family_kernels.md section 9).
 *
 * @example
 * ```ts
 * import { groupNormSilu, Tensor } from "@aclnn/norm";
 * const r = groupNormSilu({ self: Tensor.fromArray([1, 2, 3, 4], [1, 2, 2]), group: 1 });
 * console.log(r.mean.toArray()); // [2.5]
 * ```
 *
 * @module
 */

import { z } from "./zod.ts";
import type { GroupNormSiluPlan, GroupNormSiluTensors } from "../backends/mod.ts";
import { FLOAT_DTYPES } from "../tensor/dtype.ts";
import { Tensor } from "../tensor/tensor.ts";
import { defineOperator, type PlannedCall } from "./spec.ts";
import * as check from "./validate.ts";

/** Preallocated outputs of {@linkcode groupNormSilu} / {@linkcode groupNormSiluV2} (CANN out/meanOut/rstdOut). */
export interface GroupNormSiluOut {
  /** Receives the result: self's shape and dtype (any strides). */
  output?: Tensor | null;
  /**
   * Receives the per-(n, group) mean: N * group elements, self's dtype (float32 also when gamma
   * and beta are float32 with 16-bit self: what Ascend 950 requires there; A2/A3 and the
   * Atlas inference series require self's dtype).
   */
  mean?: Tensor | null;
  /** Receives the per-(n, group) 1/sqrt(var + eps), as `mean`. */
  rstd?: Tensor | null;
}

/** Arguments of {@linkcode groupNormSilu} (names as in CANN's header). */
export interface GroupNormSiluArgs {
  /** x: rank 2-8 (N, C, ...), float32/float16/bfloat16. */
  self: check.MaybeTensor;
  /** Per-channel scale: rank 1, C elements, self's dtype or float32; ones when absent. */
  gamma?: check.MaybeTensor;
  /** Per-channel offset: as gamma, gamma's dtype; zeros when absent. */
  beta?: check.MaybeTensor;
  /** Number of groups: > 0 and a divisor of C. */
  group: number;
  /** Added to the variance (> 0); CANN's kernel takes it as a float. Default 1e-5. */
  eps?: number;
  /** Preallocated outputs (validated as aclnn does); missing ones are allocated. */
  out?: GroupNormSiluOut;
}

/** Arguments of {@linkcode groupNormSiluV2}: {@linkcode GroupNormSiluArgs} and the switch. */
export interface GroupNormSiluV2Args extends GroupNormSiluArgs {
  /** Apply SiLU after the normalization (false: plain GroupNorm). Default true. */
  activateSilu?: boolean;
}

/** Results of {@linkcode groupNormSilu}; `using` frees the outputs the call allocated. */
export interface GroupNormSiluResult extends Disposable {
  /** SiLU(GroupNorm(self)), self's shape and dtype. */
  output: Tensor;
  /** Per-(n, group) mean, shape (N, group). */
  mean: Tensor;
  /** Per-(n, group) 1/sqrt(biased var + eps), shape (N, group). */
  rstd: Tensor;
}

const scalarsSchema = z.object({
  group: check.groupCount,
  eps: check.finiteNumber.default(1e-5),
  activateSilu: check.flag,
});

/**
 * Runs aclnnGroupNormSilu: GroupNorm then SiLU, on the CPU or on the NPU the tensors live on.
 *
 * Validation, in CANN's order (`aclnn_group_norm_silu.cpp` CheckParams `:200-216`): 161001 when
 * self is missing or an output is given as `null`; 161002 for dtypes (self, gamma, beta not
 * float32/float16/bfloat16; gamma and beta of different dtypes; gamma neither self's dtype nor
 * float32; output not self's dtype; mean/rstd neither self's dtype nor, with float32 gamma/beta
 * and 16-bit self, float32), then shapes (self's rank outside 2-8, output not self's shape,
 * mean/rstd not N * group elements, gamma/beta not rank 1 of C elements), then attributes
 * (group <= 0, eps <= 0, C not divisible by group). The chip adds its own rules (161002 naming
 * the SoC): no bfloat16 on the Atlas inference series; mean/rstd in self's dtype off Ascend 950,
 * float32 there with float32 gamma/beta and 16-bit self; N and C > 0 off Ascend 950.
 *
 * An empty self gives mean 0 and rstd NaN (CANN's FillScalar, `:291-303`); on Ascend 950, whose
 * op_api skips FillScalar, an empty self with N > 0 runs CANN's empty-tensor kernel, which writes
 * NaN to mean and rstd both (`op_kernel/arch35/group_norm_silu_regbase_empty_tensor.h`). Without
 * `out`: output like self (its layout too), mean and rstd (N, group) in self's dtype.
 *
 * @example
 * ```ts
 * import { groupNormSilu, Tensor } from "@aclnn/norm";
 * const x = Tensor.random([2, 4, 3, 3], { seed: 1 });
 * const { output, mean, rstd } = groupNormSilu({ self: x, gamma: Tensor.ones([4]), group: 2 });
 * console.log(output.shape, mean.shape, rstd.shape); // [2, 4, 3, 3] [2, 2] [2, 2]
 * ```
 */
export function groupNormSilu(args: GroupNormSiluArgs): GroupNormSiluResult {
  return callV1(args);
}

/**
 * Runs aclnnGroupNormSiluV2: {@linkcode groupNormSilu} with `activateSilu` (default true; false
 * gives GroupNorm alone). Same validation and outputs.
 *
 * @example
 * ```ts
 * import { groupNormSiluV2, Tensor } from "@aclnn/norm";
 * const x = Tensor.fromArray([1, 2, 3, 4], [1, 2, 2]);
 * const r = groupNormSiluV2({ self: x, group: 1, activateSilu: false });
 * console.log(r.output.toArray().map((v) => v.toFixed(3))); // ["-1.342", "-0.447", "0.447", "1.342"]
 * ```
 */
export function groupNormSiluV2(args: GroupNormSiluV2Args): GroupNormSiluResult {
  return callV2(args);
}

type Output = "output" | "mean" | "rstd";

/** What validation established for one set of argument values. */
type Validated = PlannedCall<Output, GroupNormSiluPlan, GroupNormSiluTensors>;

/** The two operators' specs: one validation, one allocation rule, their own kernel. */
function spec(op: "aclnnGroupNormSilu" | "aclnnGroupNormSiluV2") {
  const v2 = op === "aclnnGroupNormSiluV2";
  return defineOperator<GroupNormSiluV2Args, Output, Validated, GroupNormSiluResult>({
    op,
    args: v2
      ? ["self", "gamma", "beta", "group", "eps", "activateSilu"]
      : ["self", "gamma", "beta", "group", "eps"],
    outputs: {
      output: (v) => Tensor.emptyLike(v.tensors.self, v.tensors.self.dtype, v.device),
      mean: (v) => Tensor.empty([v.plan.N, v.plan.group], v.tensors.self.dtype, v.device),
      rstd: (v) => Tensor.empty([v.plan.N, v.plan.group], v.tensors.self.dtype, v.device),
    },
    validate: (args) => validate(op, args, v2),
    run: (v, o) => {
      const t = { ...v.tensors, output: o.output!, mean: o.mean!, rstd: o.rstd! };
      if (v2) v.backend.groupNormSiluV2(v.plan, t);
      else v.backend.groupNormSilu(v.plan, t);
    },
  });
}

const callV1 = spec("aclnnGroupNormSilu");
const callV2 = spec("aclnnGroupNormSiluV2");

function validate(op: string, args: GroupNormSiluV2Args, v2: boolean): Validated {
  // 1. CheckNotNull (:54-62): self, out, meanOut, rstdOut.
  const self = check.requireTensor(op, "self", args.self);
  const output = check.requestedOutput(op, "output", args.out, true);
  const mean = check.requestedOutput(op, "mean", args.out, true);
  const rstd = check.requestedOutput(op, "rstd", args.out, true);
  const gamma = check.optionalTensor(op, "gamma", args.gamma);
  const beta = check.optionalTensor(op, "beta", args.beta);
  const { group, eps, activateSilu } = check.parseArguments(op, scalarsSchema, args);

  // 2. CheckDtypeValid (:73-121), the union of the chips' rules (soc_group_norm_act.ts narrows).
  for (const [name, t] of Object.entries({ self, gamma, beta })) {
    if (t) check.checkDType(op, name, t, FLOAT_DTYPES);
  }
  if (gamma && beta) check.checkSameDType(op, "beta", beta, "gamma", gamma);
  for (const [name, t] of Object.entries({ gamma, beta })) {
    if (t && t.dtype !== self.dtype && t.dtype !== "float32") {
      check.invalid(op, name, `dtype ${t.dtype} must be self's (${self.dtype}) or float32`);
    }
  }
  if (output) check.checkSameDType(op, "output", output, "self", self);
  const mixed = [gamma, beta].some((t) => t && t.dtype !== self.dtype);
  for (const [name, t] of Object.entries({ mean, rstd })) {
    if (!t || t.dtype === self.dtype || (mixed && t.dtype === "float32")) continue;
    check.invalid(
      op,
      name,
      `dtype ${t.dtype} must be self's (${self.dtype})` +
        (mixed ? " or, with float32 gamma/beta, float32 (Ascend 950's rule)" : ""),
    );
  }

  // 3. CheckShape (:149-180).
  check.checkRank(op, "self", self, 2, 8);
  if (output) check.checkShape(op, "output", output, self.shape, "self");
  const [N, C] = self.shape;
  for (const [name, t] of Object.entries({ mean, rstd })) {
    if (t) check.checkNumel(op, name, t, N * group, "N * group");
  }
  for (const [name, t] of Object.entries({ gamma, beta })) {
    if (t) check.checkPerChannelShape(op, name, t, C);
  }

  // 4. CheckAttr (:123-147; N, C > 0 off Ascend 950: the chip rule).
  if (group <= 0) check.invalid(op, "group", `(${group}) must be greater than 0`);
  if (!(eps > 0)) check.invalid(op, "eps", `(${eps}) must be greater than 0`);
  if (C % group !== 0) {
    check.invalid(op, "group", `(${group}) must divide the channel count C = self dim 1 (${C})`);
  }
  check.checkWrites(op, { output, mean, rstd }, { self, gamma, beta });
  const { device, backend } = check.placeCall(op, { self, gamma, beta, output, mean, rstd }, {
    N,
    C,
  });
  const HxW = self.shape.slice(2).reduce((a, b) => a * b, 1);
  return {
    device,
    backend,
    plan: { N, C, HxW, group, eps, activateSilu: v2 ? activateSilu : true },
    tensors: { self, gamma, beta },
    given: { output, mean, rstd },
  };
}
