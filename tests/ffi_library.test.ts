/**
 * Library discovery: the error lists every path tried (in a child process, so nothing is
 * loaded yet), missing permissions name the flag, the preferred file names win, the older
 * layout (libascendcl.so + libopapi.so) works, and opened sets are cached.
 * Needs the built simulator (`deno task build:sim`).
 */

import assert from "node:assert/strict";
import { AclError } from "../src/ffi/errors.ts";
import { describeLibraries, openCannLibraries, permissionError } from "../src/ffi/library.ts";
import { SIM_DIR, simEnv } from "./helpers/ffi_sim.ts";

const CHILD = new URL("./fixtures/ffi_open_child.ts", import.meta.url).pathname;

interface ChildResult {
  ok: boolean;
  name?: string;
  code?: number;
  message?: string;
  libraries?: string[];
}

/** Runs the child with a clean environment (no ASCEND_* variables) and the given flags. */
async function runChild(
  flags: string[],
  libDir: string,
  env: Record<string, string> = {},
): Promise<ChildResult> {
  const keep: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME", "NO_COLOR"]) {
    const v = Deno.env.get(name);
    if (v !== undefined) keep[name] = v;
  }
  const out = await new Deno.Command("deno", {
    args: ["run", "--no-prompt", "--quiet", ...flags, CHILD, libDir],
    clearEnv: true,
    env: { ...keep, ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  assert.ok(text.length > 0, new TextDecoder().decode(out.stderr));
  return JSON.parse(text.split("\n").at(-1)!);
}

async function tempDir(): Promise<string> {
  await Deno.mkdir("build", { recursive: true });
  return await Deno.makeTempDir({ dir: "build", prefix: "ffi-test-" });
}

Deno.test("discovery: one AclError lists every path tried, in order, and what to set", async () => {
  const empty = await tempDir();
  try {
    const r = await runChild(
      ["--allow-ffi", "--allow-env", "--allow-read"],
      "/nonexistent/bogus-lib-dir",
      { ACLNN_NORM_LIB_DIR: empty },
    );
    assert.equal(r.ok, false);
    assert.equal(r.name, "AclError");
    assert.equal(r.code, 0);
    const msg = r.message!;
    const expected = [
      "/nonexistent/bogus-lib-dir/libacl_rt.so",
      "/nonexistent/bogus-lib-dir/libascendcl.so",
      `${empty}/libacl_rt.so`,
      `${empty}/libascendcl.so`,
      "$ASCEND_HOME_PATH/lib64: skipped (ASCEND_HOME_PATH is not set)",
      "$ASCEND_TOOLKIT_HOME/lib64: skipped (ASCEND_TOOLKIT_HOME is not set)",
      "/usr/local/Ascend/cann/lib64/libacl_rt.so",
      "/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so",
      "    libacl_rt.so: ",
      "    libascendcl.so: ",
    ];
    let at = -1;
    for (const e of expected) {
      const i = msg.indexOf(e);
      assert.ok(i > at, `"${e}" missing or out of order in:\n${msg}`);
      at = i;
    }
    assert.match(msg, /No such file or directory/);
    assert.match(msg, /set_env\.sh/);
    assert.match(msg, /libDir/);
    assert.match(msg, /ACLNN_NORM_LIB_DIR/);
  } finally {
    await Deno.remove(empty, { recursive: true });
  }
});

Deno.test("discovery: an incomplete directory reports what opened and what is missing", async () => {
  const dir = await tempDir();
  try {
    await Deno.copyFile(`${SIM_DIR}/libaclsim_core.so`, `${dir}/libaclsim_core.so`);
    await Deno.copyFile(`${SIM_DIR}/libacl_rt.so`, `${dir}/libacl_rt.so`);
    const r = await runChild(["--allow-ffi", "--allow-env", "--allow-read"], dir);
    assert.equal(r.ok, false);
    assert.ok(r.message!.includes(`${dir}/libacl_rt.so: opened (but the set is incomplete)`));
    assert.ok(r.message!.includes(`${dir}/libnnopbase.so: `), r.message);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("discovery: without --allow-ffi the error names the flag", async () => {
  const r = await runChild(["--allow-env", "--allow-read"], SIM_DIR);
  assert.equal(r.ok, false);
  assert.equal(r.name, "AclError");
  assert.match(r.message!, /--allow-ffi/);
});

Deno.test("discovery: without --allow-env (and no libDir) the error names the flag", async () => {
  const r = await runChild(["--allow-ffi", "--allow-read"], "");
  assert.equal(r.ok, false);
  assert.match(r.message!, /--allow-env/);
});

Deno.test("discovery: a child process opens the simulator by libDir", async () => {
  const r = await runChild(["--allow-ffi", "--allow-env", "--allow-read"], SIM_DIR, {
    ASCEND_OPP_PATH: SIM_DIR,
  });
  assert.equal(r.ok, true, r.message);
  assert.deepEqual(r.libraries, [
    `${SIM_DIR}/libacl_rt.so`,
    `${SIM_DIR}/libnnopbase.so`,
    `${SIM_DIR}/libopapi_nn.so`,
    `${SIM_DIR}/libopapi_math.so`,
  ]);
});

Deno.test("discovery: NotCapable maps to an AclError naming the flag", () => {
  const e = permissionError(new Deno.errors.NotCapable("Requires ffi access"), "--allow-ffi", "x");
  assert.ok(e instanceof AclError);
  assert.match(e.message, /needs the --allow-ffi permission/);
  const other = new Error("other");
  assert.equal(permissionError(other, "--allow-ffi", "x"), other);
});

Deno.test("discovery: preferred names, per-directory cache, report", () => {
  simEnv();
  const a = openCannLibraries({ libDir: SIM_DIR });
  const b = openCannLibraries({ libDir: `${SIM_DIR}/` });
  assert.equal(a, b, "cached per directory");
  const report = describeLibraries({ libDir: SIM_DIR });
  assert.equal(report.found, true);
  assert.deepEqual(report.libraries.map((l) => l.role), [
    "runtime",
    "nnopbase",
    "opapi_nn",
    "opapi_math",
  ]);
  assert.ok(report.libraries[0].path.endsWith("/libacl_rt.so"));
  for (const lib of report.libraries) assert.deepEqual(lib.missingOptional, []);
});

Deno.test("discovery: the older layout (libascendcl.so + libopapi.so) is used when alone", async () => {
  const dir = await tempDir();
  try {
    for (const f of ["libaclsim_core.so", "libascendcl.so", "libnnopbase.so", "libopapi.so"]) {
      await Deno.copyFile(`${SIM_DIR}/${f}`, `${dir}/${f}`);
    }
    const report = describeLibraries({ libDir: dir });
    assert.equal(report.found, true, report.error);
    assert.deepEqual(report.libraries.map((l) => [l.role, l.path.split("/").at(-1)]), [
      ["runtime", "libascendcl.so"],
      ["nnopbase", "libnnopbase.so"],
      ["opapi", "libopapi.so"],
    ]);
    const failed = report.attempts.filter((a) => a.error).map((a) => a.path.split("/").at(-1));
    assert.deepEqual(failed, ["libacl_rt.so", "libopapi_nn.so"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
