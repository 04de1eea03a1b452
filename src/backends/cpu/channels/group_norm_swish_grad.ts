/**
 * aclnnGroupNormSwishGrad on the CPU, as CANN's kernel computes it in float32 (hicann/ops-nn
 * e5c3fa9 norm/group_norm_swish_grad/op_kernel/group_norm_swish_grad.h:186-346; docs/
 * norm_family_kernels.md section 11): two stages on NCHW rows (wasm/channel_swish_grad.wat),
 * as groupNormBackward's (group_norm.ts): per (n, c) sum(dYNew) and sum(xhat * dYNew) (the
 * "swishSums" stage, the kernel's dbeta_part and dgamma_part), merged per (n, g) in channel
 * order on the calling thread into c1 = sum_c gamma[c] * dbeta_part[c] / m and c2 (the same
 * with dgamma_part, `:1022-1031`), rounded to float32 as the kernel holds them; then the dx
 * write ("swishGrad", `:297-300`). dYNew costs an exp and two divisions an element: the sums
 * stage keeps it, as float32, in a scratch block of the host heap that the write reads instead
 * of computing it again (the same float32 values, so the same bits; with the policy's
 * `swishGradCache` off, or when the heap cannot give the block, the write computes it again).
 * dgamma[c] and dbeta[c] add the parts over n in float64 and round once to the dtype
 * (`:100-160`); they are left unwritten when not required. Data in another layout than rows is
 * staged into dense NCHW copies first (staging.ts), which the stages then run on; a large call
 * runs whole (cache_blocks.ts says why), with one scratch.
 *
 * @module
 */

import type { GroupNormSwishGradPlan, GroupNormSwishGradTensors } from "../../types.ts";
import { channelValues } from "../tensors/channel_values.ts";
import { writeChannelValues } from "../tensors/channel_values.ts";
import { type Call, execute, float64 } from "./call.ts";
import {
  SWISH_GRAD_CONSTANTS,
  SWISH_SUMS_CONSTANTS,
  swishCacheRow,
} from "../kernels/channel_stages.ts";
import type { Layout } from "../kernels/layout_types.ts";
import type { SumsStage } from "../kernels/stage_types.ts";
import { sumsStage, writeStage } from "./setup.ts";
import { mergeChannelSums } from "./merge.ts";
import { temporaryFloat64 } from "../../../tensor/slab.ts";
import { runStaged } from "./staging.ts";
import { groupNormCall } from "./group_norm.ts";
import { cpuPolicy } from "../pool/pool.ts";
import { heapFree, heapScratch } from "../../../tensor/host_heap.ts";

/** Calls whose stages ran with a dYNew cache (see {@linkcode cachedSwishGradRuns}). */
let cachedRuns = 0;

/**
 * How many calls have run their write from the dYNew
 * their sums stage kept, since the process started: tests check that the cached path ran.
 */
export function cachedSwishGradRuns(): number {
  return cachedRuns;
}

/**
 * The dYNew cache of a rows call of `layout` (kernels/channel_stages.ts swishCacheRow: N * C
 * rows of whole vectors), on a scratch block of the host heap (contents undefined: the sums
 * stage writes every float the write stage reads); undefined when the heap cannot give one.
 * The caller frees it with heapFree(cache) once the call's stages have run.
 */
function dyNewCache(layout: Layout): Float32Array | undefined {
  const length = layout.N * layout.C * swishCacheRow(layout.inner);
  const block = heapScratch(length * Float32Array.BYTES_PER_ELEMENT);
  if (!block) return undefined;
  const cache = new Float32Array(block.buffer, block.at, length);
  block.adopt(cache);
  return cache;
}

