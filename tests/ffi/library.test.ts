/**
 * Library discovery, each case in a child process (nothing loaded yet, a controlled
 * environment):
 * - without an explicit directory, the error lists every location tried or skipped, in order;
 * - an explicit libDir / $ACLNN_NORM_LIB_DIR that is missing, relative, empty or incomplete is
 *   an error naming it, never silently replaced;
 * - the simulator, built without RPATH like CANN, opens because each library's in-directory
 *   DT_NEEDED entries are opened first (libopapi_math.so before libopapi_nn.so);
 * - a truncated .so is refused before dlopen (no SIGBUS), naming the file;
 * - relative environment paths and the loader path are never used unless opted in;
 * - a fake toolkit tree laid out like a real install (versioned dir, `latest` and `lib64`
 *   symlinks, opp/ beside lib64, set_env.sh) opens, and ASCEND_OPP_PATH is derived lexically.
 * Needs the built simulator (`deno task build:sim`).
 */

import assert from "node:assert/strict";
import { AclError } from "../../src/errors.ts";
import { describeLibraries, openCannLibraries } from "../../src/ffi/library.ts";
import { permissionError } from "../../src/errors.ts";
import { SIM_DIR, simEnv } from "../helpers/ffi_sim.ts";

const CHILD = new URL("../fixtures/ffi_open_child.ts", import.meta.url).pathname;
const SIM_LIBS = [
  "libaclsim_core.so",
  "libacl_rt.so",
  "libascendcl.so",
  "libnnopbase.so",
  "libopapi_nn.so",
  "libopapi_math.so",
  "libopapi.so",
];

interface ChildResult {
  ok: boolean;
  name?: string;
  code?: number;
  message?: string;
  libraries?: string[];
  dependencies?: string[];
  dir?: string;
  resolvedDir?: string;
  opp?: string | null;
  sumDy?: number[];
}

/** The variables a child keeps from this process (no ASCEND_* ones, no LD_LIBRARY_PATH). */
function baseEnv(): Record<string, string> {
  const keep: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME", "NO_COLOR"]) {
    const v = Deno.env.get(name);
    if (v !== undefined) keep[name] = v;
  }
  return keep;
}

/** Runs the child with a clean environment plus `env`, and the given permission flags. */
async function runChild(
  flags: string[],
  libDir: string,
  env: Record<string, string> = {},
  cwd?: string,
): Promise<ChildResult> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--quiet", ...flags, CHILD, libDir],
    clearEnv: true,
    env: { ...baseEnv(), ...env },
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.ok(
    text.length > 0,
    `child printed nothing (exit ${out.code}, signal ${out.signal}): ${stderr}`,
  );
  return JSON.parse(text.split("\n").at(-1)!);
}

const ALL = ["--allow-ffi", "--allow-env", "--allow-read"];

async function tempDir(): Promise<string> {
  await Deno.mkdir("build", { recursive: true });
  return Deno.realPathSync(await Deno.makeTempDir({ dir: "build", prefix: "ffi-test-" }));
}

async function copySim(dir: string, files = SIM_LIBS): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  for (const f of files) await Deno.copyFile(`${SIM_DIR}/${f}`, `${dir}/${f}`);
}

function assertInOrder(text: string, expected: readonly string[]): void {
  let at = -1;
  for (const e of expected) {
    const i = text.indexOf(e, at + 1);
    assert.ok(i > at, `"${e}" missing or out of order in:\n${text}`);
    at = i;
  }
}

Deno.test("discovery: without an explicit directory, every location is listed in order", async () => {
  const r = await runChild(ALL, "", { ASCEND_HOME_PATH: "relative/dir" });
  assert.equal(r.ok, false);
  assert.equal(r.name, "AclError");
  assert.equal(r.code, 0);
  assertInOrder(r.message!, [
    "$ACLNN_NORM_LIB_DIR: skipped (ACLNN_NORM_LIB_DIR is not set)",
    "$ASCEND_HOME_PATH/lib64: skipped (ASCEND_HOME_PATH=relative/dir is not an absolute path",
    "$ASCEND_TOOLKIT_HOME/lib64: skipped (ASCEND_TOOLKIT_HOME is not set)",
    "/usr/local/Ascend/cann/lib64/libacl_rt.so: ",
    "/usr/local/Ascend/cann/lib64/libascendcl.so: ",
    "/usr/local/Ascend/ascend-toolkit/latest/lib64/libacl_rt.so: ",
    "loader path (LD_LIBRARY_PATH, ld.so.cache): skipped (off by default; opt in",
    "set_env.sh",
  ]);
  assert.match(r.message!, /No such file or directory/);
  assert.match(r.message!, /libDir/);
});

