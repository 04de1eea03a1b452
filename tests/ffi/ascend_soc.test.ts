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
import { scenarioDType, scenarioRefusal, SOC_SCENARIOS } from "../fixtures/soc_scenarios.ts";
import { assertClose } from "../helpers/assert.ts";
import { forEachBackend, SIM_AVAILABLE } from "../helpers/backends.ts";
import { SIM_DIR } from "../helpers/ffi_sim.ts";
import { AclnnError, batchNorm, openAscend, Tensor as T } from "../../mod.ts";
import { betweenKernels, toleranceFor } from "../helpers/tolerance.ts";

const SOCS = [
  "Ascend910A",
  "Ascend910B4",
  "Ascend910_9391",
  "Ascend310P3",
  "Ascend950PR_9599",
  "Ascend350_354f",
  // The 950 under its pre-2026 name: placed by its platform file, it must behave as a 950.
  "Ascend910_9599",
];

forEachBackend("soc: the NPU path equals the CPU backend or refuses as the chip does", (ctx) => {
  const soc = ctx.socName!;
  for (const [scenario, run] of Object.entries(SOC_SCENARIOS)) {
    const cpu = run("cpu");
    const npu = run(ctx.device);
    assert.ok("values" in cpu, `${scenario}: the CPU backend failed: ${JSON.stringify(cpu)}`);
    const refused = scenarioRefusal(ctx.soc!, scenario);
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

Deno.test({
  name: "soc: a SoC no table or platform file places is refused, naming it and the fix",
  ignore: !SIM_AVAILABLE,
  fn: () => {
    const saved = Deno.env.get("ACLSIM_SOC_NAME");
    Deno.env.set("ACLSIM_SOC_NAME", "Ascend999X1");
    try {
      using device = openAscend({ libDir: SIM_DIR });
      const x = T.random([2, 3, 4], { seed: 1 }).to(device);
      assert.throws(
        () => batchNorm({ input: x, training: true }),
        (e: unknown) =>
          e instanceof AclnnError && e.code === 161002 && e.argument === "device" &&
          /Ascend999X1/.test(e.message) && /Ascend999X1\.ini \(not found\)/.test(e.message) &&
          /ACLNN_NORM_SOC_FAMILY/.test(e.message),
      );
      x.dispose();
    } finally {
      if (saved === undefined) Deno.env.delete("ACLSIM_SOC_NAME");
      else Deno.env.set("ACLSIM_SOC_NAME", saved);
    }
  },
});
