/**
 * `deno task doctor [--lib-dir DIR] [--json]`: reports where the CANN libraries were found
 * (and every path tried), the CANN and driver versions if their version files are readable
 * (scripts/cann_versions.ts), ASCEND_OPP_PATH,
 * the device count and SoC name, and what is missing. Always exits 0: it is a report.
 *
 * @module
 */

import "./require_deno.ts";
import { parseCommand } from "./cli.ts";
import { describeLibraries, type DiscoveryReport } from "../src/ffi/library.ts";
import { openCannLibraries } from "../src/ffi/library.ts";
import { recentErrorMessage } from "../src/ffi/errors.ts";
import { effectiveOppPath } from "../src/ffi/opp_path.ts";
import { cannVersion, driverVersion } from "./cann_versions.ts";

const flags = parseCommand({
  name: "doctor",
  usage: `usage: deno task doctor [--lib-dir DIR] [--json]
  --lib-dir DIR   look for the CANN libraries in DIR only (absolute), as openAscend({ libDir })
  --json          print the report as JSON
  -h, --help      print this text`,
  options: { "lib-dir": { type: "string" }, json: { type: "boolean", default: false } },
});

function env(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

interface DeviceProbe {
  deviceCount?: number;
  socName?: string;
  error?: string;
}

function probeDevices(report: DiscoveryReport, libDir: string | undefined): DeviceProbe {
  if (!report.found) return {};
  try {
    const libs = openCannLibraries({ libDir });
    const rt = libs.runtime;
    const init = rt.aclInit(null);
    if (init !== 0 && init !== 100002) {
      return { error: `aclInit returned ${init}: ${recentErrorMessage(rt) ?? "no message"}` };
    }
    const count = new Uint32Array(1);
    const status = rt.aclrtGetDeviceCount(count);
    const probe: DeviceProbe = status === 0
      ? { deviceCount: count[0] }
      : { error: `aclrtGetDeviceCount returned ${status}: ${recentErrorMessage(rt) ?? ""}` };
    if (rt.aclrtGetSocName) {
      const p = rt.aclrtGetSocName();
      probe.socName = p === null ? "unknown" : Deno.UnsafePointerView.getCString(p);
    } else probe.socName = "unknown (aclrtGetSocName not exported)";
    return probe;
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e) };
  }
}

const report = describeLibraries({ libDir: flags["lib-dir"] });
const version = cannVersion(report.dir);
const driver = driverVersion();
// What openAscend would use: the environment's value, else the opp directory beside the
// libraries (src/ffi/opp_path.ts).
let opp: { path: string; derived: boolean } | undefined;
try {
  opp = report.found ? effectiveOppPath(report.dir) : undefined;
} catch {
  opp = undefined; // no permission to look: reported as not set
}
const oppPath = opp?.path ?? env("ASCEND_OPP_PATH");
const devices = probeDevices(report, flags["lib-dir"]);

const missing: string[] = [];
if (!report.found) missing.push("the CANN libraries (see the paths tried above)");
if (!oppPath) {
  missing.push(
    "ASCEND_OPP_PATH, and no opp directory beside the libraries to derive it from (aclnn " +
      "phase 1 fails with 561107 without it)",
  );
}
for (const lib of report.libraries) {
  for (const symbol of lib.missingOptional) {
    missing.push(`optional symbol ${symbol} in ${lib.path}`);
  }
}
if (devices.deviceCount === 0) missing.push("an NPU device (aclrtGetDeviceCount = 0)");

if (flags.json) {
  console.log(
    JSON.stringify(
      {
        report,
        version,
        driver,
        oppPath: oppPath ?? null,
        oppPathDerived: opp?.derived ?? false,
        devices,
        missing,
      },
      null,
      2,
    ),
  );
} else {
  const lines: string[] = ["@aclnn/norm doctor", ""];
  if (report.found) {
    lines.push(`CANN libraries: found via ${report.source} in ${report.dir ?? "(loader path)"}`);
    // CANN's lib64 is usually a symlink: show where the libraries really are.
    if (report.resolvedDir !== null && report.resolvedDir !== report.dir) {
      lines.push(`  (resolved: ${report.resolvedDir})`);
    }
    for (const lib of report.libraries) lines.push(`  ${lib.role.padEnd(10)} ${lib.path}`);
  } else {
    lines.push("CANN libraries: NOT FOUND");
  }
  lines.push("", "Paths tried, in order:");
  for (const a of report.attempts) {
    lines.push(`  [${a.source}] ${a.path}: ${a.error ?? "ok"}`);
  }
  if (report.skipped.length > 0) {
    lines.push("", "Locations not tried:");
    for (const s of report.skipped) lines.push(`  [${s.source}] ${s.reason}`);
  }
  if (!report.found && report.error) {
    lines.push("", report.error.split("\n").at(-1) ?? "");
  }
  lines.push(
    "",
    `CANN version:    ${version.version}${version.file ? ` (${version.file})` : ""}`,
    `Driver version:  ${driver.version}${driver.file ? ` (${driver.file})` : ""}`,
    `ASCEND_OPP_PATH: ${
      opp?.derived
        ? `${opp.path} (unset; openAscend derives it from the libraries' directory)`
        : oppPath ?? "not set"
    }`,
    `Devices:         ${devices.deviceCount ?? "unknown"}`,
    `SoC:             ${devices.socName ?? "unknown"}`,
  );
  if (devices.error) lines.push(`Device probe:    ${devices.error}`);
  lines.push("", missing.length === 0 ? "Nothing missing." : "Missing:");
  for (const m of missing) lines.push(`  - ${m}`);
  if (!report.found || devices.deviceCount === 0 || devices.deviceCount === undefined) {
    lines.push(
      "",
      "No NPU here? The same NPU code path runs against the software CANN in tests/sim:",
      "  deno task demo:sim            (builds it, then runs the demo on it)",
      '  openAscend({ libDir: "<absolute path of build/sim>" })   from your own code',
      "and the CPU backend runs everything without one (deno task demo).",
    );
  }
  console.log(lines.join("\n"));
}
