/**
 * The library on every SoC family the software CANN models (forEachBackend plays each through
 * ACLSIM_SOC_NAME): the CPU backend and the NPU code path return the same values (the
 * saveInvstd convention converted at the boundary, empty batches, GatherStatsWithCounts with
 * one running statistic), and what a chip refuses is refused up front with 161002 naming the
 * argument and the SoC. Needs the built simulator (`deno task build:sim`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { socFamily } from "../src/backends/ascend/soc.ts";
import { scenarioDType, scenarioRefusal, SOC_SCENARIOS } from "./fixtures/soc_scenarios.ts";
import { assertClose } from "./helpers/assert.ts";
import { forEachBackend } from "./helpers/backends.ts";
import { betweenKernels, toleranceFor } from "./helpers/tolerance.ts";

const SOCS = [
  "Ascend910A",
  "Ascend910B4",
  "Ascend910_9391",
  "Ascend310P3",
  "Ascend950PR_9599",
  "Ascend350_354f",
];

forEachBackend("soc: the NPU path equals the CPU backend or refuses as the chip does", (ctx) => {
  const soc = ctx.socName!;
  for (const [scenario, run] of Object.entries(SOC_SCENARIOS)) {
    const cpu = run("cpu");
    const npu = run(ctx.device);
    assert.ok("values" in cpu, `${scenario}: the CPU backend failed: ${JSON.stringify(cpu)}`);
    const refused = scenarioRefusal(socFamily(soc)!, scenario);
    if (refused !== undefined) {
      assert.ok(!("values" in npu), `${scenario} on ${soc}: expected a refusal of ${refused}`);
      assert.equal(npu.code, 161002, `${scenario}: ${npu.message}`);
      assert.equal(npu.argument, refused, `${scenario}: ${npu.message}`);
      assert.ok(
        npu.message.includes(soc),
        `${scenario}: the message names the SoC: ${npu.message}`,
      );
      continue;
    }
    assert.ok("values" in npu, `${scenario} on ${soc}: ${JSON.stringify(npu)}`);
    // Two kernels (the NPU path's and the CPU backend's), each within its table entry.
    const tolerance = betweenKernels(toleranceFor(scenarioDType(scenario)));
    assert.equal(npu.values.length, cpu.values.length);
    npu.values.forEach((v, i) => assertClose(v, cpu.values[i], tolerance, `${scenario} #${i}`));
  }
}, { cpu: false, socs: SOCS });

Deno.test("soc: empty batches give the documented values on the CPU backend", () => {
  const cpu = (name: string) => {
    const outcome = SOC_SCENARIOS[name]("cpu");
    assert.ok("values" in outcome, `${name}: ${JSON.stringify(outcome)}`);
    return outcome.values;
  };
  assert.deepEqual(cpu("empty batch: batchNorm training").slice(0, 2), [[0, 0, 0], [
    NaN,
    NaN,
    NaN,
  ]]);
  assert.deepEqual(cpu("empty batch: batchNormStats"), [[0, 0, 0], [NaN, NaN, NaN]]);
  assert.deepEqual(cpu("empty batch: groupNorm"), [[0, 0, 0, 0], [NaN, NaN, NaN, NaN]]);
  assert.deepEqual(cpu("empty batch: gatherStats with no rank"), [[0, 0, 0], [NaN, NaN, NaN]]);
  assert.deepEqual(cpu("empty batch: batchNormBackward"), [[0, 0, 0], [0, 0, 0]]);
  assert.deepEqual(cpu("empty batch: batchNormReduceBackward"), [
    [0, 0, 0],
    [0, 0, 0],
    [0, 0, 0],
    [0, 0, 0],
  ]);
  assert.deepEqual(cpu("empty batch: groupNormBackward"), [[0, 0, 0, 0], [0, 0, 0, 0]]);
});
