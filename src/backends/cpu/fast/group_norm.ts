/**
 * Streaming kernels of GroupNorm: aclnnGroupNorm and aclnnGroupNormBackward. The data is
 * (N, C, HxW) in each tensor's logical order; a work item owns whole groups (or whole
 * samples when channels-last), computes their statistics or sums and writes their outputs
 * while their data is still in cache. Channels-last calls of a few large samples instead
 * run two stages over blocks of each sample, with the per-(n, c) results merged between
 * them (splitsSamples in kernels/layout_types.ts). Data that cannot be streamed as it is
 * (overlapping output, a tensor with no strided [N, C, HxW] view) runs on contiguous scratch
 * copies (staging.ts).
 *
 * @module
 */

import type {
  GroupNormBackwardPlan,
  GroupNormBackwardTensors,
  GroupNormPlan,
  GroupNormTensors,
} from "../../types.ts";
import type { Tensor } from "../../../tensor/tensor.ts";
import { channelValues, channelValuesOr, writeChannelValues } from "./channel_values.ts";
import { streamable } from "./aliasing.ts";
import { type Call, execute, float64, prepareCall, visible } from "./call.ts";
import { groupNormItems, samplesPerItem, splitsSamples } from "../kernels/layout_types.ts";
import { groupNormGradAffine, normalizeAffine } from "../kernels/formulas.ts";
import { mergeMoments } from "../kernels/moments.ts";
import { statsStage, sumsStage } from "./setup.ts";
import {
  type GroupNormBackwardStage,
  type GroupNormStage,
  uniformStage,
  type WriteStage,
} from "../kernels/stage_types.ts";
import { chooseLayout, flatGroupNormDims, groupNormDims } from "./layout.ts";
import { mergeGroupPartials, mergePixelPartials } from "./merge.ts";
import { readArray, writeArray } from "./tensor_arrays.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";
import { runStaged } from "./staging.ts";

/**
 * A GroupNorm call over non-empty `inputs` and `output`, or undefined when they must be
 * staged first: overlapping output, or a tensor that cannot be viewed as (N, C, HxW) with
 * strides.
 */
function groupNormCall(
  plan: { N: number; C: number; HxW: number },
  inputs: readonly Tensor[],
  output: Tensor | undefined,
): Call | undefined {
  const { N, C, HxW } = plan;
  if (!streamable(output, inputs)) return undefined;
  const data = output ? [...inputs, output] : [...inputs];
  const sameInner = (a: readonly number[], b: readonly number[]) =>
    a.length === b.length && a.every((d, i) => d === b[i]);
  let views = data.map((t) => groupNormDims(t, N, C, HxW));
  if (views.some((v) => !v || !sameInner(v.innerShape, views[0]!.innerShape))) {
    // Tensors of different shapes (same element count): view every one as [N, C, HxW].
    views = data.map((t) => flatGroupNormDims(t, N, C, HxW));
    if (views.some((v) => !v)) return undefined;
  }
  const chosen = chooseLayout(N, C, views[0]!.innerShape, views.map((v) => v!.dims));
  return prepareCall(chosen, data, N * C * HxW);
}

/**
 * aclnnGroupNorm: per (n, g), mean and rstd = 1/sqrt(biased var + eps) over D * HxW
 * elements, y = (x - mean) * rstd * gamma + beta. An empty input gives mean 0 and rstd NaN,
 * as CANN writes (ops-nn norm/group_norm/op_host/op_api/aclnn_group_norm.cpp,
 * aclnnGroupNormGetWorkspaceSize: FillScalar on meanOut and rstdOut when self is empty).
 */
