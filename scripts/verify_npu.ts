/**
 * `deno task verify:npu`: the hardware acceptance run. On the CANN it finds (the discovery of
 * `openAscend()`: `ACLNN_NORM_LIB_DIR`, `ASCEND_HOME_PATH`, the default install roots; or
 * `--lib-dir`, or `--sim` for the software CANN in build/sim), it runs the test suite's
 * conformance and golden cases and a property sweep of every operator, dtype and layout the chip
 * supports (by the library's own rules), each on the NPU and on the CPU backend, and compares
 * every output within the tests' tolerances. It prints a table per operator, writes a Markdown
 * report (SoC, CANN and driver versions, every deviation) and exits 1 on any mismatch, 0 when
 * everything agrees, 2 on a bad option. `--help` lists the options.
 *
 * @module
 */

import "./require_deno.ts";
import { parseArgs } from "node:util";
import type { AscendDevice } from "../mod.ts";

const USAGE = `deno task verify:npu [options]

The hardware acceptance run: the test suite's conformance and golden cases and a sweep of
every operator, dtype and layout the chip supports, each run on the NPU and on the CPU backend
and compared within the tests' tolerances. Prints a table per operator and writes a Markdown
report to attach to an issue (SoC, CANN and driver versions, every deviation).

Without options it uses the CANN that openAscend() finds: $ACLNN_NORM_LIB_DIR, then
$ASCEND_HOME_PATH/lib64 and $ASCEND_TOOLKIT_HOME/lib64 (source <root>/set_env.sh first), then
/usr/local/Ascend/cann/lib64 and /usr/local/Ascend/ascend-toolkit/latest/lib64.

Options:
  --sim             use the software CANN in build/sim (build it with deno task build:sim, or
                    run deno task verify:npu:sim); ACLSIM_SOC_NAME picks the chip it plays
  --lib-dir DIR     absolute directory of the CANN libraries (instead of the discovery)
  --device ID       the NPU to use (default 0)
  --report PATH     where to write the report (default build/verify-npu-report.md in this
                    repository)
  --quick           the small conformance cases and one shape per sweep point (for tests)
  --ops A,B         only these operators (the library's names, e.g. layerNorm,groupNorm)
  -h, --help        print this text

Exit status: 0 when every case that ran agrees, 1 on any mismatch, when no NPU can be opened
or when the chip runs none of the cases, 2 for a bad option.`;

/** Ends the run with one line about a bad option (no stack trace). */
function usageError(message: string): never {
  // node:util's parseArgs explains some errors over several lines: the first says what is wrong.
  console.error(`verify:npu: ${message.split("\n")[0]} (see deno task verify:npu --help)`);
  Deno.exit(2);
}

