/**
 * `deno task test`'s last step: the whole suite in two `deno test` processes at once (lanes),
 * or, given files, folders or options other than those below, one `deno test` as before.
 *
 * Most of the suite keeps one core busy (a test waits for its child processes, or runs on one
 * thread), so on a machine of two cores or more the tests run in two lanes: type-checked once
 * (`deno test --no-run`, the discovery of a plain `deno test`), then each folder of `tests/`
 * (and, as one more run, every other top-level entry of the repository, for any test file
 * outside `tests/`) is a `deno test --no-check` of its own, taken in turn by whichever lane is
 * free, the longest first. Each folder is a process of its own, so two folders never share an
 * environment variable, a loaded library or a thread setting. A run's output is printed whole
 * when it ends; the closing line counts every run's tests (from their JUnit reports), and the
 * exit status is 1 if any run failed.
 *
 * Options that keep the lanes: `--reporter`, `--junit-path` (the runs' reports merged into
 * one), `--filter`, `--fail-fast`, `--quiet`. `DENO_JOBS` sets the number of lanes (1: one
 * `deno test` as before).
 *
 * ```sh
 * deno run --allow-run --allow-read --allow-write scripts/test_lanes.ts [deno test options]
 * ```
 *
 * @module
 */

import "./require_deno.ts";

/** The permissions the tests need (the FFI tests, the commands they spawn, the rendezvous). */
export const TEST_PERMISSIONS: readonly string[] = [
  "--allow-ffi",
  "--allow-env",
  "--allow-read",
  "--allow-run",
  "--allow-write=build",
  "--allow-net=127.0.0.1",
];

/**
 * Seconds each folder of `tests/` took on the project's 2-vCPU machine (a hint for the order
 * only: the longest go first, so that the lanes end together; a folder missing here counts 10).
 */
const FOLDER_SECONDS: Readonly<Record<string, number>> = {
  cpu: 90,
  tools: 50,
  ops: 38,
  ffi: 36,
  tensor: 30,
  distributed: 30,
  properties: 29,
  conformance: 24,
  software_cann: 16,
  nn: 14,
};

/** Options that take a value (`--name value` or `--name=value`) and keep the lanes. */
const VALUE_OPTIONS = ["--reporter", "--junit-path", "--filter"];
/** Options without a value that keep the lanes. */
const FLAG_OPTIONS = ["--fail-fast", "--quiet", "-q"];

const root = new URL("../", import.meta.url);

/** Runs `deno <args>` in the repository with this terminal; resolves to its exit status. */
async function denoInherit(args: readonly string[]): Promise<number> {
  const child = new Deno.Command(Deno.execPath(), { args: [...args], cwd: root }).spawn();
  return (await child.status).code;
}

/**
 * The options in `args` when they all keep the lanes, with the JUnit path taken out (the lanes
 * write their own and merge them there); undefined when one does not (a file, a folder, another
 * option: the suite then runs as one `deno test`).
 */
export function laneOptions(
  args: readonly string[],
): { options: string[]; junitPath: string | undefined } | undefined {
  const options: string[] = [];
  let junitPath: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (FLAG_OPTIONS.includes(arg)) {
      options.push(arg);
      continue;
    }
    const name = VALUE_OPTIONS.find((o) => arg === o || arg.startsWith(`${o}=`));
    if (name === undefined) return undefined;
    let value: string;
    if (arg === name) {
      if (i + 1 >= args.length) return undefined;
      value = args[++i];
    } else {
      value = arg.slice(name.length + 1);
    }
    if (name === "--junit-path") junitPath = value;
    else options.push(`${name}=${value}`);
  }
  return { options, junitPath };
}

/** One `deno test` run of the lanes: its operands and a name for its output and report. */
interface Run {
  readonly name: string;
  readonly operands: string[];
  readonly seconds: number;
}

/** The names `deno test` takes for test modules in a folder: {*_,*.,}test.{js,mjs,ts,mts,jsx,tsx}. */
const TEST_FILE = /^(?:.*[._])?test\.(?:js|mjs|ts|mts|jsx|tsx)$/;

/** Each folder of tests/, then every other top-level entry (not build/ or hidden) as one run. */
export function laneRuns(): Run[] {
  const runs: Run[] = [];
  const others: string[] = [];
  for (const e of Deno.readDirSync(root)) {
    if (e.name.startsWith(".") || e.name === "build" || e.name === "node_modules") continue;
    if (e.name !== "tests" && (e.isDirectory || TEST_FILE.test(e.name))) others.push(e.name);
  }
  for (const e of Deno.readDirSync(new URL("tests/", root))) {
    if (e.isDirectory) {
      runs.push({
        name: `tests/${e.name}/`,
        operands: [`tests/${e.name}/`],
        seconds: FOLDER_SECONDS[e.name] ?? 10,
      });
    } else if (TEST_FILE.test(e.name)) others.push(`tests/${e.name}`);
  }
  runs.sort((a, b) => b.seconds - a.seconds || a.name.localeCompare(b.name));
  runs.push({ name: "the rest", operands: others.sort(), seconds: 0 });
  return runs;
}