export function groupNorm(plan: GroupNormPlan, t: GroupNormTensors): void {
  const { N, C, HxW, group, eps } = plan;
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
      (s) => groupNorm(plan, s),
      { relayout: true },
    );
  }
  if (splitsSamples(call.layout)) return groupNormBySample(call, plan, t);
  const stage = uniformStage<GroupNormStage>({
    op: "groupNorm",
    layout: call.layout,
    dtype: call.dtype,
    items: groupNormItems(call.layout, group),
    group,
    eps,
    x: readArray(t.input),
    xAt: call.addresses[0],
    dyAt: call.addresses[0],
    out: writeArray(t.output),
    outAt: call.addresses[1],
    gamma: visible(call, channelValuesOr(t.gamma, C, 1)),
    beta: visible(call, channelValuesOr(t.beta, C, 0)),
    stats: float64(call, 2 * N * group),
  });
  execute(call, [stage]);
  const mean = temporaryFloat64(N * group);
  const rstd = temporaryFloat64(N * group);
  for (let i = 0; i < N * group; i++) {
    mean[i] = stage.stats[2 * i];
    rstd[i] = stage.stats[2 * i + 1];
  }
  writeChannelValues(t.mean, mean);
  writeChannelValues(t.rstd, rstd);
}

/**
 * aclnnGroupNormBackward. Per (n, g), with xhat = (x - mean) * rstd, M = D * HxW:
 * gradInput = rstd * (dy * gamma - sum(dy * gamma) / M - xhat * sum(dy * gamma * xhat) / M),
 * gradGamma = sum over n, hw of dy * xhat, gradBeta = sum over n, hw of dy (per channel).
 * Empty data gives zero gradGamma and gradBeta.
 */
export function groupNormBackward(plan: GroupNormBackwardPlan, t: GroupNormBackwardTensors): void {
  const { N, C, HxW, group, mask } = plan;
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
      { relayout: true },
    );
  }
  if (splitsSamples(call.layout)) return groupNormBackwardBySample(call, plan, t, gradInput);
  const chunks = Math.ceil(plan.N / samplesPerItem(call.layout));
  const stage = uniformStage<GroupNormBackwardStage>({
    op: "groupNormBackward",
    layout: call.layout,
    dtype: call.dtype,
    items: groupNormItems(call.layout, group),
    group,
    dy: readArray(t.gradOut),
    dyAt: call.addresses[0],
    x: readArray(t.input),
    xAt: call.addresses[1],
    out: gradInput ? writeArray(gradInput) : undefined,
    outAt: call.addresses[gradInput ? 2 : 1],
    mean: visible(call, channelValues(t.mean)),
    rstd: visible(call, channelValues(t.rstd)),
    gamma: visible(call, channelValuesOr(t.gamma, C, 1)),
    partials: float64(call, 2 * chunks * C),
  });
  execute(call, [stage]);
  const { first: gradGamma, second: gradBeta } = mergeGroupPartials(call.layout, stage.partials);
  if (mask[1] && t.gradGamma) writeChannelValues(t.gradGamma, gradGamma);
  if (mask[2] && t.gradBeta) writeChannelValues(t.gradBeta, gradBeta);
}

/** `call` with its pixels layout cut into blocks within each sample. */
function bySample(call: Call): Call {
  return { ...call, layout: { ...call.layout, perSample: true } };
}

/**
 * aclnnGroupNorm in two stages (see splitsSamples): per-(n, c) moments of blocks of each
 * sample, merged per (n, g) in channel order, then the normalizing write with per-(n, c)
 * constants.
 */
