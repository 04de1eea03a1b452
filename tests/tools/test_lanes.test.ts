/**
 * `deno task test`'s lanes (scripts/test_lanes.ts): which options keep them, that their runs
 * cover every test file a plain `deno test` finds exactly once, and that the merged JUnit report
 * counts what the runs' reports hold (scripts/ci_summary.ts reads it).
 *
 * @module
 */

import assert from "node:assert/strict";
import { countCases, laneOptions, laneRuns, mergeReports } from "../../scripts/test_lanes.ts";

const root = new URL("../../", import.meta.url);

Deno.test("test lanes: options that keep them, and those that make one deno test", () => {
  assert.deepEqual(laneOptions([]), { options: [], junitPath: undefined });
  assert.deepEqual(
    laneOptions(["--reporter", "dot", "--junit-path=build/junit.xml", "--filter", "a b", "-q"]),
    { options: ["--reporter=dot", "--filter=a b", "-q"], junitPath: "build/junit.xml" },
  );
  assert.deepEqual(laneOptions(["--fail-fast", "--filter=x"]), {
    options: ["--fail-fast", "--filter=x"],
    junitPath: undefined,
  });
  for (
    const args of [
      ["tests/ops/"],
      ["--filter", "x", "tests/cpu/arena.test.ts"],
      ["--coverage"],
      ["--doc"],
      ["--no-check"],
      ["--filter"],
      ["--parallel"],
    ]
  ) {
    assert.equal(laneOptions(args), undefined, args.join(" "));
  }
});

/** Every file under `dir` (a path relative to the root), skipping build/ and hidden entries. */
function walk(dir: string): string[] {
  const files: string[] = [];
  for (const e of Deno.readDirSync(new URL(dir || ".", root))) {
    if (e.name.startsWith(".") || e.name === "build" || e.name === "node_modules") continue;
    const path = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory) files.push(...walk(path));
    else files.push(path);
  }
  return files;
}

Deno.test("test lanes: the runs cover every test file of the repository once", () => {
  // deno test's rule for the files of a folder: {*_,*.,}test.{js,mjs,ts,mts,jsx,tsx}.
  const isTest = (p: string) => /(^|\/)(?:[^/]*[._])?test\.(?:js|mjs|ts|mts|jsx|tsx)$/.test(p);
  const tests = walk("").filter(isTest);
  assert.ok(tests.length > 150, `${tests.length} test files`);
  const runs = laneRuns();
  for (const file of tests) {
    const owners = runs.filter((r) =>
      r.operands.some((o) =>
        o.endsWith("/") ? file.startsWith(o) : file === o ||
          file.startsWith(`${o}/`)
      )
    );
    assert.equal(owners.length, 1, `${file}: runs ${owners.map((r) => r.name)}`);
  }
  // No run is given a file that deno test would not take as a test module.
  for (const r of runs) {
    for (const o of r.operands) {
      const isDir = Deno.statSync(new URL(o, root)).isDirectory;
      assert.ok(isDir || isTest(o), `${r.name}: ${o}`);
    }
  }
});

Deno.test("test lanes: the merged report holds every run's cases and counts them", () => {
  const report = (cases: string) =>
    `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="deno test" tests="2">\n` +
    `    <testsuite name="./a.test.ts">\n${cases}\n    </testsuite>\n</testsuites>\n`;
  const a = report(
    `<testcase name="x" classname="a" time="0.1">\n</testcase>\n` +
      `<testcase name="y" classname="a" time="0.1"><skipped/></testcase>`,
  );
  const b = report(
    `<testcase name="z" classname="b" time="0.1"><failure message="no">no</failure></testcase>`,
  );
  const merged = mergeReports([a, b], 12.5);
  assert.deepEqual(countCases(merged), { tests: 3, failed: 1, skipped: 1 });
  assert.match(merged, /^<\?xml [^\n]*\n<testsuites name="deno test" tests="3" failures="1" /);
  assert.equal(merged.match(/<testsuite /g)?.length, 2);
  assert.equal(merged.match(/<testsuites\b/g)?.length, 1);
  assert.ok(merged.trimEnd().endsWith("</testsuites>"));
});
