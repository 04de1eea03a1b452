/**
 * The library on every SoC family the software CANN models (ACLSIM_SOC_NAME, one child
 * process per SoC): the CPU backend and the NPU code path return the same values (the
 * saveInvstd convention converted at the boundary, empty batches, GatherStatsWithCounts with
 * one running statistic), and what a chip refuses is refused up front with 161002 naming the
 * argument and the SoC. Needs the built simulator (`deno task build:sim`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { bf16Allowed, socFamily, type SocOperator } from "../src/backends/ascend/soc.ts";
import { assertClose } from "./helpers/assert.ts";

const CHILD = new URL("./fixtures/soc_scenarios_child.ts", import.meta.url).pathname;

type Outcome = { values: number[][] } | { code: number; argument?: string; message: string };
interface ChildReport {
  soc: string;
  results: Record<string, { cpu: Outcome; npu: Outcome }>;
}

async function runOn(soc: string): Promise<ChildReport> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-ffi", "--allow-env", "--allow-read", CHILD],
    env: { ACLSIM_SOC_NAME: soc },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, text + new TextDecoder().decode(out.stderr));
  // JSON has no NaN: the child's NaN values arrive as null.
  return JSON.parse(text.trim().split("\n").at(-1)!, (_, v) => v === null ? NaN : v);
}

/** Which argument the NPU path must refuse in `scenario` on `soc`, or undefined (it runs). */
function refusal(soc: string, scenario: string): string | undefined {
  const family = socFamily(soc)!;
  const supported = (op: SocOperator) =>
    family.name === "Ascend310B"
      ? false
      : family.name === "Ascend310P"
      ? op === "aclnnBatchNorm" || op === "aclnnGroupNorm"
      : true;
  const op = (name: SocOperator) => supported(name) ? undefined : "device";
  const bf16 = (name: SocOperator, argument: string) =>
    op(name) ?? (bf16Allowed(name, family) ? undefined : argument);
  const regbase = family.npuArch === 3510;
  switch (scenario) {
    case "batchNorm bf16":
      return bf16("aclnnBatchNorm", "input");
    case "batchNormStats bf16":
      return bf16("aclnnBatchNormStats", "input");
    case "batchNormElemt bf16":
      return bf16("aclnnBatchNormElemt", "input");
    case "groupNormBackward mixed fp16/fp32":
      return op("aclnnGroupNormBackward") ?? (regbase ? undefined : "mean");
    case "groupNormBackward C/group > 8000":
      return op("aclnnGroupNormBackward") ?? (family.npuArch === 2201 ? "group" : undefined);
    case "batchNorm -> batchNormBackward":
    case "batchNormBackward without saveInvstd":
    case "empty batch: batchNormBackward":
      return op("aclnnBatchNormBackward");
    case "batchNormStats f32":
    case "empty batch: batchNormStats":
      return op("aclnnBatchNormStats");
    case "gatherStats runningMean only":
    case "gatherStats runningVar only":
    case "empty batch: gatherStats with no rank":
      return op("aclnnBatchNormGatherStatsWithCounts");
    case "empty batch: batchNormReduceBackward":
      return op("aclnnBatchNormReduceBackward");
    case "empty batch: groupNormBackward":
      return op("aclnnGroupNormBackward");
    case "empty batch: batchNormElemtBackward":
      return op("aclnnBatchNormElemtBackward");
    default:
      return undefined;
  }
}

const SOCS = [
  "Ascend910A",
  "Ascend910B4",
  "Ascend910_9391",
  "Ascend310P3",
  "Ascend950PR_9599",
  "Ascend350_354f",
];

for (const soc of SOCS) {
  Deno.test(`soc ${soc}: the NPU path equals the CPU backend or refuses as the chip does`, async () => {
    const report = await runOn(soc);
    assert.equal(report.soc, soc);
    for (const [scenario, { cpu, npu }] of Object.entries(report.results)) {
      assert.ok("values" in cpu, `${scenario}: the CPU backend failed: ${JSON.stringify(cpu)}`);
      const refused = refusal(soc, scenario);
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
      const tolerance = /bf16/.test(scenario)
        ? { rtol: 1.6e-2, atol: 1.6e-2 }
        : /fp16/.test(scenario)
        ? { rtol: 2e-3, atol: 2e-3 }
        : { rtol: 2e-5, atol: 2e-5 };
      assert.equal(npu.values.length, cpu.values.length);
      npu.values.forEach((v, i) => assertClose(v, cpu.values[i], tolerance, `${scenario} #${i}`));
    }
  });
}

Deno.test("soc: empty batches give the documented values on the CPU backend", async () => {
  const { results } = await runOn("Ascend950PR_9599");
  const cpu = (name: string) => (results[name].cpu as { values: number[][] }).values;
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
