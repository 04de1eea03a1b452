/**
 * SyncBatchNorm over two ranks of createLocalProcessGroup against torch.nn.BatchNorm on the
 * whole batch (the fixture of tests/nn/make_torch_fixtures.py): each rank holds a share of
 * every batch (split along dim 0, unevenly where N is odd), its gradInput is torch's rows of
 * that share, and its gradWeight/gradBias summed over the ranks (the all-reduce DDP applies) are
 * torch's; SGD with those sums keeps the ranks identical to torch step after step. Eval mode
 * (running statistics, no exchange) and a state dict loaded on both ranks too. On every backend.
 */

import assert from "node:assert/strict";
import { createLocalProcessGroup } from "../../src/distributed/local_process_group.ts";
import { SyncBatchNorm } from "../../src/nn/mod.ts";
import type { BatchNormOptions } from "../../src/nn/mod.ts";
import type { SyncBatchNormCollectives } from "../../src/ops/sync_batch_norm.ts";
import type { Device } from "../../src/tensor/device.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { forEachBackend, on } from "../helpers/backends.ts";
import { PYTORCH_FLOAT32 } from "../helpers/tolerance.ts";
import {
  BATCH_NORM_CASES,
  checkState,
  sgd,
  type TorchCase,
  type TorchStep,
} from "./torch_fixture.ts";

const RANKS = 2;

/** Rows [lo, hi) of dim 0 of the fixture's values, and their shape. */
function share(values: readonly number[], shape: readonly number[], rank: number) {
  const N = shape[0];
  const rowSize = values.length / N;
  const lo = Math.floor((rank * N) / RANKS);
  const hi = Math.floor(((rank + 1) * N) / RANKS);
  return {
    values: values.slice(lo * rowSize, hi * rowSize),
    shape: [hi - lo, ...shape.slice(1)],
  };
}

/** One step on one rank; in training, the DDP all-reduce of the parameter gradients and SGD. */
async function rankStep(
  where: string,
  m: SyncBatchNorm,
  group: SyncBatchNormCollectives,
  rank: number,
  c: TorchCase,
  step: TorchStep,
  device: Device,
): Promise<void> {
  const x = share(step.x, c.shape, rank);
  const dy = share(step.dy, c.shape, rank);
  using y = await m.forward(on(Tensor.fromArray(x.values, x.shape), device));
  using grads = await m.backward(on(Tensor.fromArray(dy.values, dy.shape), device));
  assertClose(y, share(step.output, c.shape, rank).values, PYTORCH_FLOAT32, `${where} output`);
  assertClose(
    grads.gradInput,
    share(step.gradInput, c.shape, rank).values,
    PYTORCH_FLOAT32,
    `${where} gradInput`,
  );
  if (step.gradWeight) {
    const call = { op: "test", payload: "[gradWeight]" };
    using gradWeight = await group.allReduce(grads.gradWeight!, call);
    using gradBias = await group.allReduce(grads.gradBias!, call);
    assertClose(gradWeight, step.gradWeight, PYTORCH_FLOAT32, `${where} gradWeight (summed)`);
    assertClose(gradBias, step.gradBias!, PYTORCH_FLOAT32, `${where} gradBias (summed)`);
    if (m.training) sgd(m, { gradWeight, gradBias }, c.lr);
  } else {
    assert.equal(grads.gradWeight, null);
  }
  checkState(where, m, step.after);
}

async function replay(c: TorchCase, device: Device): Promise<void> {
  const groups = createLocalProcessGroup(RANKS);
  const options = c.options as unknown as BatchNormOptions;
  await Promise.all(groups.map(async (group, rank) => {
    using m = new SyncBatchNorm({ ...options, device, processGroup: group });
    for (const [i, step] of c.steps.entries()) {
      await rankStep(`${c.name} rank ${rank} step ${i}`, m, group, rank, c, step, device);
    }
    // Eval without running statistics normalizes each rank's share alone (as PyTorch's
    // SyncBatchNorm does): not the whole batch's values; tests/nn/sync_batch_norm.test.ts has it.
    if (options.trackRunningStats === false) return;
    m.eval();
    await rankStep(`${c.name} rank ${rank} eval`, m, group, rank, c, c.eval, device);
    const dict = m.stateDict();
    using fresh = new SyncBatchNorm({ ...options, device, processGroup: group });
    fresh.loadStateDict(dict);
    for (const t of Object.values(dict)) t.dispose();
    fresh.eval();
    await rankStep(
      `${c.name} rank ${rank} loaded eval`,
      fresh,
      group,
      rank,
      c,
      c.loaded.eval,
      device,
    );
    if (c.loaded.train) {
      fresh.train();
      const where = `${c.name} rank ${rank} loaded, trained`;
      await rankStep(where, fresh, group, rank, c, c.loaded.train, device);
    }
  }));
}

for (const c of BATCH_NORM_CASES) {
  forEachBackend(`torch.nn ${c.name} as SyncBatchNorm over ${RANKS} ranks`, async (ctx) => {
    await replay(c, ctx.device);
  });
}

Deno.test("SyncBatchNorm torch replay: some case splits its batch unevenly", () => {
  assert.ok(BATCH_NORM_CASES.some((c) => c.shape[0] % RANKS !== 0));
});
