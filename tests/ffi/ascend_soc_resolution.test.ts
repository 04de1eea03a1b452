/**
 * Placing a SoC name in a family without guessing: the table, else the chip's platform file
 * (found where CANN's platform library looks, relative to the real path of the libraries), else
 * ACLNN_NORM_SOC_FAMILY, else a refusal naming the SoC, every file tried and the fix. Runs on
 * platform files written to a temporary CANN-like tree (no native library needed).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  findPlatformVersion,
  platformConfigDirs,
  versionSection,
} from "../../src/backends/ascend/platform_ini.ts";
import { resolveSocFamily, SOC_FAMILY_ENV } from "../../src/backends/ascend/device_soc.ts";
import { batchNormSavesVariance, familyFromPlatform } from "../../src/backends/ascend/soc.ts";

/** A toolkit tree: `<root>/x86_64-linux/{lib64,data/platform_config}` and `<root>/lib64` -> it. */
function toolkit(inis: Record<string, string>): { root: string; libDir: string } {
  const build = new URL("../../build/", import.meta.url).pathname;
  Deno.mkdirSync(build, { recursive: true });
  const root = Deno.makeTempDirSync({ dir: build, prefix: "soc_tree_" });
  const arch = `${root}/x86_64-linux`;
  Deno.mkdirSync(`${arch}/lib64`, { recursive: true });
  Deno.mkdirSync(`${arch}/data/platform_config`, { recursive: true });
  // `ln`, since Deno.symlinkSync needs an unscoped --allow-write (the suite has build/ only).
  const ln = new Deno.Command("ln", { args: ["-s", `${arch}/lib64`, `${root}/lib64`] })
    .outputSync();
  if (!ln.success) throw new Error(new TextDecoder().decode(ln.stderr));
  for (const [name, text] of Object.entries(inis)) {
    Deno.writeTextFileSync(`${arch}/data/platform_config/${name}.ini`, text);
  }
  return { root, libDir: `${root}/lib64` };
}

/** The [version] section of hicann/runtime's cann-dev/Ascend910_9599.ini at 494dda3. */
const OLD_950 = [
  "# [Platform Info configuration begin]",
  "[version]",
  "SoC_version=Ascend910_9599",
  "Short_SoC_version=Ascend910_95",
  "AIC_version=AIC-C-310",
  "NpuArch=3510",
  "[SoCInfo]",
  "Short_SoC_version=NotThisOne",
].join("\n");

Deno.test("platform ini: the [version] section only, comments skipped", () => {
  const v = versionSection(OLD_950);
  assert.equal(v.get("Short_SoC_version"), "Ascend910_95");
  assert.equal(v.get("NpuArch"), "3510");
  assert.equal(v.get("SoC_version"), "Ascend910_9599");
});

Deno.test("platform ini: found beside the real path of the libraries, as CANN looks", () => {
  const { root, libDir } = toolkit({ Ascend910_9599: OLD_950 });
  try {
    const dirs = platformConfigDirs(libDir);
    assert.equal(dirs[0], `${Deno.realPathSync(root)}/x86_64-linux/data/platform_config`);
    const search = findPlatformVersion("Ascend910_9599", libDir);
    assert.equal(search.found?.shortSocVersion, "Ascend910_95");
    assert.equal(search.found?.npuArch, 3510);
    const missing = findPlatformVersion("Ascend999", libDir);
    assert.equal(missing.found, undefined);
    assert.match(missing.tried[0], /Ascend999\.ini \(not found\)/);
    // Not a file name: nothing is read.
    assert.equal(findPlatformVersion("../../etc/passwd", libDir).found, undefined);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("soc: Ascend910_9599 (the 950's pre-2026 name) is a 950 by its platform file", () => {
  const { root, libDir } = toolkit({ Ascend910_9599: OLD_950 });
  try {
    const r = resolveSocFamily("Ascend910_9599", libDir);
    assert.equal(r.family?.name, "Ascend950");
    assert.match(r.source, /platform file .*Ascend910_9599\.ini$/);
    assert.equal(batchNormSavesVariance(r.family!), false);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("soc: the platform file's NpuArch is kept; a short version of no family places nothing", () => {
  assert.equal(familyFromPlatform("Ascend910B", 2201)?.name, "Ascend910B");
  assert.equal(familyFromPlatform("Ascend910B", 3510)?.npuArch, 3510);
  assert.equal(familyFromPlatform("Ascend910E", 2201), undefined);
  assert.equal(familyFromPlatform(undefined, 2201), undefined);
  const { root, libDir } = toolkit({
    AscendNew1: "[version]\nSoC_version=AscendNew1\nShort_SoC_version=AscendNew\nNpuArch=9999\n",
  });
  try {
    const r = resolveSocFamily("AscendNew1", libDir);
    assert.equal(r.family, undefined);
    assert.match(r.source, /Short_SoC_version=AscendNew, which is no family/);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("soc: ACLNN_NORM_SOC_FAMILY places what nothing else does, and a bad value is named", () => {
  const before = Deno.env.get(SOC_FAMILY_ENV);
  try {
    Deno.env.delete(SOC_FAMILY_ENV);
    assert.equal(resolveSocFamily("Ascend999", null).family, undefined);
    assert.equal(resolveSocFamily(null, null).family, undefined);
    Deno.env.set(SOC_FAMILY_ENV, "Ascend910B");
    assert.equal(resolveSocFamily("Ascend999", null).family?.name, "Ascend910B");
    assert.equal(resolveSocFamily("Ascend999", null).source, SOC_FAMILY_ENV);
    // The table wins over the variable.
    assert.equal(resolveSocFamily("Ascend950PR_9599", null).family?.name, "Ascend950");
    Deno.env.set(SOC_FAMILY_ENV, "Ascend910_95");
    assert.equal(resolveSocFamily("Ascend999", null).family?.name, "Ascend950");
    Deno.env.set(SOC_FAMILY_ENV, "Ascend123");
    assert.throws(
      () => resolveSocFamily("Ascend999", null),
      (e: Error & { code?: number }) =>
        e.code === 161002 && /ACLNN_NORM_SOC_FAMILY=Ascend123 names no SoC family/.test(e.message),
    );
  } finally {
    if (before === undefined) Deno.env.delete(SOC_FAMILY_ENV);
    else Deno.env.set(SOC_FAMILY_ENV, before);
  }
});
