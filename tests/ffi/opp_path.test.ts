/**
 * ASCEND_OPP_PATH: set_env.sh points it at `<root>/opp` beside `<root>/lib64`, and aclnn
 * fails with 561107 without it. openAscend derives it from that layout when it is unset; the
 * software CANN is laid out the same way (build/sim + build/opp). Each case runs in a child
 * process whose environment has no ASCEND_OPP_PATH.
 *
 * @module
 */

import assert from "node:assert/strict";
import { SIM_DIR } from "../helpers/ffi_sim.ts";

const root = new URL("../..", import.meta.url).pathname;
const probe = `
import { batchNormReduceBackward, openAscend, Tensor } from "${root}mod.ts";
const libDir = Deno.args[0];
using npu = openAscend({ libDir });
const opp = Deno.env.get("ASCEND_OPP_PATH") ?? null;
const x = Tensor.random([4, 3], { seed: 1, device: npu });
try {
  batchNormReduceBackward({
    gradOut: x, input: x, mean: Tensor.zeros([3], "float32", npu), invstd: Tensor.ones([3], "float32", npu),
  });
  console.log(JSON.stringify({ opp, ok: true }));
} catch (e) {
  const err = e as { code?: number; nativeMessage?: string };
  console.log(JSON.stringify({ opp, ok: false, code: err.code, nativeMessage: err.nativeMessage }));
}
`;

async function run(libDir: string): Promise<Record<string, unknown>> {
  const env = { ...Deno.env.toObject() };
  delete env.ASCEND_OPP_PATH;
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", probe, libDir],
    env,
    clearEnv: true,
  }).output();
  const text = new TextDecoder().decode(stdout);
  assert.equal(code, 0, text + new TextDecoder().decode(stderr));
  return JSON.parse(text.trim().split("\n").at(-1)!);
}

Deno.test("opp path: derived from the <root>/opp sibling of the library directory", async () => {
  const result = await run(SIM_DIR);
  assert.equal(result.ok, true, JSON.stringify(result));
  assert.equal(result.opp, Deno.realPathSync(`${SIM_DIR}/../opp`));
});

Deno.test("opp path: without an opp sibling aclnn reports 561107 and its hint", async () => {
  const dir = await Deno.makeTempDir({ dir: `${root}build`, prefix: "opp-test-" });
  try {
    const lib64 = `${dir}/lib64`;
    await Deno.mkdir(lib64);
    for await (const entry of Deno.readDir(SIM_DIR)) {
      if (entry.name.endsWith(".so")) {
        await Deno.copyFile(`${SIM_DIR}/${entry.name}`, `${lib64}/${entry.name}`);
      }
    }
    const result = await run(lib64);
    assert.equal(result.opp, null);
    assert.equal(result.ok, false);
    assert.equal(result.code, 561107);
    assert.match(String(result.nativeMessage), /ASCEND_OPP_PATH/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
