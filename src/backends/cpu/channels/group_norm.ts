/**
 * GroupNorm on the CPU: aclnnGroupNorm and aclnnGroupNormBackward (and aclnnInstanceNorm, GroupNorm
 * with group = C), per sample on the float32 channel kernels (kernels/channel_stages.ts,
 * wasm/channel_norms.wat, channel_pixels.wat): per-(n, c) statistics (or sums) of each sample,
 * merged per (n, g) in channel order (float64), then the write with per-(n, c) constants, centred
 * as CANN computes it. A work item does the three for its run of whole samples
 * (kernels/group_norm_samples.ts); a call with too few samples to share over the pool's threads
 * runs the statistics and the write as two stages, the constants between them on the calling
 * thread (the same bits: {@linkcode fusesSamples}). The data is (N, C, HxW) in each tensor's
 * logical order; rows (each (n, c) a contiguous run) or dense channels-last pixels run in place
 * in the host heap, anything else on dense heap copies (staging.ts).
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
import { type Call, execute, float64, prepareCall, visible } from "./call.ts";
import { batchNormItems } from "../kernels/layout_types.ts";
import { channelLayoutFits } from "../kernels/channel_stages.ts";
import {
  groupNormSampleConstants,
  groupNormSampleItems,
  groupNormSampleMeans,
  sampleConstantCount,
  sampleStages,
} from "../kernels/group_norm_samples.ts";
import {
  type GroupNormSamplesStage,
  type StageFields,
  uniformStage,
} from "../kernels/stage_types.ts";
import { partialsLength } from "./setup.ts";
import { chooseLayout, flatGroupNormDims, groupNormDims } from "./layout.ts";
import { denseLayout, type DenseOrder } from "./dense_layout.ts";
import { hostData, readArray, writeArray } from "../tensors/tensor_arrays.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";
import { cpuThreads } from "../threads.ts";
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
  const G = N * group;
  const s = samplesStage(
    call,
    swishScale === undefined ? "groupNormSamples" : "groupNormSwishSamples",
    {
      x: t.input,
      out: t.output,
      group,
      eps: Math.fround(plan.eps),
      swishScale: swishScale ?? NaN,
      gamma: channelValuesOr(t.gamma, C, 1),
      beta: channelValuesOr(t.beta, C, 0),
      groupStats: float64(call, 3 * G),
    },
  );
  runSamplesStage(call, s);
  // groupStats: mean, variance, rstd per (n, g).
  writeChannelValues(t.mean, s.groupStats.subarray(0, G));
  writeChannelValues(
    t.rstd,
    s.groupStats.subarray(second === "variance" ? G : 2 * G, (second === "variance" ? 2 : 3) * G),
  );
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
 * groupNormBackward's passes on `call` (its sums, then with gradInput the gradient write, per
 * sample: kernels/group_norm_samples.ts), adding the per-channel gradGamma and gradBeta terms
 * of its samples to `gradGamma`, `gradBeta` (per (n, g, c) in that order).
 */
function backwardPasses(
  plan: GroupNormBackwardPlan,
  t: GroupNormBackwardTensors,
  call: Call,
  gradGamma: Float64Array,
  gradBeta: Float64Array,
): void {
  const { N, C, group, mask } = plan;
  const G = N * group;
  const groupStats = float64(call, 2 * G);
  groupStats.set(channelValues(t.mean));
  groupStats.set(channelValues(t.rstd), G);
  const s = samplesStage(call, "groupNormBackwardSamples", {
    dy: t.gradOut,
    x: t.input,
    out: mask[0] ? t.gradInput : undefined,
    group,
    gamma: channelValuesOr(t.gamma, C, 1),
    groupStats,
  });
  runSamplesStage(call, s);
  const D = C / group;
  const { pairs } = s;
  for (let ng = 0, nc = 0; ng < G; ng++) {
    const r = groupStats[G + ng];
    for (let c = (ng % group) * D; c < (ng % group + 1) * D; c++, nc++) {
      gradGamma[c] += pairs[N * C + nc] * r;
      gradBeta[c] += pairs[nc];
    }
  }
}