Deno.test("discovery: an explicit libDir that is wrong is named and never replaced", async () => {
  const empty = await tempDir();
  try {
    // A working $ACLNN_NORM_LIB_DIR must not stand in for a wrong libDir.
    const env = { ACLNN_NORM_LIB_DIR: SIM_DIR, ASCEND_OPP_PATH: SIM_DIR };
    const cases: [string, RegExp][] = [
      ["/nonexistent/bogus-lib-dir", /libDir \/nonexistent\/bogus-lib-dir does not exist/],
      ["build/sim", /libDir build\/sim is not an absolute path/],
      [empty, new RegExp(`libDir ${empty} holds neither libacl_rt.so nor libascendcl.so`)],
      [`${SIM_DIR}/libacl_rt.so`, /is not a directory/],
    ];
    for (const [libDir, message] of cases) {
      const r = await runChild(ALL, libDir, env);
      assert.equal(r.ok, false, libDir);
      assert.equal(r.name, "AclError");
      assert.match(r.message!, message);
      assert.ok(!r.message!.includes("default install root"), r.message);
    }
    // The same rules for the environment variable.
    const r = await runChild(ALL, "", { ACLNN_NORM_LIB_DIR: "." });
    assert.equal(r.ok, false);
    assert.match(r.message!, /\$ACLNN_NORM_LIB_DIR \. is not an absolute path/);
  } finally {
    await Deno.remove(empty, { recursive: true });
  }
});