/** aclnnGroupNormSwishGrad (module doc). Empty data gives zero dgamma and dbeta. */
export function groupNormSwishGrad(
  plan: GroupNormSwishGradPlan,
  t: GroupNormSwishGradTensors,
): void {
  const { N, C, HxW } = plan;
  const dgamma = new Float64Array(C);
  const dbeta = new Float64Array(C);
  if (N * C * HxW !== 0) {
    const call = groupNormCall(plan, [t.dy, t.x], t.dx, true);
    if (!call) {
      return runStaged(
        t,
        { inputs: ["dy", "x"], outputs: ["dx"] },
        (s) => groupNormSwishGrad(plan, s),
        { relayout: true },
      );
    }
    passes(plan, t, call, dgamma, dbeta);
  }
  if (plan.dgammaIsRequire) writeChannelValues(t.dgamma, dgamma);
  if (plan.dbetaIsRequire) writeChannelValues(t.dbeta, dbeta);
}

/** The two stages on `call`, adding its samples' parts to `dgamma` and `dbeta`. */
function passes(
  plan: GroupNormSwishGradPlan,
  t: GroupNormSwishGradTensors,
  call: Call,
  dgamma: Float64Array,
  dbeta: Float64Array,
): void {
  const { N, C, HxW, numGroups: G } = plan;
  const f = Math.fround;
  const D = C / G;
  const m = D * HxW;
  const mean = channelValues(t.mean);
  const rstd = channelValues(t.rstd);
  const gamma = channelValues(t.gamma);
  const beta = channelValues(t.beta);
  const s = f(plan.swishScale);
  // Per (n, c): rstd, -mean * rstd (Adds_Muls_template, :996-1001), gamma, beta, -s, s.
  const K = SWISH_SUMS_CONSTANTS;
  const sumsConstants = float64(call, K * N * C);
  for (let n = 0; n < N; n++) {
    for (let c = 0; c < C; c++) {
      const ng = n * G + Math.floor(c / D);
      const at = n * K * C + c;
      const values = [rstd[ng], f(-mean[ng] * rstd[ng]), gamma[c], beta[c], -s, s];
      for (let j = 0; j < K; j++) sumsConstants[at + j * C] = values[j];
    }
  }
  // The dYNew the sums stage keeps for the write (the heap's: the pool's workers reach it from
  // the job words); freed below, once both stages have run.
  const cache = cpuPolicy().swishGradCache ? dyNewCache(call.layout) : undefined;
  const sums: SumsStage = {
    ...sumsStage(call, t.dy, t.x, temporaryFloat64(1)),
    op: "swishSums",
    constants: sumsConstants,
    cache,
  };
  const W = SWISH_GRAD_CONSTANTS;
  const write = {
    ...writeStage(call, "swishGrad", t.dy, t.x, t.dx, float64(call, W * N * C)),
    cache,
  };
  const constants = () => {
    const { first: sumDy, second: sumDot } = mergeChannelSums(call.layout, sums.partials);
    for (let n = 0; n < N; n++) {
      for (let g = 0; g < G; g++) {
        const ng = n * G + g;
        let c1 = 0;
        let c2 = 0;
        for (let c = g * D; c < (g + 1) * D; c++) {
          dbeta[c] += sumDy[n * C + c];
          dgamma[c] += sumDot[n * C + c];
          c1 += gamma[c] * sumDy[n * C + c];
          c2 += gamma[c] * sumDot[n * C + c];
        }
        const r = rstd[ng];
        const [k7, k8] = [f(r * f(c2 / m)), f(r * f(c1 / m))];
        for (let c = g * D; c < (g + 1) * D; c++) {
          const from = n * K * C + c;
          const at = n * W * C + c;
          for (let j = 0; j < K; j++) write.constants[at + j * C] = sumsConstants[from + j * C];
          write.constants[at + 6 * C] = f(r * gamma[c]);
          write.constants[at + 7 * C] = k7;
          write.constants[at + 8 * C] = k8;
        }
      }
    }
  };
  try {
    execute(call, [sums, write], [constants]);
    if (cache) cachedRuns++;
  } finally {
    if (cache) heapFree(cache);
  }
}