/** What a GroupNorm call's fused stage takes beyond its call (see samplesStage). */
interface SamplesFields {
  /** dL/dy (backward). */
  readonly dy?: Tensor;
  /** x. */
  readonly x: Tensor;
  /** The data output, when written. */
  readonly out?: Tensor;
  /** Groups. */
  readonly group: number;
  /** eps as a C float (forward). */
  readonly eps?: number;
  /** The swish write's scale (groupNormSwishSamples). */
  readonly swishScale?: number;
  /** Per-channel weights. */
  readonly gamma: Float64Array;
  /** Per-channel shifts (forward). */
  readonly beta?: Float64Array;
  /** Per (n, g): the forward's results' room, or the backward's mean and rstd. */
  readonly groupStats: Float64Array;
}

/**
 * The fused stage of a GroupNorm call (kernels/group_norm_samples.ts); its data tensors in
 * `call` are dy (backward), x, then out when written.
 */
function samplesStage(
  call: Call,
  op: GroupNormSamplesStage["op"],
  f: SamplesFields,
): GroupNormSamplesStage {
  const layout = call.layout;
  const at = call.addresses;
  const first = f.dy ? 1 : 0;
  const NC = layout.N * layout.C;
  return uniformStage<GroupNormSamplesStage>({
    op,
    layout,
    dtype: call.dtype,
    items: groupNormSampleItems(layout),
    dy: f.dy && readArray(f.dy),
    dyAt: at[0],
    x: readArray(f.x),
    xAt: at[first],
    out: f.out && writeArray(f.out),
    outAt: f.out ? at[first + 1] : at[0],
    group: f.group,
    eps: f.eps ?? NaN,
    swishScale: f.swishScale ?? NaN,
    mean: f.dy ? float64(call, NC) : undefined,
    partials: float64(call, partialsLength(layout, batchNormItems(layout))),
    constants: f.out ? float64(call, sampleConstantCount(op) * NC) : undefined,
    gamma: visible(call, f.gamma),
    beta: f.beta && visible(call, f.beta),
    groupStats: visible(call, f.groupStats),
    pairs: float64(call, 2 * NC),
  } as StageFields<GroupNormSamplesStage>);
}

/**
 * Whether a GroupNorm call whose fused stage has `items` work items (runs of whole samples)
 * runs fused, item by item on each thread: when it cannot use the pool (`poolable` false), or
 * when its items share out evenly over the threads (a multiple of them, at least two each) or
 * nearly (at least four each: one thread's extra item at most a quarter of its work). Otherwise
 * (too few samples, or an uneven few: 5 on 2 threads would take 3 samples' time) it runs as its
 * two stages, split into the stages' own items, with every sample's constants between them.
 * The same arithmetic either way (kernels/group_norm_samples.ts), so the same bits.
 */
export function fusesSamples(
  poolable: boolean,
  items: number,
  threads: number = cpuThreads(),
): boolean {
  if (!poolable) return true;
  return items >= 4 * threads || (items >= 2 * threads && items % threads === 0);
}

/** Runs a GroupNorm call's fused stage, fused or as its two stages ({@linkcode fusesSamples}). */
function runSamplesStage(call: Call, s: GroupNormSamplesStage): void {
  if (fusesSamples(call.pool !== undefined, s.items)) return execute(call, [s]);
  const { reduce, write } = sampleStages(s);
  const N = s.layout.N;
  for (let n = 0; n < N && reduce.op === "sums"; n++) groupNormSampleMeans(s, n);
  const constants = () => {
    for (let n = 0; n < N; n++) groupNormSampleConstants(s, n);
  };
  execute(call, write ? [reduce, write] : [reduce], [constants]);
}
