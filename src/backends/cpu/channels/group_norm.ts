/**
 * GroupNorm on the CPU: aclnnGroupNorm and aclnnGroupNormBackward (and aclnnInstanceNorm, GroupNorm
 * with group = C), in two stages on the float32 channel kernels (kernels/channel_stages.ts,
 * wasm/channel_norms.wat), as per-sample
 * BatchNorm-family stages: per-(n, c) statistics (or sums) of each sample, merged per (n, g) in
 * channel order on the calling thread (float64), then the write with per-(n, c) constants,
 * centred as CANN computes it. The data is (N, C, HxW) in each tensor's logical order; rows
 * (each (n, c) a contiguous run) or dense channels-last pixels run in place in the host heap,
 * anything else on dense heap copies (staging.ts).
 *
 * @module
 */

import type {
  GroupNormBackwardPlan,
  GroupNormBackwardTensors,
  GroupNormPlan,
  GroupNormTensors,
  InstanceNormPlan,
  InstanceNormTensors,
} from "../../types.ts";
import type { Tensor } from "../../../tensor/tensor.ts";
import { sameDims } from "../../../tensor/layout.ts";
import { heapAddress } from "../../../tensor/host_heap.ts";
import { channelValues, channelValuesOr, writeChannelValues } from "../tensors/channel_values.ts";
import { streamable } from "./aliasing.ts";
import { type Call, execute, float64, prepareCall } from "./call.ts";
import {
  GRADIENT_CONSTANTS,
  groupNormGradCentered,
  NORMALIZE_CONSTANTS,
  normalizeCentered,
} from "../kernels/formulas.ts";
import { mergeMoments } from "../kernels/moments.ts";
import { channelLayoutFits } from "../kernels/channel_stages.ts";
import { statsStage, sumsStage, writeStage } from "./setup.ts";
import { chooseLayout, flatGroupNormDims, groupNormDims } from "./layout.ts";
import { denseLayout, type DenseOrder } from "./dense_layout.ts";
import { mergeChannelMoments, mergeChannelSums } from "./merge.ts";
import { hostData } from "../tensors/tensor_arrays.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";
import { batchNormOrder, runStaged, type StagingOptions } from "./staging.ts";

/**
 * A per-sample GroupNorm call over non-empty `inputs` and `output`, or undefined when they
 * must be staged first: overlapping output, a tensor outside the heap or with no strided
 * [N, C, HxW] view, or a layout the channel kernels do not take in place (`rowsOnly`: any
 * but rows, for kernels that have no pixels form).
 */
export function groupNormCall(
  plan: { N: number; C: number; HxW: number },
  inputs: readonly Tensor[],
  output: Tensor | undefined,
  rowsOnly = false,
): Call | undefined {
  const { N, C, HxW } = plan;
  const data = output ? [...inputs, output] : [...inputs];
  const dense = (order: DenseOrder) => denseLayout(N, C, HxW, data, output !== undefined, order);
  const common = dense("rows") ?? (rowsOnly ? undefined : dense("pixels"));
  if (common) {
    const layout = { ...common.layout, perSample: true };
    return prepareCall({ layout, addresses: common.addresses }, data, N * C * HxW);
  }
  if (!streamable(output, inputs)) return undefined;
  if (!data.every((t) => heapAddress(hostData(t)) >= 0)) return undefined;
  let views = data.map((t) => groupNormDims(t, N, C, HxW));
  if (views.some((v) => !v || !sameDims(v.innerShape, views[0]!.innerShape))) {
    // Tensors of different shapes (same element count): view every one as [N, C, HxW].
    views = data.map((t) => flatGroupNormDims(t, N, C, HxW));
    if (views.some((v) => !v)) return undefined;
  }
  const chosen = chooseLayout(N, C, views[0]!.innerShape, views.map((v) => v!.dims));
  let layout = { ...chosen.layout, perSample: true };
  const fits = () => chosen.addresses.every((a) => channelLayoutFits(layout, a));
  // No inner dims: each (n, c) is a row of one element, where pixels do not fit.
  if ((rowsOnly || !fits()) && layout.kind === "pixels" && layout.inner === 1) {
    layout = { ...layout, kind: "rows" };
  }
  if (!fits() || (rowsOnly && layout.kind !== "rows")) return undefined;
  return prepareCall({ layout, addresses: chosen.addresses }, data, N * C * HxW);
}

/** GroupNorm's staging: dense heap copies, channels-last where the data is ([N, C, ...] only). */
export function relayout(N: number, C: number): StagingOptions {
  return {
    relayout: true,
    order: (t) => (t.shape[0] === N && t.shape[1] === C ? batchNormOrder(t) : undefined),
  };
}

