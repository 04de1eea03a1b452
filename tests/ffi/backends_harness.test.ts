/**
 * The test harness itself (tests/helpers/backends.ts): forEachBackend registers the CPU
 * variant and one variant per simulated SoC, plays each SoC (the device reports it and the
 * simulator refuses what that chip refuses), and restores ACLSIM_SOC_NAME afterwards.
 *
 * @module
 */

import assert from "node:assert/strict";
import { batchNormSavesVariance, socFamily } from "../../src/backends/ascend/soc.ts";
import type { AscendDevice } from "../../src/ffi/runtime.ts";
import { batchNormStats } from "../../src/ops/batch_norm_stats.ts";
import { Tensor } from "../../src/tensor/tensor.ts";
import {
  assertChipRefuses,
  chipAccepts,
  forEachBackend,
  SIM_AVAILABLE,
  SIM_SOCS,
} from "../helpers/backends.ts";

const before = Deno.env.get("ACLSIM_SOC_NAME");
const seen: string[] = [];

forEachBackend("harness: each variant runs on its backend and plays its SoC", (ctx) => {
  seen.push(ctx.label);
  if (ctx.device === "cpu") {
    assert.equal(ctx.soc, undefined);
    assert.equal(ctx.socName, undefined);
    return;
  }
  assert.equal(Deno.env.get("ACLSIM_SOC_NAME"), ctx.socName);
  assert.equal((ctx.device as AscendDevice).socName, ctx.socName);
  // What the chip refuses is refused, the rest runs: bfloat16 batchNormStats, per soc.ts.
  const x = Tensor.random([4, 3, 2], { seed: 1, dtype: "bfloat16", device: ctx.device });
  const call = () => batchNormStats({ input: x });
  if (chipAccepts(ctx.soc, "aclnnBatchNormStats", ["bfloat16"])) {
    assert.deepEqual(call().mean.shape, [3]);
  } else {
    assertChipRefuses(ctx, call, "input");
  }
});

Deno.test("harness: every variant ran, and ACLSIM_SOC_NAME is restored", () => {
  assert.equal(Deno.env.get("ACLSIM_SOC_NAME"), before);
  const expected = ["cpu", ...(SIM_AVAILABLE ? SIM_SOCS.map((s) => `sim ${s}`) : [])];
  assert.deepEqual(seen, expected);
});

Deno.test("harness: the default SoCs cover both saveInvstd conventions and bf16 rules", () => {
  // What the suites rely on the second SoC for (per soc.ts): the variance conversion of
  // BatchNorm's saveInvstd, and a bfloat16 refusal the first one does not make.
  const [first, second] = SIM_SOCS.map((s) => ({ name: s, family: socFamily(s)! }));
  assert.equal(batchNormSavesVariance(first.name), false, first.name);
  assert.equal(batchNormSavesVariance(second.name), true, second.name);
  assert.ok(chipAccepts(first.family, "aclnnBatchNormStats", ["bfloat16"]), first.name);
  assert.ok(!chipAccepts(second.family, "aclnnBatchNormStats", ["bfloat16"]), second.name);
});
