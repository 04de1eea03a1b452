/**
 * Streaming kernels of GroupNorm: aclnnGroupNorm and aclnnGroupNormBackward. The data is
 * (N, C, HxW) in each tensor's logical order; a work item owns whole groups (or whole
 * samples when channels-last), computes their statistics or sums and writes their outputs
 * while their data is still in cache.
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
import * as reference from "../reference/group_norm.ts";
import { channelValues, channelValuesOr, writeChannelValues } from "./channel_values.ts";
import { streamable } from "./aliasing.ts";
import { type Call, execute, float64, prepareCall, visible } from "./call.ts";
import { groupNormItems, samplesPerItem } from "./kernels/layout_types.ts";
import {
  type GroupNormBackwardStage,
  type GroupNormStage,
  uniformStage,
} from "./kernels/stage_types.ts";
import { chooseLayout, flatGroupNormDims, groupNormDims } from "./layout.ts";
import { mergeGroupPartials } from "./merge.ts";
import { readArray, writeArray } from "./tensor_arrays.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";

/**
 * A GroupNorm call over `inputs` and `output`, or undefined for the reference kernel: empty
 * data, overlapping output, or a tensor that cannot be viewed as (N, C, HxW) with strides.
 */
function groupNormCall(
  plan: { N: number; C: number; HxW: number },
  inputs: readonly Tensor[],
  output: Tensor | undefined,
): Call | undefined {
  const { N, C, HxW } = plan;
  if (N * C * HxW === 0) return undefined;
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
 * elements, y = (x - mean) * rstd * gamma + beta.
 */
export function groupNorm(plan: GroupNormPlan, t: GroupNormTensors): void {
  const { N, C, group, eps } = plan;
  const call = groupNormCall(plan, [t.input], t.output);
  if (!call) return reference.groupNorm(plan, t);
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
 */
export function groupNormBackward(plan: GroupNormBackwardPlan, t: GroupNormBackwardTensors): void {
  const { C, group, mask } = plan;
  const gradInput = mask[0] ? t.gradInput : undefined;
  const call = groupNormCall(plan, [t.gradOut, t.input], gradInput);
  if (!call) return reference.groupNormBackward(plan, t);
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