/**
 * aclnnGroupNorm: per (n, g), mean and rstd = 1/sqrt(biased var + eps) over D * HxW
 * elements (eps as a float), y = (x - mean) * rstd * gamma + beta. An empty input gives mean 0
 * and rstd NaN, as CANN writes (ops-nn norm/group_norm/op_host/op_api/aclnn_group_norm.cpp,
 * aclnnGroupNormGetWorkspaceSize: FillScalar on meanOut and rstdOut when self is empty). A
 * large call runs whole (cache_blocks.ts says why).
 */
export function groupNorm(plan: GroupNormPlan, t: GroupNormTensors): void {
  groupNormWith(plan, t, "rstd");
}

/**
 * aclnnInstanceNorm: GroupNorm with group = C on x viewed as [N, C, H, W] (an NHWC x and y are
 * permuted views, no copy: CANN transposes NHWC to NCHW around its kernel, aclnn_instance_norm.cpp
 * ComputeInstanceNormOutputs), writing the per-(n, c) biased variance, not rstd, as the second
 * statistic. mean and variance are written in logical order (n, c), which [N, C, 1, 1] and
 * [N, 1, 1, C] share; each output is rounded once to its dtype (x's) from the float32 kernels'
 * sums merged in float64, eps a C float. CANN's InstanceNormV3 kernel is not in ops-nn: the
 * biased variance follows the 950 graph op (`norm/instance_norm`, 1/n), the rest of its
 * arithmetic (order, intermediate roundings) is unverified. Empty calls never get here (CANN
 * returns SUCCESS before the kernel: src/ops/instance_norm.ts).
 */
export function instanceNorm(plan: InstanceNormPlan, t: InstanceNormTensors): void {
  const nchw = (v: Tensor) => (plan.channelsLast ? v.permute([0, 3, 1, 2]) : v);
  const { N, C, HxW, eps } = plan;
  groupNormWith({ N, C, HxW, group: C, eps }, {
    input: nchw(t.x),
    gamma: t.gamma,
    beta: t.beta,
    output: nchw(t.y),
    mean: t.mean,
    rstd: t.variance,
  }, "variance");
}

/**
 * GroupNorm whose write applies y = g / (1 + exp(-swishScale * g)) to the normalized value g
 * when `swishScale` is given (aclnnGroupNormSilu with 1, aclnnGroupNormSwish), in the same
 * pass over the data (the "swish" write, wasm/channel_swish.wat), otherwise groupNorm. The
 * statistics, constants and roundings are groupNorm's: those every SoC computes. A2/A3's
 * GroupNormSilu kernel forms the variance as E[x^2] - mean^2 and rounds its 16-bit outputs half
 * away from zero (docs/norm_family_kernels.md section 9); Ascend 950's does neither, so, as
 * for addRmsNorm (wasm/row_norms.wat add_rms_fwd), those stay in the software CANN.
 */
export function groupNormActivated(
  plan: GroupNormPlan,
  t: GroupNormTensors,
  swishScale: number | undefined,
): void {
  groupNormWith(plan, t, "rstd", swishScale);
}

/**
 * The GroupNorm forward stages; `second` says what goes into `t.rstd`: 1/sqrt(var + eps)
 * (aclnnGroupNorm) or the biased var itself (aclnnInstanceNorm, where t.rstd is its variance);
 * `swishScale`, when given, the activation of the write (groupNormActivated).
 */
function groupNormWith(
  plan: GroupNormPlan,
  t: GroupNormTensors,
  second: "rstd" | "variance",
  swishScale?: number,
): void {
  const { N, C, HxW, group } = plan;
  if (N * C * HxW === 0) {
    writeChannelValues(t.mean, temporaryFloat64(N * group));
    writeChannelValues(t.rstd, temporaryFloat64(N * group).fill(NaN));
    return;
  }
  const call = groupNormCall(plan, [t.input], t.output);
  if (!call) {
    return runStaged(
      t,
      { inputs: ["input"], outputs: ["output"] },
      (s) => groupNormWith(plan, s, second, swishScale),
      relayout(N, C),
    );
  }
  const eps = Math.fround(plan.eps);
  const D = C / group;
  const stats = statsStage(call, t.input);
  // Per (n, c): the normalize constants, and for the swish write -swishScale after them.
  const count = swishScale === undefined ? NORMALIZE_CONSTANTS : NORMALIZE_CONSTANTS + 1;
  const write = writeStage(
    call,
    swishScale === undefined ? "normalize" : "swish",
    undefined,
    t.input,
    t.output,
    float64(call, count * N * C),
    true,
  );
  const gamma = channelValuesOr(t.gamma, C, 1);
  const beta = channelValuesOr(t.beta, C, 0);
  const mean = temporaryFloat64(N * group);
  const rstd = temporaryFloat64(N * group);
  const variance = second === "variance" ? temporaryFloat64(N * group) : rstd;
  execute(call, [stats, write], [() => {
    const { first, second } = mergeChannelMoments(call.layout, stats.partials);
    const acc = temporaryFloat64(2);
    for (let n = 0; n < N; n++) {
      for (let g = 0; g < group; g++) {
        for (let d = 0; d < D; d++) {
          const nc = n * C + g * D + d;
          mergeMoments(acc, 0, 1, d * HxW, first[nc], second[nc], HxW);
        }
        const ng = n * group + g;
        mean[ng] = acc[0] / (D * HxW);
        const v = acc[1] / (D * HxW);
        rstd[ng] = 1 / Math.sqrt(v + eps);
        if (variance !== rstd) variance[ng] = v;
        for (let c = g * D; c < (g + 1) * D; c++) {
          const at = n * count * C + c;
          normalizeCentered(mean[ng], rstd[ng] * gamma[c], beta[c], write.constants, at, C);
          if (swishScale !== undefined) write.constants[at + 3 * C] = -swishScale;
        }
      }
    }
  }]);
  writeChannelValues(t.mean, mean);
  writeChannelValues(t.rstd, variance);
}

