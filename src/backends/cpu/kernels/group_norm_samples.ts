/**
 * GroupNorm per sample: the arithmetic between its reduction and its write (each sample's
 * partials merged per (n, c), its per-group statistics, its per-(n, c) write constants), in
 * float64 as the calling thread computed it between the two stages, and the fused stage that
 * runs reduction, constants and write sample by sample (stage_types.ts GroupNormSamplesStage).
 * A sample's constants depend on that sample's sums alone, so a work item can write a sample
 * as soon as it has reduced it: while its data is still in the core's cache, and with no
 * thread waiting for the others between the two stages. The unfused call (channels/
 * group_norm.ts, when there are too few samples to share) runs the same two views of the stage
 * and these same functions between them: the same bits either way, and for any thread count.
 *
 * Part of the pool's worker script (see pool/worker_entry.ts).
 *
 * @module
 */

import { batchNormItems, blocksPerSample, ITEM_ELEMENTS, type Layout } from "./layout_types.ts";
import {
  type GroupNormSamplesStage,
  type StatsStage,
  type SumsStage,
  uniformStage,
  type WriteStage,
} from "./stage_types.ts";
import { mergeMoments } from "./moments.ts";
import { mergeSamplePartials } from "./partials_merge.ts";
import {
  GRADIENT_CONSTANTS,
  groupNormGradCentered,
  NORMALIZE_CONSTANTS,
  normalizeCentered,
} from "./formulas.ts";
import { runChannelItems, runChannelRows } from "./channel_stages.ts";
import type { WasmKernels } from "./wasm_instance.ts";

/** Samples per work item of a fused stage: whole samples, about ITEM_ELEMENTS elements. */
export function samplesPerItem(layout: Layout): number {
  return Math.max(1, Math.ceil(ITEM_ELEMENTS / Math.max(1, layout.C * layout.inner)));
}

/** Work items of a fused stage over `layout` (runs of {@linkcode samplesPerItem} samples). */
export function groupNormSampleItems(layout: Layout): number {
  return Math.ceil(layout.N / samplesPerItem(layout));
}

/** Per-(n, c) constants of the write of a fused stage kind (formulas.ts). */
export function sampleConstantCount(op: GroupNormSamplesStage["op"]): number {
  if (op === "groupNormBackwardSamples") return GRADIENT_CONSTANTS;
  return op === "groupNormSwishSamples" ? NORMALIZE_CONSTANTS + 1 : NORMALIZE_CONSTANTS;
}

/** The reduction and the write of a fused stage, as the stages an unfused call runs. */
export interface SampleStages {
  /** The statistics (forward) or gradient sums (backward), into the stage's partials. */
  readonly reduce: StatsStage | SumsStage;
  /** The write from the stage's constants, or undefined when it writes no data output. */
  readonly write: WriteStage | undefined;
}

/**
 * The two stages a fused stage `s` is made of, over its arrays (items: the unfused stages').
 * Their heap addresses are those `s` has now.
 */
export function sampleStages(s: GroupNormSamplesStage): SampleStages {
  const { layout, dtype, dyAt, xAt, outAt } = s;
  const items = batchNormItems(layout);
  const backward = s.op === "groupNormBackwardSamples";
  // Every field the two read; the forward's dy is undefined.
  const common = { layout, dtype, items, dy: s.dy, dyAt, x: s.x, xAt, outAt };
  const reduce = backward
    ? uniformStage<SumsStage>({ ...common, op: "sums", mean: s.mean, partials: s.partials })
    : uniformStage<StatsStage>({ ...common, op: "stats", partials: s.partials });
  const write = s.out === undefined ? undefined : uniformStage<WriteStage>({
    ...common,
    op: backward ? "gradient" : s.op === "groupNormSwishSamples" ? "swish" : "normalize",
    out: s.out,
    constants: s.constants,
    // GroupNorm's constants come from this call's sums over the data its write reads.
    dataSums: true,
  });
  for (const stage of write ? [reduce, write] : [reduce]) {
    stage.dyHeap = s.dyHeap;
    stage.xHeap = s.xHeap;
    stage.outHeap = s.outHeap;
  }
  return { reduce, write };
}

/** Backward: sample n's per-(n, c) means (its groups' means) into `s.mean`, for its sums. */
export function groupNormSampleMeans(s: GroupNormSamplesStage, n: number): void {
  const { C } = s.layout;
  const { group, groupStats, mean } = s;
  const D = C / group;
  for (let g = 0, nc = n * C; g < group; g++) {
    const m = groupStats[n * group + g];
    for (let d = 0; d < D; d++, nc++) mean[nc] = m;
  }
}