let parsed;
try {
  parsed = parseArgs({
    // `deno task verify:npu -- --flag` hands the `--` through.
    args: Deno.args.filter((arg) => arg !== "--"),
    strict: true,
    allowPositionals: false,
    options: {
      sim: { type: "boolean", default: false },
      "lib-dir": { type: "string" },
      device: { type: "string", default: "0" },
      report: { type: "string" },
      quick: { type: "boolean", default: false },
      ops: { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
} catch (e) {
  usageError(e instanceof Error ? e.message : String(e));
}
const flags = parsed.values;
if (flags.help) {
  console.log(USAGE);
  Deno.exit(0);
}
if (!/^\d+$/.test(flags.device)) {
  usageError(`--device must be a device id (an integer >= 0), got "${flags.device}"`);
}
const deviceId = Number(flags.device);
const libDirFlag = flags["lib-dir"];
if (libDirFlag !== undefined && !libDirFlag.startsWith("/")) {
  usageError(`--lib-dir must be an absolute path, got "${libDirFlag}"`);
}
if (libDirFlag !== undefined && flags.sim) usageError("--sim and --lib-dir exclude each other");
if (flags.report === "") usageError("--report needs a path");

// The library loads only after the checks above: --help and a bad option answer without it.
const { openAscend } = await import("../mod.ts");
const { socFamily } = await import("../src/backends/ascend/soc.ts");
const { conformanceCases } = await import("./verify_npu/conformance.ts");
const { environment, versionText } = await import("./verify_npu/environment.ts");
const { deviationLine, deviations, markdownReport, textTables, totals } = await import(
  "./verify_npu/report.ts"
);
const { runCases } = await import("./verify_npu/run.ts");
const { sweepCases } = await import("./verify_npu/sweep.ts");
const { SWEEP } = await import("./verify_npu/sweep_all.ts");

const onlyOps = flags.ops?.split(",").filter((op) => op !== "");
for (const op of onlyOps ?? []) {
  if (!SWEEP.some((s) => s.op === op)) {
    usageError(`--ops: no operator ${op} (${SWEEP.map((s) => s.op).join(", ")})`);
  }
}

const simDir = new URL("../build/sim", import.meta.url).pathname;
const reportPath = flags.report ??
  new URL("../build/verify-npu-report.md", import.meta.url).pathname;

/** Opens the NPU, or ends the run with one line saying why not. */
function open(): AscendDevice {
  if (flags.sim) {
    try {
      Deno.statSync(`${simDir}/libacl_rt.so`);
    } catch {
      console.error(
        `verify:npu: --sim needs the software CANN in ${simDir}: run deno task build:sim first ` +
          "(or deno task verify:npu:sim, which builds it)",
      );
      Deno.exit(1);
    }
  }
  const libDir = flags.sim ? simDir : libDirFlag;
  try {
    return openAscend({ deviceId, ...(libDir === undefined ? {} : { libDir }) });
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    // The library's message ends with a paragraph of install hints: keep the first sentence.
    const first = message.split("\n")[0].replace(/\s+Install CANN and .*$/, "");
    const reason = message.startsWith("Could not open the CANN libraries")
      ? "no CANN install found where openAscend() looks (deno task doctor lists every path " +
        "tried; source <root>/set_env.sh, or pass --lib-dir DIR, or --sim for the software CANN)"
      : `cannot open NPU ${deviceId}: ${first} (deno task doctor shows what was found)`;
    console.error(`verify:npu: ${reason}`);
    Deno.exit(1);
  }
}

const started = new Date();
const device = open();
const env = environment(device);
console.log(`device:  ${env.device}, SoC ${env.socName} (${env.socFamily})`);
console.log(`CANN:    ${versionText(env.cann)}, libraries in ${env.libDir}`);
console.log(`driver:  ${versionText(env.driver)}`);

const quick = flags.quick;
const cases = [
  ...conformanceCases(quick ? { maxNumel: 2000 } : {}),
  ...sweepCases(SWEEP, quick),
].filter((c) => onlyOps === undefined || onlyOps.includes(c.op));
console.log(`running ${cases.length} cases${quick ? " (--quick)" : ""}...\n`);
const showProgress = Deno.stderr.isTerminal();
const results = await runCases(cases, device, socFamily(device.socName), (done, total) => {
  if (showProgress && (done % 50 === 0 || done === total)) {
    Deno.stderr.writeSync(new TextEncoder().encode(`\r${done}/${total} cases`));
    if (done === total) Deno.stderr.writeSync(new TextEncoder().encode("\n"));
  }
});
const seconds = (Date.now() - started.getTime()) / 1000;
device.close();

console.log(textTables(results));
const t = totals(results);
const devs = deviations(results);
if (devs.length > 0) {
  const shown = devs.slice(0, 20);
  console.log(`Deviations (${devs.length}${devs.length > shown.length ? ", the first 20" : ""}):`);
  for (const d of shown) {
    const line = deviationLine(d);
    console.log(`  ${line.length > 300 ? `${line.slice(0, 299)}…` : line}`);
  }
  console.log("");
}
const report = markdownReport(env, results, {
  command: ["deno task verify:npu", ...Deno.args.filter((a) => a !== "--")].join(" "),
  started,
  seconds,
});
try {
  const dir = reportPath.replace(/\/[^/]*$/, "");
  if (dir !== reportPath && dir !== "") Deno.mkdirSync(dir, { recursive: true });
  Deno.writeTextFileSync(reportPath, report);
} catch (e) {
  console.error(`verify:npu: cannot write the report to ${reportPath}: ${(e as Error).message}`);
  Deno.exit(1);
}
console.log(
  `${t.cases} cases: ${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped ` +
    `(${seconds.toFixed(1)} s). Report: ${reportPath}`,
);
if (t.failed === 0 && t.passed === 0) {
  // Nothing was verified: not a pass.
  console.log(`verify:npu: NOTHING RAN: the library says ${env.socName} runs none of these calls`);
  Deno.exit(1);
}
console.log(t.failed === 0 ? "verify:npu: PASSED" : "verify:npu: FAILED");
Deno.exit(t.failed === 0 ? 0 : 1);
