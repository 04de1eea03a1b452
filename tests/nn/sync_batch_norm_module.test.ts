/**
 * The SyncBatchNorm module over two ranks of createLocalProcessGroup against the BatchNorm
 * module on the whole batch, on every backend: several training steps with the DDP all-reduce
 * of the parameter gradients and SGD (outputs, gradInput, summed gradients, running statistics
 * and counts on both ranks), momentum 0.1 and null, even and uneven shares, channels-last
 * inputs; each rank's gradWeight/gradBias is the sum over its own share only; eval mode
 * exchanges nothing (running statistics, or each rank's own batch without them).
 */

import assert from "node:assert/strict";
import { BatchNorm, type NormGradients, SyncBatchNorm } from "../../src/nn/mod.ts";
import { createLocalProcessGroup } from "../../src/distributed/local_process_group.ts";
import type { SyncBatchNormCollectives } from "../../src/ops/sync_batch_norm.ts";
import type { Device } from "../../src/tensor/device.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { forEachBackend, on } from "../helpers/backends.ts";
import { betweenKernels, TOLERANCE } from "../helpers/tolerance.ts";
import { batchNormBackwardAt64, batchStats64, invstdOf } from "../oracle/mod.ts";
import { data } from "./module_inputs.ts";

/** Two kernels' float32 results (sync composition vs single-process operator). */
const TOL = betweenKernels(TOLERANCE.float32);
const LR = 0.2;

/** Sums a rank's tensor over the group (the all-reduce DDP applies to gradients). */
function allReduce(group: SyncBatchNormCollectives, t: Tensor): Promise<Tensor> {
  return Promise.resolve(group.allReduce(t, { op: "test", payload: "[grad]" }));
}

function step(p: Tensor | null, g: Tensor | null): void {
  if (!p || !g) return;
  const gv = g.toFloat64Array();
  p.copy_(p.toFloat64Array().map((v, i) => v - LR * gv[i]));
}

interface Run {
  readonly shape: readonly number[];
  /** Rows of dim 0 per rank. */
  readonly split: readonly [number, number];
  readonly momentum: number | null;
  readonly layout: "contiguous" | "channels-last";
}

async function compare(run: Run, device: Device): Promise<void> {
  const where = `${run.shape} split ${run.split} momentum ${run.momentum} ${run.layout}`;
  const C = run.shape[1];
  const options = { numFeatures: C, momentum: run.momentum, device };
  using single = new BatchNorm(options);
  const groups = createLocalProcessGroup(2);
  const ranks = groups.map((processGroup) => new SyncBatchNorm({ ...options, processGroup }));
  const rows = (t: Tensor, r: number) =>
    t.slice(0, r === 0 ? 0 : run.split[0], r === 0 ? run.split[0] : undefined);
  for (let s = 0; s < 4; s++) {
    const training = s < 3;
    single.train(training);
    for (const m of ranks) m.train(training);
    const x = on(data(run.shape, 100 + s, "float32", run.layout), device);
    const dy = on(data(run.shape, 200 + s, "float32", run.layout, -1, 1), device);
    using y = single.forward(x);
    using g = single.backward(dy);
    const results = await Promise.all(ranks.map(async (m, r) => {
      const y = await m.forward(rows(x, r));
      const grads = await m.backward(rows(dy, r));
      const gw = await allReduce(groups[r], grads.gradWeight!);
      const gb = await allReduce(groups[r], grads.gradBias!);
      return { y, grads, gw, gb };
    }));
    const label = `${where} step ${s}${training ? "" : " (eval)"}`;
    results.forEach(({ y: yr, grads, gw, gb }, r) => {
      assertClose(yr, rows(y, r).toFloat64Array(), TOL, `${label} rank ${r} output`);
      assertClose(
        grads.gradInput,
        rows(g.gradInput, r).toFloat64Array(),
        TOL,
        `${label} rank ${r} gradInput`,
      );
      assertClose(gw, g.gradWeight!, TOL, `${label} rank ${r} summed gradWeight`);
      assertClose(gb, g.gradBias!, TOL, `${label} rank ${r} summed gradBias`);
      const m = ranks[r];
      assertClose(m.runningMean, single.runningMean!, TOL, `${label} rank ${r} runningMean`);
      assertClose(m.runningVar, single.runningVar!, TOL, `${label} rank ${r} runningVar`);
      assert.equal(m.numBatchesTracked, single.numBatchesTracked, `${label} count`);
      if (training) {
        step(m.weight, gw);
        step(m.bias, gb);
      }
    });
    if (training) {
      step(single.weight, g.gradWeight);
      step(single.bias, g.gradBias);
    }
    // Each rank's own gradWeight/gradBias: its share's sums through the global statistics.
    if (training) checkShares(label, x, dy, rows, results.map((r) => r.grads));
    for (const r of results) {
      r.y.dispose();
      r.grads[Symbol.dispose]();
      r.gw.dispose();
      r.gb.dispose();
    }
  }
  for (const m of ranks) m.dispose();
}