/** What a JUnit report of `deno test` counts. */
interface Counts {
  tests: number;
  failed: number;
  skipped: number;
}

/** The test cases of a JUnit report: all, failed, skipped. */
export function countCases(xml: string): Counts {
  const cases = xml.match(/<testcase\b[^>]*?(\/>|>[\s\S]*?<\/testcase>)/g) ?? [];
  let failed = 0;
  let skipped = 0;
  for (const c of cases) {
    if (/<failure\b|<error\b/.test(c)) failed++;
    else if (/<skipped\b/.test(c)) skipped++;
  }
  return { tests: cases.length, failed, skipped };
}

/** One JUnit report holding the test suites of `reports` (each one `deno test`'s report). */
export function mergeReports(reports: readonly string[], seconds: number): string {
  const inner = reports.map((xml) => {
    const open = xml.match(/<testsuites\b[^>]*>/);
    const close = xml.lastIndexOf("</testsuites>");
    if (!open || close < 0) return "";
    return xml.slice(open.index! + open[0].length, close).replace(/^\n+|\s+$/g, "");
  }).filter((s) => s !== "");
  const all = countCases(reports.join("\n"));
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="deno test" tests="${all.tests}" failures="${all.failed}" errors="0" ` +
    `time="${seconds.toFixed(3)}">`,
    ...inner,
    "</testsuites>",
    "",
  ].join("\n");
}

/** A duration as deno test prints it: 2m31s, 45s. */
function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)}m${s % 60}s` : `${s}s`;
}

/** The lanes (DENO_JOBS, else 2 where there are two cores, else 1). */
function laneCount(): number {
  const jobs = Deno.env.get("DENO_JOBS");
  if (jobs !== undefined && /^\s*\d+\s*$/.test(jobs) && Number(jobs) >= 1) return Number(jobs);
  return Math.min(2, Math.max(1, navigator.hardwareConcurrency || 1));
}

/** Runs the suite in lanes; resolves to the exit status. */
async function runLanes(
  lanes: number,
  options: string[],
  junitPath: string | undefined,
): Promise<number> {
  const started = performance.now();
  // Type-check once, as a plain `deno test` would; the runs skip it.
  const checked = await denoInherit(["test", "--no-run"]);
  if (checked !== 0) return checked;
  const dir = new URL("build/test_lanes/", root);
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  await Deno.mkdir(dir, { recursive: true });
  const queue = laneRuns();
  console.log(`${queue.length} runs of deno test on ${lanes} lanes`);
  const reports: string[] = [];
  const failedRuns: string[] = [];
  let stop = false;
  let runsStarted = 0;
  const lane = async () => {
    for (let run = queue.shift(); run && !stop; run = queue.shift()) {
      const label = run.name.replace(/[^a-z0-9_]+/gi, "_");
      const report = new URL(`${runsStarted++}-${label}.xml`, dir);
      const t0 = performance.now();
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "test",
          "--no-check",
          "--permit-no-files",
          ...TEST_PERMISSIONS,
          ...options,
          `--junit-path=${report.pathname}`,
          ...run.operands,
        ],
        cwd: root,
        stdout: "piped",
        stderr: "piped",
      }).output();
      const xml = await Deno.readTextFile(report).catch(() => "");
      if (xml !== "") reports.push(xml);
      const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      console.log(`== ${run.name} (${duration(performance.now() - t0)})`);
      if (text.trim() !== "") console.log(text.replace(/\s+$/, ""));
      if (out.code !== 0 || xml === "") {
        failedRuns.push(run.name);
        if (options.includes("--fail-fast")) stop = true;
      }
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  const seconds = (performance.now() - started) / 1000;
  const merged = mergeReports(reports, seconds);
  if (junitPath !== undefined) await Deno.writeTextFile(junitPath, merged);
  const all = countCases(merged);
  const passed = all.tests - all.failed - all.skipped;
  const ok = failedRuns.length === 0 && all.failed === 0;
  console.log(
    `\n${ok ? "ok" : "FAILED"} | ${passed} passed | ${all.failed} failed` +
      `${all.skipped ? ` | ${all.skipped} ignored` : ""} (${duration(seconds * 1000)}, ` +
      `${lanes} lanes)` +
      (failedRuns.length ? `\nruns that failed: ${failedRuns.join(", ")}` : ""),
  );
  return ok ? 0 : 1;
}

if (import.meta.main) {
  const args = Deno.args.filter((a) => a !== "--");
  if (args.includes("--help") || args.includes("-h")) {
    console.log(`usage: deno task test [deno test options] [files or folders...]
(scripts/test_lanes.ts: the suite in two deno test processes at once; given files, folders or
other options than --reporter, --junit-path, --filter, --fail-fast, --quiet, one deno test.
DENO_JOBS sets the number of lanes.)`);
    Deno.exit(0);
  }
  const lanes = laneCount();
  const plan = laneOptions(args);
  if (lanes < 2 || plan === undefined) {
    Deno.exit(await denoInherit(["test", ...TEST_PERMISSIONS, ...args]));
  }
  Deno.exit(await runLanes(lanes, plan.options, plan.junitPath));
}
