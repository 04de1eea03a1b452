/**
 * The SoC family of an open device, found the way CANN finds it, and never guessed: the
 * operators' dtype rules and the meaning of BatchNorm's saveInvstd depend on it.
 *
 * 1. the SoC name (aclrtGetSocName) in this package's table ({@linkcode socFamily});
 * 2. else the chip's platform file, `<SoC name>.ini`: its `Short_SoC_version` and `NpuArch`
 *    (read as CANN's platform library reads them; see `platform_ini.ts`), e.g. an Ascend 950
 *    on a CANN release that still named it `Ascend910_9599` / `Ascend910_95`;
 * 3. else `ACLNN_NORM_SOC_FAMILY`, set by the user to a family name or Short_SoC_version;
 * 4. else every SoC-dependent operator refuses (161002) with a message that names the SoC,
 *    every platform file tried, and the fix.
 *
 * @module
 */

import { ACLNN_ERR_PARAM_INVALID, AclnnError } from "../../errors.ts";
import type { AscendDevice } from "../../ffi/runtime.ts";
import { grantedEnv } from "../../tensor/env.ts";
import { findPlatformVersion } from "./platform_ini.ts";
import { familyFromPlatform, SOC_FAMILIES, type SocFamily, socFamily } from "./soc.ts";

/** The environment variable that names the family of a SoC nothing else places. */
export const SOC_FAMILY_ENV = "ACLNN_NORM_SOC_FAMILY";

/** How a device's family was found, or why it was not. */
export interface SocResolution {
  /** The family, or undefined when nothing placed the SoC. */
  readonly family: SocFamily | undefined;
  /** `table`, `platform file <path>` or `ACLNN_NORM_SOC_FAMILY`; or why nothing placed it. */
  readonly source: string;
}

const resolutions = new WeakMap<AscendDevice, SocResolution>();

function knownFamilies(): string {
  return SOC_FAMILIES.map((f) => `${f.name} (${f.product})`).join(", ");
}

function fromEnvironment(): SocFamily | undefined {
  const value = grantedEnv(SOC_FAMILY_ENV)?.trim();
  if (!value) return undefined;
  const family = SOC_FAMILIES.find((f) => f.name === value) ??
    familyFromPlatform(value, undefined);
  if (!family) {
    throw new AclnnError(
      ACLNN_ERR_PARAM_INVALID,
      `${SOC_FAMILY_ENV}=${value} names no SoC family; use one of: ${knownFamilies()}`,
      { argument: SOC_FAMILY_ENV },
    );
  }
  return family;
}

/**
 * Resolves (uncached) the family of SoC `socName` for libraries loaded from `libDir`: the
 * table, else the platform file, else {@linkcode SOC_FAMILY_ENV}; `family` is undefined and
 * `source` says why when none places it.
 *
 * @example
 * ```ts
 * import { resolveSocFamily } from "@aclnn/norm/ascend";
 * const r = resolveSocFamily("Ascend910B4", null);
 * console.log(r.family?.name, r.source); // Ascend910B table
 * ```
 */
export function resolveSocFamily(socName: string | null, libDir: string | null): SocResolution {
  const listed = socFamily(socName);
  if (listed) return { family: listed, source: "table" };
  let why: string;
  if (socName === null) {
    why = "the runtime does not report a SoC name (no aclrtGetSocName)";
  } else {
    const search = findPlatformVersion(socName, libDir);
    const found = search.found;
    const family = found && familyFromPlatform(found.shortSocVersion, found.npuArch);
    if (family) return { family, source: `platform file ${found.file}` };
    why = found
      ? `its platform file ${found.file} gives Short_SoC_version=${
        found.shortSocVersion ?? "(none)"
      }, which is no family this package knows`
      : `no platform file was found (tried: ${search.tried.join("; ")})`;
  }
  const env = fromEnvironment();
  if (env) return { family: env, source: SOC_FAMILY_ENV };
  return { family: undefined, source: why };
}

/**
 * The family of `device`'s SoC (resolved once per device), or an AclnnError 161002 for `op`
 * that names the SoC, what was tried, and the fix.
 */
export function deviceSocFamily(device: AscendDevice, op: string): SocFamily {
  let r = resolutions.get(device);
  if (!r) {
    r = resolveSocFamily(device.socName, device.libDir);
    resolutions.set(device, r);
  }
  if (r.family) return r.family;
  const soc = device.socName === null ? "an unnamed SoC" : `SoC ${device.socName}`;
  throw new AclnnError(
    ACLNN_ERR_PARAM_INVALID,
    `${op}: device ${device.name} is ${soc}, whose family this package cannot place: it is not ` +
      `in the SoC table and ${r.source}. The family decides the operators' dtype rules and what ` +
      `BatchNorm's saveInvstd holds, so nothing runs on a guess. Fix: set ${SOC_FAMILY_ENV} to ` +
      `the chip's family (the Short_SoC_version of its platform ini; one of: ${knownFamilies()}), ` +
      `or upgrade @aclnn/norm`,
    { argument: "device" },
  );
}
