/**
 * SoC-dependent outputs: on Atlas A2/A3 (SoC names Ascend910B*, Ascend910_93*) aclnnBatchNorm
 * writes Var(x) into saveInvstd; batchNorm() must still return invstd there. The software
 * CANN models both families through ACLSIM_SOC_NAME, set in a child process's environment.
 *
 * @module
 */

import assert from "node:assert/strict";
import { batchNormSavesVariance } from "../src/backends/ascend/soc.ts";
import { SIM_DIR } from "./helpers/ffi_sim.ts";

const root = new URL("..", import.meta.url).pathname;
const probe = `
import { arg, runAclnn } from "${root}src/ffi/executor.ts";
import { batchNorm, openAscend, Tensor } from "${root}mod.ts";
using npu = openAscend({ libDir: Deno.args[0] });
const x = Tensor.random([4, 3, 5], { seed: 7, distribution: "normal", low: 1, high: 2 });
const cpu = batchNorm({ input: x, training: true, momentum: 0.1, eps: 1e-5 });
const dev = batchNorm({ input: x.to(npu), training: true, momentum: 0.1, eps: 1e-5 });
// The raw native output, without the library's conversion.
const raw = Tensor.zeros([3], "float32", npu);
runAclnn(npu, "aclnnBatchNorm", [
  arg.tensor(x.to(npu)), arg.tensor(undefined), arg.tensor(undefined), arg.tensor(undefined),
  arg.tensor(undefined), arg.bool(true), arg.f64(0.1), arg.f64(1e-5),
  arg.tensor(Tensor.zeros([4, 3, 5], "float32", npu)), arg.tensor(Tensor.zeros([3], "float32", npu)),
  arg.tensor(raw),
]);
console.log(JSON.stringify({
  soc: npu.socName,
  cpuInvstd: cpu.saveInvstd.toArray(),
  devInvstd: dev.saveInvstd.toArray(),
  raw: raw.toArray(),
}));
`;

async function run(
  soc: string,
): Promise<{ soc: string; cpuInvstd: number[]; devInvstd: number[]; raw: number[] }> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", probe, SIM_DIR],
    env: { ACLSIM_SOC_NAME: soc },
  }).output();
  const text = new TextDecoder().decode(stdout);
  assert.equal(code, 0, text + new TextDecoder().decode(stderr));
  return JSON.parse(text.trim().split("\n").at(-1)!);
}

function assertNear(a: number[], b: number[], what: string): void {
  assert.equal(a.length, b.length);
  for (let i = 0; i < a.length; i++) {
    assert.ok(
      Math.abs(a[i] - b[i]) <= 1e-5 * Math.max(1, Math.abs(b[i])),
      `${what}[${i}]: ${a[i]} vs ${b[i]}`,
    );
  }
}

Deno.test("soc: every family but DAV_3510 stores the variance in saveInvstd", () => {
  for (const name of ["Ascend910B4", "Ascend910_9391", "Ascend910A", "Ascend910B", "Ascend310P3"]) {
    assert.equal(batchNormSavesVariance(name), true, name);
  }
  for (const name of ["Ascend950PR_9599", "Ascend950DT_9591", "Ascend350_354f"]) {
    assert.equal(batchNormSavesVariance(name), false, name);
  }
  // Unknown names: the pre-950 convention unless the name marks the 950/350 line.
  assert.equal(batchNormSavesVariance("Ascend910Z9"), true);
  assert.equal(batchNormSavesVariance("Ascend950XX_1"), false);
  assert.equal(batchNormSavesVariance(null), false);
});

Deno.test("soc: on Atlas A2 batchNorm converts the native variance to invstd", async () => {
  const r = await run("Ascend910B4");
  assert.equal(r.soc, "Ascend910B4");
  // The native output really is the variance here: 1/sqrt(raw + eps) is the CPU's invstd.
  assertNear(r.raw.map((v) => 1 / Math.sqrt(v + 1e-5)), r.cpuInvstd, "raw variance");
  assertNear(r.devInvstd, r.cpuInvstd, "saveInvstd");
});

Deno.test("soc: on Ascend 950 the native invstd is passed through", async () => {
  const r = await run("Ascend950PR_9599");
  assertNear(r.raw, r.cpuInvstd, "raw invstd");
  assertNear(r.devInvstd, r.cpuInvstd, "saveInvstd");
});
