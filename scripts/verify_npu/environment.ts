/**
 * The machine a `deno task verify:npu` report describes: the SoC (as `aclrtGetSocName`
 * returns it, and its family in the library's table), the CANN and driver versions (from the
 * files CANN itself reads, scripts/cann_versions.ts), where the libraries were found, the
 * library's and Deno's versions, the OS.
 *
 * @module
 */

import type { AscendDevice } from "../../mod.ts";
import { socFamily } from "../../src/backends/ascend/soc.ts";
import denoJson from "../../deno.json" with { type: "json" };
import { cannVersion, driverVersion, type VersionInfo } from "../cann_versions.ts";

/** What the report says about the machine. */
export interface Environment {
  /** The device, e.g. `npu:0`. */
  readonly device: string;
  /** aclrtGetSocName, or "unknown". */
  readonly socName: string;
  /** Its family in src/backends/ascend/soc.ts, e.g. `Ascend910B (Atlas A2 training series, NpuArch 2201)`. */
  readonly socFamily: string;
  /** The CANN version and the file it was read from. */
  readonly cann: VersionInfo;
  /** The driver version and the file it was read from. */
  readonly driver: VersionInfo;
  /** The directory the CANN libraries were opened from. */
  readonly libDir: string;
  /** @aclnn/norm's version (deno.json). */
  readonly library: string;
  /** Deno, V8 and TypeScript versions. */
  readonly deno: string;
  /** OS and architecture. */
  readonly os: string;
}

/** The environment of an opened device. */
export function environment(device: AscendDevice): Environment {
  const socName = device.socName ?? "unknown";
  const family = socFamily(device.socName);
  return {
    device: device.name,
    socName,
    socFamily: family
      ? `${family.name} (${family.product}, NpuArch ${family.npuArch})`
      : "unknown to @aclnn/norm (no chip rules applied: every case runs)",
    cann: cannVersion(device.libDir),
    driver: driverVersion(),
    libDir: device.libDir ?? "(dynamic loader path)",
    library: `${denoJson.name} ${denoJson.version}`,
    deno: `${Deno.version.deno} (V8 ${Deno.version.v8}, TypeScript ${Deno.version.typescript})`,
    os: `${Deno.build.os} ${Deno.build.arch}`,
  };
}

/** A version and where it was read, for the report. */
export function versionText(v: VersionInfo): string {
  return v.file ? `${v.version} (${v.file})` : v.version;
}