function groupNormBySample(whole: Call, plan: GroupNormPlan, t: GroupNormTensors): void {
  const { N, C, group, eps } = plan;
  const call = bySample(whole);
  const { layout } = call;
  const D = C / group;
  const stats = statsStage(call, t.input);
  const write = uniformStage<WriteStage>({
    op: "normalize",
    layout,
    dtype: call.dtype,
    items: stats.items,
    x: readArray(t.input),
    xAt: call.addresses[0],
    dyAt: call.addresses[0],
    out: writeArray(t.output),
    outAt: call.addresses[1],
    constants: float64(call, 2 * N * C),
  });
  const gamma = channelValuesOr(t.gamma, C, 1);
  const beta = channelValuesOr(t.beta, C, 0);
  const mean = temporaryFloat64(N * group);
  const rstd = temporaryFloat64(N * group);
  execute(call, [stats, write], [() => {
    const { first, second } = mergePixelPartials(layout, stats.partials, true);
    const acc = temporaryFloat64(2);
    const k = write.constants;
    for (let n = 0; n < N; n++) {
      for (let g = 0; g < group; g++) {
        for (let d = 0; d < D; d++) {
          const nc = n * C + g * D + d;
          mergeMoments(acc, 0, 1, d * layout.inner, first[nc], second[nc], layout.inner);
        }
        const ng = n * group + g;
        mean[ng] = acc[0] / (D * layout.inner);
        rstd[ng] = 1 / Math.sqrt(acc[1] / (D * layout.inner) + eps);
        for (let c = g * D; c < (g + 1) * D; c++) {
          const scale = rstd[ng] * gamma[c];
          k[2 * n * C + c] = scale;
          k[(2 * n + 1) * C + c] = normalizeAffine(mean[ng], scale, beta[c]);
        }
      }
    }
  }]);
  writeChannelValues(t.mean, mean);
  writeChannelValues(t.rstd, rstd);
}

/**
 * aclnnGroupNormBackward in two stages (see splitsSamples): per-(n, c) sum(dy) and
 * sum(dy * (x - mean)) of blocks of each sample, then (with gradInput) the gradient write
 * with per-(n, c) constants, as the fused pixel driver computes them.
 */
function groupNormBackwardBySample(
  whole: Call,
  plan: GroupNormBackwardPlan,
  t: GroupNormBackwardTensors,
  gradInput: Tensor | undefined,
): void {
  const { N, C, group, mask } = plan;
  const call = bySample(whole);
  const { layout } = call;
  const D = C / group;
  const count = D * layout.inner;
  const groupMean = channelValues(t.mean);
  const groupRstd = channelValues(t.rstd);
  const gamma = channelValuesOr(t.gamma, C, 1);
  const mean = temporaryFloat64(N * C);
  for (let nc = 0; nc < N * C; nc++) mean[nc] = groupMean[Math.floor(nc / D)];
  const sums = sumsStage(call, t.gradOut, t.input, mean);
  const write = gradInput
    ? uniformStage<WriteStage>({
      op: "gradient",
      layout,
      dtype: call.dtype,
      items: sums.items,
      dy: readArray(t.gradOut),
      dyAt: call.addresses[0],
      x: readArray(t.input),
      xAt: call.addresses[1],
      out: writeArray(gradInput),
      outAt: call.addresses[2],
      constants: float64(call, 3 * N * C),
    })
    : undefined;
  const gradGamma = temporaryFloat64(C);
  const gradBeta = temporaryFloat64(C);
  const constants = () => {
    const { first: sumDy, second: sumDot } = mergePixelPartials(layout, sums.partials, false);
    for (let n = 0; n < N; n++) {
      for (let g = 0; g < group; g++) {
        const ng = n * group + g;
        let s1 = 0;
        let s2 = 0;
        for (let c = g * D; c < (g + 1) * D; c++) {
          const sdy = sumDy[n * C + c];
          const sdyXhat = sumDot[n * C + c] * groupRstd[ng];
          gradGamma[c] += sdyXhat;
          gradBeta[c] += sdy;
          s1 += sdy * gamma[c];
          s2 += sdyXhat * gamma[c];
        }
        if (!write) continue;
        for (let c = g * D; c < (g + 1) * D; c++) {
          const at = 3 * n * C + c;
          groupNormGradAffine(
            groupMean[ng],
            groupRstd[ng],
            gamma[c],
            s1 / count,
            s2 / count,
            write.constants,
            at,
            C,
          );
        }
      }
    }
  };
  execute(call, write ? [sums, write] : [sums], [constants]);
  if (mask[1] && t.gradGamma) writeChannelValues(t.gradGamma, gradGamma);
  if (mask[2] && t.gradBeta) writeChannelValues(t.gradBeta, gradBeta);
}
