/**
 * Mistakes in the environment end in one line that names the variable and what it may be, as
 * the tasks run them (issue 38 D20): `ACLNN_NORM_BACKEND=npu` without CANN lists the paths
 * tried (the line ended at "Tried, in order:"), as `example:syncbn` does; an
 * `ACLNN_NORM_LIB_DIR` that names a missing directory is an error naming it (auto mode fell back
 * to the CPU with exit 0, though only that directory is tried); `ACLNN_NORM_BACKEND=gpu` is a
 * bad value (RangeError, exit 1), not a library error (`[ACL_LIBRARY_ERROR 0]`).
 *
 * The children run without the environment of this process (no CANN variables), so discovery
 * finds nothing on a machine without CANN; on one with an NPU the cases that need its absence
 * return early.
 *
 * @module
 */

import assert from "node:assert/strict";
import { selectDefaultDevice } from "../../src/backends/default_device.ts";

const root = new URL("../../", import.meta.url);

/** Runs `script` as its task does, with only `env` (and what deno needs) in the environment. */
async function run(script: string, args: string[], env: Record<string, string>) {
  const keep = ["HOME", "PATH", "DENO_DIR", "XDG_CACHE_HOME"];
  const base = Object.fromEntries(
    keep.flatMap((k) => (Deno.env.get(k) === undefined ? [] : [[k, Deno.env.get(k)!]])),
  );
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-ffi",
      "--allow-env",
      "--allow-read",
      "--allow-run",
      "--allow-net=127.0.0.1",
      new URL(script, root).pathname,
      ...args,
    ],
    clearEnv: true,
    env: { ...base, NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr).trim() };
}

const SMALL = ["--shape", "2,4,2,2", "--groups", "2", "--repeat", "1"];

/** Asserts one line on stderr and returns it. */
function oneLine(stderr: string): string {
  assert.equal(stderr.split("\n").length, 1, `one line: ${stderr}`);
  assert.doesNotMatch(stderr, /^\s+at /m, "no stack trace");
  return stderr;
}

Deno.test("environment: ACLNN_NORM_BACKEND=npu without CANN lists the paths tried in one line", async () => {
  const r = await run("scripts/demo.ts", SMALL, { ACLNN_NORM_BACKEND: "npu" });
  if (r.code === 0) return; // an NPU opened
  assert.equal(r.code, 1, r.stderr);
  const line = oneLine(r.stderr);
  assert.match(line, /^demo: Could not open the CANN libraries\. Tried, in order: \S/);
  assert.match(line, /\$ACLNN_NORM_LIB_DIR: skipped \(ACLNN_NORM_LIB_DIR is not set\); /);
  assert.match(line, /default install root: \/usr\/local\/Ascend\/\S+libacl_rt\.so: /);
  assert.match(line, /Install CANN and `source <install root>\/set_env\.sh`/);
});

Deno.test("environment: example:syncbn without CANN lists the paths tried in one line", async () => {
  const r = await run("examples/sync_batch_norm_hccl.ts", [], {});
  if (r.code === 0) return; // NPUs with HCCL
  assert.equal(r.code, 2, r.stderr);
  const line = oneLine(r.stderr);
  assert.match(line, /^No CANN libraries found \(tried: \$ACLNN_NORM_LIB_DIR: skipped /);
  assert.match(line, /\/usr\/local\/Ascend\/\S+libacl_rt\.so: /);
  assert.match(line, /deno task example:syncbn:sim -- --ranks 2$/);
});

Deno.test("environment: ACLNN_NORM_LIB_DIR naming a missing directory is an error naming it", async () => {
  const dir = "/nonexistent/aclnn-norm-cann";
  const r = await run("scripts/demo.ts", SMALL, { ACLNN_NORM_LIB_DIR: dir });
  assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
  assert.doesNotMatch(r.stdout, /^backend:/m, "no fallback to the CPU");
  const line = oneLine(r.stderr);
  assert.match(line, new RegExp(`^demo: \\$ACLNN_NORM_LIB_DIR ${dir} does not exist\\. `));
  // In the library as in the task: the auto mode does not fall back.
  const saved = Deno.env.get("ACLNN_NORM_LIB_DIR");
  Deno.env.set("ACLNN_NORM_LIB_DIR", dir);
  try {
    assert.throws(() => selectDefaultDevice(), /\$ACLNN_NORM_LIB_DIR \/nonexistent\/\S+ does not/);
    assert.throws(() => selectDefaultDevice({ libDir: dir }), /libDir \/nonexistent\/\S+ does not/);
    assert.equal(selectDefaultDevice({ backend: "cpu" }).device, "cpu");
  } finally {
    if (saved === undefined) Deno.env.delete("ACLNN_NORM_LIB_DIR");
    else Deno.env.set("ACLNN_NORM_LIB_DIR", saved);
  }
});

Deno.test("environment: ACLNN_NORM_BACKEND=gpu is a bad value naming the valid ones", async () => {
  const r = await run("scripts/demo.ts", SMALL, { ACLNN_NORM_BACKEND: "gpu" });
  assert.equal(r.code, 1, r.stderr);
  assert.equal(
    oneLine(r.stderr),
    'demo: $ACLNN_NORM_BACKEND is "gpu", which is not a backend: use one of "auto", "cpu", "npu"',
  );
});