Deno.test("discovery: an incomplete directory reports what opened and what is missing", async () => {
  const dir = await tempDir();
  try {
    await copySim(dir, ["libaclsim_core.so", "libacl_rt.so"]);
    const r = await runChild(ALL, dir);
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

Deno.test("discovery: without --allow-read the error names the flag", async () => {
  const r = await runChild(["--allow-env", "--allow-ffi"], SIM_DIR);
  assert.equal(r.ok, false);
  assert.equal(r.name, "AclError");
  assert.match(r.message!, /--allow-read/);
});

Deno.test("discovery: without --allow-env (and no libDir) the error names the flag", async () => {
  const r = await runChild(["--allow-ffi", "--allow-read"], "");
  assert.equal(r.ok, false);
  assert.match(r.message!, /--allow-env/);
});

Deno.test("discovery: a path-scoped --allow-ffi gets an AclError saying what to grant", async () => {
  for (const dir of [SIM_DIR, "/usr/lib"]) {
    const r = await runChild([`--allow-ffi=${dir}`, "--allow-env", "--allow-read"], SIM_DIR, {
      ASCEND_OPP_PATH: SIM_DIR,
    });
    assert.equal(r.ok, false);
    assert.equal(r.name, "AclError");
    assert.match(r.message!, /needs the --allow-ffi permission without a path/);
    assert.match(r.message!, /Run deno with --allow-ffi\./);
  }
});

Deno.test("discovery: dependencies in the directory are opened first (no RPATH needed)", async () => {
  const r = await runChild(ALL, SIM_DIR, { ASCEND_OPP_PATH: SIM_DIR });
  assert.equal(r.ok, true, r.message);
  assert.deepEqual(r.libraries, [
    `${SIM_DIR}/libacl_rt.so`,
    `${SIM_DIR}/libnnopbase.so`,
    `${SIM_DIR}/libopapi_math.so`,
    `${SIM_DIR}/libopapi_nn.so`,
  ]);
  assert.deepEqual(r.dependencies, [`${SIM_DIR}/libaclsim_core.so`]);
  assert.deepEqual(r.sumDy, [4, 4]);
});

Deno.test("discovery: a truncated library is refused before dlopen, naming the file", async () => {
  const dir = await tempDir();
  try {
    await copySim(dir);
    const path = `${dir}/libnnopbase.so`;
    const bytes = await Deno.readFile(path);
    await Deno.writeFile(path, bytes.subarray(0, Math.floor(bytes.length / 2)));
    const r = await runChild(ALL, dir);
    assert.equal(r.ok, false);
    assert.equal(r.name, "AclError");
    assert.match(r.message!, new RegExp(`${path}: is truncated: .* \\(not loaded\\)`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("discovery: nothing is loaded from the working directory or relative paths", async () => {
  const dir = await tempDir();
  try {
    // A planted library set in the working directory (and on a relative LD_LIBRARY_PATH).
    await copySim(dir);
    const planted: Record<string, string>[] = [
      { ASCEND_HOME_PATH: "." },
      { ASCEND_TOOLKIT_HOME: "./" },
      { LD_LIBRARY_PATH: ":." },
      { LD_LIBRARY_PATH: "" },
    ];
    for (const env of planted) {
      const r = await runChild(ALL, "", env, dir);
      assert.equal(r.ok, false, JSON.stringify(env));
      assert.ok(!r.message!.includes(`${dir}/`), r.message);
    }
    // The loader path is opt-in; when asked for, the loader (not this library) decides.
    const r = await runChild(ALL, "", { ACLNN_NORM_USE_LOADER_PATH: "1" }, dir);
    assert.equal(r.ok, false);
    assert.match(r.message!, /loader path \(LD_LIBRARY_PATH, ld\.so\.cache\):\n\s+libacl_rt\.so: /);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
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
  assert.equal(report.dir, SIM_DIR);
  assert.equal(report.resolvedDir, Deno.realPathSync(SIM_DIR));
  assert.deepEqual(report.libraries.map((l) => l.role), [
    "runtime",
    "nnopbase",
    "opapi_math",
    "opapi_nn",
  ]);
  assert.ok(report.libraries[0].path.endsWith("/libacl_rt.so"));
  for (const lib of report.libraries) assert.deepEqual(lib.missingOptional, []);
});

Deno.test("discovery: the older layout (libascendcl.so + libopapi.so) is used when alone", async () => {
  const dir = await tempDir();
  try {
    await copySim(dir, ["libaclsim_core.so", "libascendcl.so", "libnnopbase.so", "libopapi.so"]);
    const report = describeLibraries({ libDir: dir });
    assert.equal(report.found, true, report.error);
    assert.deepEqual(report.libraries.map((l) => [l.role, l.path.split("/").at(-1)]), [
      ["runtime", "libascendcl.so"],
      ["nnopbase", "libnnopbase.so"],
      ["opapi", "libopapi.so"],
    ]);
    const failed = report.attempts.filter((a) => a.error).map((a) => a.path.split("/").at(-1));
    assert.deepEqual(failed, ["libacl_rt.so", "libopapi_math.so"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * A toolkit laid out like CANN 8.0's: `<root>/ascend-toolkit/{latest -> 8.0.0, set_env.sh}`,
 * `8.0.0/x86_64-linux/lib64/` holding the libraries, `8.0.0/x86_64-linux/data/platform_config/`
 * the platform files, `8.0.0/lib64 -> x86_64-linux/lib64`, and `8.0.0/opp/` beside the lib64
 * symlink.
 */
async function fakeToolkit(): Promise<
  { root: string; home: string; cleanup: () => Promise<void> }
> {
  const root = await tempDir();
  const toolkit = `${root}/ascend-toolkit`;
  const version = `${toolkit}/8.0.0`;
  await copySim(`${version}/x86_64-linux/lib64`);
  // The platform files beside lib64, where CANN installs them (hicann/runtime cmake/package.cmake)
  // and where its platform library (and the software CANN) looks for them.
  const platform = `${version}/x86_64-linux/data/platform_config`;
  await Deno.mkdir(platform, { recursive: true });
  for (const f of Deno.readDirSync(`${SIM_DIR}/../data/platform_config`)) {
    await Deno.copyFile(`${SIM_DIR}/../data/platform_config/${f.name}`, `${platform}/${f.name}`);
  }
  // `ln -s`: Deno.symlink needs unscoped --allow-write, which the test task does not grant.
  const link = async (target: string, path: string) => {
    const { code } = await new Deno.Command("ln", { args: ["-s", target, path] }).output();
    assert.equal(code, 0, `ln -s ${target} ${path}`);
  };
  await link("x86_64-linux/lib64", `${version}/lib64`);
  await Deno.mkdir(`${version}/opp/built-in`, { recursive: true });
  await link("8.0.0", `${toolkit}/latest`);
  const home = `${toolkit}/latest`;
  await Deno.writeTextFile(
    `${toolkit}/set_env.sh`,
    [
      `export ASCEND_TOOLKIT_HOME=${home}`,
      `export ASCEND_HOME_PATH=${home}`,
      `export ASCEND_OPP_PATH=${home}/opp`,
      `export LD_LIBRARY_PATH=${home}/lib64:${home}/lib64/plugin/opskernel:$LD_LIBRARY_PATH`,
      "",
    ].join("\n"),
  );
  return { root, home, cleanup: () => Deno.remove(root, { recursive: true }) };
}

Deno.test("discovery: a fake toolkit tree opens from $ASCEND_TOOLKIT_HOME alone", async () => {
  const { home, cleanup } = await fakeToolkit();
  try {
    const r = await runChild(ALL, "", { ASCEND_TOOLKIT_HOME: home });
    assert.equal(r.ok, true, r.message);
    assert.equal(r.dir, `${home}/lib64`);
    assert.equal(r.resolvedDir, Deno.realPathSync(`${home}/lib64`));
    assert.ok(r.resolvedDir!.endsWith("/8.0.0/x86_64-linux/lib64"));
    // Lexical, as set_env.sh does: <toolkit>/opp, not <toolkit>/x86_64-linux/opp.
    assert.equal(r.opp, `${home}/opp`);
    assert.deepEqual(r.sumDy, [4, 4]);
  } finally {
    await cleanup();
  }
});

Deno.test("discovery: a fake toolkit tree opens after `source set_env.sh`", async () => {
  const { root, cleanup } = await fakeToolkit();
  try {
    const script = `source ${root}/ascend-toolkit/set_env.sh && exec "$0" run --no-prompt ` +
      `--quiet --allow-ffi --allow-env --allow-read ${CHILD}`;
    const out = await new Deno.Command("bash", {
      args: ["-c", script, Deno.execPath()],
      clearEnv: true,
      env: baseEnv(),
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout).trim();
    const r: ChildResult = JSON.parse(text.split("\n").at(-1)!);
    assert.equal(r.ok, true, r.message);
    assert.equal(r.opp, `${root}/ascend-toolkit/latest/opp`);
    assert.deepEqual(r.sumDy, [4, 4]);
  } finally {
    await cleanup();
  }
});
