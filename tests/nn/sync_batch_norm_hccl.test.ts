/**
 * The SyncBatchNorm module over createHcclProcessGroup: two rank processes, each with its own
 * simulated NPU and the software HCCL of tests/sim, train the module on uneven shares of each
 * batch (momentum null, the DDP all-reduce of the parameter gradients, SGD), then run an eval
 * step; every step equals the BatchNorm module on the whole batch in this process.
 */

import assert from "node:assert/strict";
import { BatchNorm } from "../../src/nn/mod.ts";
import type { Tensor } from "../../src/tensor/tensor.ts";
import { assertClose } from "../helpers/assert.ts";
import { SIM_AVAILABLE } from "../helpers/backends.ts";
import { SIM_DIR } from "../helpers/ffi_sim.ts";
import { freePort } from "../helpers/net.ts";
import { betweenKernels, TOLERANCE } from "../helpers/tolerance.ts";
import { batch, sgd, STEPS } from "./fixtures/hccl_module_rank.ts";

const CHILD = new URL("./fixtures/hccl_module_rank.ts", import.meta.url).pathname;
const SPLITS = [3, 5];
const TOL = betweenKernels(TOLERANCE.float32);

// deno-lint-ignore no-explicit-any
type RankResult = Record<string, any>;

async function launch(): Promise<RankResult[]> {
  const port = String(freePort());
  const outputs = await Promise.all(SPLITS.map((_, rank) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", CHILD, SPLITS.join(",")],
      env: {
        RANK: String(rank),
        WORLD_SIZE: String(SPLITS.length),
        MASTER_ADDR: "127.0.0.1",
        MASTER_PORT: port,
        ACLSIM_DEVICE_COUNT: "4",
        ASCEND_OPP_PATH: SIM_DIR,
      },
      stdout: "piped",
      stderr: "piped",
    }).output()
  ));
  return outputs.map((o, rank) => {
    const line = new TextDecoder().decode(o.stdout).trim().split("\n").at(-1);
    return line
      ? JSON.parse(line)
      : { ok: false, rank, stderr: new TextDecoder().decode(o.stderr) };
  });
}

Deno.test({
  name: "SyncBatchNorm module over HCCL, 2 rank processes = the BatchNorm module",
  ignore: !SIM_AVAILABLE,
  fn: async () => {
    const results = await launch();
    for (const r of results) assert.ok(r.ok, `rank ${r.rank}: ${JSON.stringify(r)}`);
    using bn = new BatchNorm({ numFeatures: 3, momentum: null });
    for (let s = 0; s <= STEPS; s++) {
      if (s === STEPS) bn.eval();
      const { x, dy } = batch(SPLITS, s);
      using y = bn.forward(x);
      using g = bn.backward(dy);
      if (bn.training) {
        sgd(bn.weight, g.gradWeight);
        sgd(bn.bias, g.gradBias);
      }
      let row = 0;
      for (const [r, result] of results.entries()) {
        const got = result.steps[s];
        const label = `step ${s} rank ${r}`;
        const rows = (t: Tensor) => t.slice(0, row, row + SPLITS[r]);
        assertClose(got.output, rows(y), TOL, `${label} output`);
        assertClose(got.gradInput, rows(g.gradInput), TOL, `${label} gradInput`);
        assertClose(got.gradWeight, g.gradWeight!, TOL, `${label} summed gradWeight`);
        assertClose(got.gradBias, g.gradBias!, TOL, `${label} summed gradBias`);
        assertClose(got.weight, bn.weight!, TOL, `${label} weight`);
        assertClose(got.runningMean, bn.runningMean!, TOL, `${label} runningMean`);
        assertClose(got.runningVar, bn.runningVar!, TOL, `${label} runningVar`);
        assert.equal(got.numBatchesTracked, bn.numBatchesTracked, `${label} count`);
        row += SPLITS[r];
      }
    }
  },
});
