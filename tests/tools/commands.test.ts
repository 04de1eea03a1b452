/**
 * Every command is polite: `--help` prints its usage and exits 0; an unknown flag or a bad value
 * prints one line naming it on stderr and exits 2, with no stack trace. The scripts run as the
 * tasks run them (`deno run <script>`), stopping at argument parsing.
 *
 * @module
 */

import assert from "node:assert/strict";

const root = new URL("../../", import.meta.url);

/** [script, a bad invocation] of every task and example that takes flags. */
const COMMANDS: readonly [string, string[]][] = [
  ["scripts/demo.ts", ["--shape", "0x3"]],
  ["scripts/doctor.ts", ["--bogus"]],
  ["scripts/verify_npu.ts", ["--bogus"]],
  ["bench/cpu_compare.ts", ["--dtypes", "float64"]],
  ["bench/norm_compare.ts", ["--rounds", "x"]],
  ["bench/compare.ts", ["--runs", "x"]],
  ["bench/dispatch.ts", ["--calls", "-1"]],
  ["bench/sync_bn_hccl.ts", ["--ranks", "3"]],
  ["bench/training_loop.ts", ["--style", "async"]],
  ["bench/float16_floor.ts", ["--bogus"]],
  ["bench/wasm_fp16.ts", ["--bogus"]],
  ["scripts/build_wasm.ts", ["--bogus"]],
  ["scripts/build_sim.ts", ["--bogus"]],
  ["bench/soak.ts", ["--bogus"]],
  ["bench/npu_soak.ts", ["--bogus"]],
  ["examples/gradient_check.ts", ["--bogus"]],
  ["examples/sync_batch_norm.ts", ["--bogus"]],
  ["examples/training_loop.ts", ["--bogus"]],
  ["examples/transformer_norms.ts", ["--bogus"]],
  ["examples/sync_batch_norm_hccl.ts", ["--dtype", "int8"]],
];

async function run(script: string, args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", new URL(script, root).pathname, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  // Deno colours its output only on a terminal; these pipes get plain text.
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

for (const [script, bad] of COMMANDS) {
  Deno.test(`commands: ${script} answers --help and refuses ${bad.join(" ")} in one line`, async () => {
    const help = await run(script, ["--help"]);
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^(usage: )?deno (task|run)/m, "prints its usage");
    const refused = await run(script, bad);
    assert.equal(refused.code, 2, `${refused.stdout}\n${refused.stderr}`);
    const lines = refused.stderr.trim().split("\n");
    assert.equal(lines.length, 1, `one line: ${refused.stderr}`);
    assert.doesNotMatch(refused.stderr, /^\s+at /m, "no stack trace");
  });
}

Deno.test("commands: a bad environment value is named in one line, no stack trace", async () => {
  for (
    const [name, value] of [
      ["ACLNN_NORM_BACKEND", "gpu"],
      ["ACLNN_NORM_THREADS", "abc"],
      ["ACLNN_NORM_HOST_HEAP_MB", "-5"],
    ]
  ) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", new URL("scripts/demo.ts", root).pathname],
      env: { [name]: value },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 1, `${name}=${value}: ${stderr}`);
    assert.equal(stderr.trim().split("\n").length, 1, `one line: ${stderr}`);
    assert.match(stderr, new RegExp(`${name}.*${value.replace("-", "\\-")}|${value}.*${name}`));
  }
});
