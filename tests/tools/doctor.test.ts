/**
 * `deno task doctor` (scripts/doctor.ts): reports where the libraries were found and the
 * directory they resolve to, every path tried, and why a location was not tried.
 */

import assert from "node:assert/strict";
import { SIM_DIR } from "../helpers/ffi_sim.ts";

const DOCTOR = new URL("../../scripts/doctor.ts", import.meta.url).pathname;

async function doctor(args: string[], env: Record<string, string>) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-ffi", "--allow-env", "--allow-read", DOCTOR, ...args],
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

Deno.test("doctor: a symlinked library directory is reported with where it resolves", async () => {
  const link = `${SIM_DIR}/../doctor-link`;
  try {
    Deno.removeSync(link);
  } catch { /* not there */ }
  // `ln`: Deno.symlinkSync needs unscoped --allow-write, which the test task does not grant.
  const ln = new Deno.Command("ln", { args: ["-s", SIM_DIR, link] }).outputSync();
  assert.equal(ln.code, 0, new TextDecoder().decode(ln.stderr));
  try {
    const linkPath = Deno.realPathSync(`${SIM_DIR}/..`) + "/doctor-link";
    const r = await doctor(["--lib-dir", linkPath], { ASCEND_OPP_PATH: SIM_DIR });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`found via libDir option in ${linkPath}\\n`));
    assert.match(r.stdout, new RegExp(`\\(resolved: ${Deno.realPathSync(SIM_DIR)}\\)`));
    assert.match(r.stdout, /Nothing missing\./);
  } finally {
    Deno.removeSync(link);
  }
});

Deno.test("doctor: relative environment paths are listed as ignored, never tried", async () => {
  const r = await doctor([], { ASCEND_HOME_PATH: "relative/x", ASCEND_TOOLKIT_HOME: "." });
  assert.match(r.stdout, /CANN libraries: NOT FOUND/);
  assert.match(r.stdout, /ASCEND_HOME_PATH=relative\/x is not an absolute path \(ignored\)/);
  assert.match(r.stdout, /ASCEND_TOOLKIT_HOME=\. is not an absolute path \(ignored\)/);
  assert.doesNotMatch(r.stdout, /\] relative\/x|\] \.\//, "no relative path is tried");
  assert.match(r.stdout, /loader path .* off by default/);
});