/**
 * aclnnGroupNormBackward. Per (n, g), with xhat = (x - mean) * rstd, M = D * HxW:
 * gradInput = rstd * (dy * gamma - sum(dy * gamma) / M - xhat * sum(dy * gamma * xhat) / M),
 * gradGamma = sum over n, hw of dy * xhat, gradBeta = sum over n, hw of dy (per channel): per
 * (n, c) sum(dy) and sum(dy * (x - mean)), then (with gradInput) the gradient write with
 * per-(n, c) constants. Empty data gives zero gradGamma and gradBeta.
 */
export function groupNormBackward(plan: GroupNormBackwardPlan, t: GroupNormBackwardTensors): void {
  const { N, C, HxW, mask } = plan;
  const gradInput = mask[0] ? t.gradInput : undefined;
  if (N * C * HxW === 0) {
    if (mask[1] && t.gradGamma) writeChannelValues(t.gradGamma, temporaryFloat64(C));
    if (mask[2] && t.gradBeta) writeChannelValues(t.gradBeta, temporaryFloat64(C));
    return;
  }
  const call = groupNormCall(plan, [t.gradOut, t.input], gradInput);
  if (!call) {
    return runStaged(
      t,
      { inputs: ["gradOut", "input"], outputs: mask[0] ? ["gradInput"] : [] },
      (s) => groupNormBackward(plan, s),
      relayout(N, C),
    );
  }
  const gradGamma = new Float64Array(C);
  const gradBeta = new Float64Array(C);
  backwardPasses(plan, t, call, gradGamma, gradBeta);
  if (mask[1] && t.gradGamma) writeChannelValues(t.gradGamma, gradGamma);
  if (mask[2] && t.gradBeta) writeChannelValues(t.gradBeta, gradBeta);
}

/**
 * groupNormBackward's two passes on `call` (its sums, then with gradInput the gradient write),
 * adding the per-channel gradGamma and gradBeta terms of its samples to `gradGamma`, `gradBeta`.
 */
function backwardPasses(
  plan: GroupNormBackwardPlan,
  t: GroupNormBackwardTensors,
  call: Call,
  gradGamma: Float64Array,
  gradBeta: Float64Array,
): void {
  const { N, C, HxW, group, mask } = plan;
  const gradInput = mask[0] ? t.gradInput : undefined;
  const D = C / group;
  const count = D * HxW;
  const groupMean = channelValues(t.mean);
  const groupRstd = channelValues(t.rstd);
  const gamma = channelValuesOr(t.gamma, C, 1);
  const mean = float64(call, N * C);
  for (let nc = 0; nc < N * C; nc++) mean[nc] = groupMean[Math.floor(nc / D)];
  const sums = sumsStage(call, t.gradOut, t.input, mean);
  const write = gradInput
    ? writeStage(
      call,
      "gradient",
      t.gradOut,
      t.input,
      gradInput,
      float64(call, GRADIENT_CONSTANTS * N * C),
      true,
    )
    : undefined;
  const constants = () => {
    const { first: sumDy, second: sumDot } = mergeChannelSums(call.layout, sums.partials);
    const q = write?.constants;
    for (let n = 0; n < N; n++) {
      for (let g = 0; g < group; g++) {
        const ng = n * group + g;
        const r = groupRstd[ng];
        let s1 = 0;
        let s2 = 0;
        for (let c = g * D; c < (g + 1) * D; c++) {
          const sdy = sumDy[n * C + c];
          const sdyXhat = sumDot[n * C + c] * r;
          gradGamma[c] += sdyXhat;
          gradBeta[c] += sdy;
          s1 += sdy * gamma[c];
          s2 += sdyXhat * gamma[c];
        }
        if (q === undefined) continue;
        const m = groupMean[ng];
        const a = s1 / count;
        const b = s2 / count;
        for (let c = g * D; c < (g + 1) * D; c++) {
          groupNormGradCentered(m, r, gamma[c], a, b, q, n * GRADIENT_CONSTANTS * C + c, C);
        }
      }
    }
  };
  execute(call, write ? [sums, write] : [sums], [constants]);
}