/** gradBias of a rank = sum(dy) over its rows; gradWeight = sum(dy * xhat) with global stats. */
function checkShares(
  label: string,
  x: Tensor,
  dy: Tensor,
  rows: (t: Tensor, r: number) => Tensor,
  grads: NormGradients[],
): void {
  const stats = batchStats64(x.toFloat64Array(), x.shape);
  const invstd = invstdOf(stats.variance, 1e-5);
  grads.forEach((g, r) => {
    const xs = rows(x, r);
    const e = batchNormBackwardAt64(
      rows(dy, r).toFloat64Array(),
      xs.toFloat64Array(),
      xs.shape,
      undefined,
      stats.mean,
      invstd,
      true,
    );
    assertClose(
      g.gradWeight,
      e.gradWeight,
      TOLERANCE.float32,
      `${label} rank ${r} gradWeight share`,
    );
    assertClose(g.gradBias, e.gradBias, TOLERANCE.float32, `${label} rank ${r} gradBias share`);
  });
}

const RUNS: Run[] = [
  { shape: [8, 3, 4, 4], split: [4, 4], momentum: 0.1, layout: "contiguous" },
  { shape: [8, 3, 4, 4], split: [3, 5], momentum: null, layout: "channels-last" },
  { shape: [6, 4, 5], split: [1, 5], momentum: 0.3, layout: "contiguous" },
];

for (const run of RUNS) {
  forEachBackend(
    `SyncBatchNorm module, 2 ranks = BatchNorm module: ${run.shape} split ${run.split}`,
    (ctx) => compare(run, ctx.device),
  );
}

Deno.test("SyncBatchNorm module: eval mode exchanges nothing", async () => {
  const calls: string[] = [];
  const [inner] = createLocalProcessGroup(1);
  const group: SyncBatchNormCollectives = {
    allGather: (t, c) => (calls.push("allGather"), inner.allGather(t, c)),
    allReduce: (t, c) => (calls.push("allReduce"), inner.allReduce(t, c)),
  };
  const x = Tensor.random([4, 3, 5], { seed: 1 });
  for (const trackRunningStats of [true, false]) {
    using m = new SyncBatchNorm({ numFeatures: 3, processGroup: group, trackRunningStats });
    using local = new BatchNorm({ numFeatures: 3, trackRunningStats });
    (await m.forward(x)).dispose();
    (await m.backward(x))[Symbol.dispose]();
    assert.deepEqual(calls.splice(0), ["allGather", "allReduce"], "training exchanges");
    local.forward(x).dispose();
    m.eval();
    local.eval();
    using y = await m.forward(x);
    using g = await m.backward(x);
    assert.deepEqual(calls, [], "eval exchanges nothing");
    // Eval is the local BatchNorm's: running statistics, or this rank's batch without them.
    using ye = local.forward(x);
    using ge = local.backward(x);
    assertClose(y, ye, TOLERANCE.float32, `eval output, trackRunningStats ${trackRunningStats}`);
    assertClose(g.gradWeight, ge.gradWeight!, TOLERANCE.float32, "eval gradWeight");
  }
});