/** This thread's accumulator of a group's moments. */
const groupAcc = new Float64Array(2);

/**
 * Sample n's statistics and write constants, from the partials its reduction left: the
 * per-(n, c) pairs merged (`s.pairs`), then per group g, over its D = C / group channels of M =
 * D * HxW elements:
 * - forward: mean, biased variance v = m2 / M and rstd = 1 / sqrt(v + eps) into `s.groupStats`,
 *   and per channel the centred normalize constants (mean, rstd * gamma, beta), -swishScale
 *   after them for the swish write;
 * - backward: a = sum(dy * gamma) / M and b = sum(dy * gamma * xhat) / M, and per channel the
 *   centred gradient constants (formulas.ts groupNormGradCentered).
 */
export function groupNormSampleConstants(s: GroupNormSamplesStage, n: number): void {
  const { layout, group, gamma, pairs, constants: q, groupStats } = s;
  const { C, N } = layout;
  const HxW = layout.inner;
  const D = C / group;
  const M = D * HxW;
  const size = N * C;
  const G = N * group;
  const backward = s.op === "groupNormBackwardSamples";
  mergeSamplePartials(layout, s.partials, n, !backward, pairs, n * C, size + n * C);
  const count = sampleConstantCount(s.op);
  for (let g = 0; g < group; g++) {
    const ng = n * group + g;
    if (backward) {
      const r = groupStats[G + ng];
      let s1 = 0;
      let s2 = 0;
      for (let c = g * D; c < (g + 1) * D; c++) {
        s1 += pairs[n * C + c] * gamma[c];
        s2 += pairs[size + n * C + c] * r * gamma[c];
      }
      if (q === undefined) continue;
      const m = groupStats[ng];
      for (let c = g * D; c < (g + 1) * D; c++) {
        groupNormGradCentered(m, r, gamma[c], s1 / M, s2 / M, q, n * count * C + c, C);
      }
      continue;
    }
    for (let d = 0; d < D; d++) {
      const nc = n * C + g * D + d;
      mergeMoments(groupAcc, 0, 1, d * HxW, pairs[nc], pairs[size + nc], HxW);
    }
    const mean = groupAcc[0] / M;
    const v = groupAcc[1] / M;
    const rstd = 1 / Math.sqrt(v + s.eps);
    groupStats[ng] = mean;
    groupStats[G + ng] = v;
    groupStats[2 * G + ng] = rstd;
    for (let c = g * D; c < (g + 1) * D; c++) {
      const at = n * count * C + c;
      normalizeCentered(mean, rstd * gamma[c], s.beta[c], q, at, C);
      if (count > NORMALIZE_CONSTANTS) q[at + 3 * C] = -s.swishScale;
    }
  }
}

/** Samples [n0, n1) of `stage` (one of a fused stage's two), on this thread's kernels. */
function runSamples(
  stage: StatsStage | SumsStage | WriteStage,
  n0: number,
  n1: number,
  w: WasmKernels,
): void {
  const layout = stage.layout;
  if (layout.kind === "pixels") {
    const blocks = blocksPerSample(layout);
    runChannelItems(stage, n0 * blocks, n1 * blocks, w);
  } else {
    // Rows (per sample: always in memory order), row n * C + c.
    runChannelRows(stage, n0 * layout.C, n1 * layout.C, w);
  }
}

/** The last fused stage this thread ran, and its two stages. */
let lastStage: GroupNormSamplesStage | undefined;
let lastParts: SampleStages | undefined;

/**
 * Runs items [from, to) of the fused stage `s` on this thread's kernels `w`: for its samples,
 * the reduction, each sample's constants, then the write.
 */
export function runGroupNormSamples(
  s: GroupNormSamplesStage,
  from: number,
  to: number,
  w: WasmKernels,
): void {
  if (s !== lastStage) {
    lastParts = sampleStages(s);
    lastStage = s;
  }
  const { reduce, write } = lastParts!;
  const per = samplesPerItem(s.layout);
  const n0 = from * per;
  const n1 = Math.min(s.layout.N, to * per);
  if (reduce.op === "sums") { for (let n = n0; n < n1; n++) groupNormSampleMeans(s, n); }
  runSamples(reduce, n0, n1, w);
  for (let n = n0; n < n1; n++) groupNormSampleConstants(s, n);
  if (write) runSamples(write, n0, n1, w);
}
