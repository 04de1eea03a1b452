/**
 * Every command is polite: `--help` prints its usage and exits 0; an unknown flag or a bad value
 * prints one line naming it on stderr and exits 2, with no stack trace. The scripts run as the
 * tasks run them (`deno run <script>`), stopping at argument parsing.
 *
 * @module
 */

import assert from "node:assert/strict";
import denoJson from "../../deno.json" with { type: "json" };

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
  ["bench/training_step.ts", ["--model", "bogus"]],
  ["bench/wasm_fp16.ts", ["--bogus"]],
  ["bench/pixel_memory_ab.ts", ["--a", "a.ts", "--b", "b.ts", "--channels", "6"]],
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
    // Two processes at once (each spends most of its time loading the library).
    const [help, refused] = await Promise.all([run(script, ["--help"]), run(script, bad)]);
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^(usage: )?deno (task|run)/m, "prints its usage");
    assert.equal(refused.code, 2, `${refused.stdout}\n${refused.stderr}`);
    const lines = refused.stderr.trim().split("\n");
    assert.equal(lines.length, 1, `one line: ${refused.stderr}`);
    assert.doesNotMatch(refused.stderr, /^\s+at /m, "no stack trace");
  });
}

Deno.test("commands: a bad environment value is named in one line, no stack trace", async () => {
  const cases = [
    ["ACLNN_NORM_BACKEND", "gpu"],
    ["ACLNN_NORM_THREADS", "abc"],
    ["ACLNN_NORM_HOST_HEAP_MB", "-5"],
  ];
  // The three processes at once; each is checked below.
  const outs = await Promise.all(cases.map(([name, value]) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", new URL("scripts/demo.ts", root).pathname],
      env: { [name]: value },
      stdout: "piped",
      stderr: "piped",
    }).output()
  ));
  for (const [i, [name, value]] of cases.entries()) {
    const out = outs[i];
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 1, `${name}=${value}: ${stderr}`);
    assert.equal(stderr.trim().split("\n").length, 1, `one line: ${stderr}`);
    assert.match(stderr, new RegExp(`${name}.*${value.replace("-", "\\-")}|${value}.*${name}`));
  }
});

/** `deno task <name> <args>` in the repository, without colours. */
async function task(name: string, args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", name, ...args],
    cwd: root,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

Deno.test("commands: every task of deno.json answers --help with its own usage, running nothing", async () => {
  const names = Object.keys(denoJson.tasks);
  const problems: string[] = [];
  // A few at a time: each is a deno process.
  for (let i = 0; i < names.length; i += 4) {
    await Promise.all(
      names.slice(i, i + 4).map(async (name) => {
        const r = await task(name, ["--help"]);
        const own = new RegExp(`^(usage: )?deno task ${name.replaceAll(":", "\\:")}(\\s|$)`, "m");
        // deno task echoes each command it starts ("Task <name> ..."): only the task's own.
        const started = r.stderr.trim().split("\n").filter((l) => l !== "");
        if (r.code !== 0) problems.push(`${name}: exit ${r.code}`);
        else if (!own.test(r.stdout)) problems.push(`${name}: no usage of its own:\n${r.stdout}`);
        else if (r.stdout.trim().split("\n").length > 30) problems.push(`${name}: a long text`);
        else if (started.length !== 1 || !started[0].startsWith(`Task ${name} `)) {
          problems.push(`${name}: ran more than its usage:\n${r.stderr}`);
        }
      }),
    );
  }
  assert.deepEqual(problems, []);
});

Deno.test("commands: the build tasks run with no deno on PATH (they spawn this Deno)", async () => {
  // PATH without any directory that holds a `deno`: the tasks must not spawn "deno" by name.
  const path = "/usr/sbin:/usr/bin:/sbin:/bin";
  for (const dir of path.split(":")) {
    assert.ok(
      !(await Deno.stat(`${dir}/deno`).then(() => true, () => false)),
      `${dir} holds no deno`,
    );
  }
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "build:worker", "--check"],
    cwd: root.pathname,
    env: { PATH: path, NO_COLOR: "1" },
    clearEnv: true,
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, text);
});
