/**
 * `.ci/run`'s closing lines (scripts/ci_summary.ts): `N passed, N failed` last, and above it each
 * failed case named with its message, since a CI log may be kept only by its tail.
 *
 * @module
 */

import assert from "node:assert/strict";

const root = new URL("../../", import.meta.url).pathname;
const script = `${root}scripts/ci_summary.ts`;

/** What ci_summary.ts prints for a JUnit report of `body`, and its exit code. */
async function summarise(body: string): Promise<{ lines: string[]; code: number }> {
  await Deno.mkdir(`${root}build`, { recursive: true });
  const path = await Deno.makeTempFile({ dir: `${root}build`, prefix: "junit-", suffix: ".xml" });
  try {
    await Deno.writeTextFile(
      path,
      `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="deno test">\n${body}\n</testsuites>\n`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-config", `--allow-read=${path}`, script, path],
      stdout: "piped",
      stderr: "piped",
    }).output();
    return { lines: new TextDecoder().decode(out.stdout).trimEnd().split("\n"), code: out.code };
  } finally {
    await Deno.remove(path);
  }
}

Deno.test("ci summary: passed and skipped cases count, and the run exits 0", async () => {
  const { lines, code } = await summarise(
    `<testsuite name="./a.test.ts">
      <testcase name="one" classname="./a.test.ts" time="0.001"></testcase>
      <testcase name="two" classname="./a.test.ts" time="0.001"/>
      <testcase name="three" classname="./a.test.ts" time="0.000"><skipped/></testcase>
    </testsuite>`,
  );
  assert.deepEqual(lines, ["2 passed, 0 failed, 1 skipped"]);
  assert.equal(code, 0);
});

Deno.test("ci summary: each failure is named with its message above the closing line", async () => {
  const { lines, code } = await summarise(
    `<testsuite name="./b.test.ts">
      <testcase name="fine" classname="./b.test.ts" time="0.001"></testcase>
      <testcase name="bounds &lt;a&gt; &amp; &quot;b&quot;" classname="./b.test.ts" time="0.2">
        <failure message="Uncaught AssertionError">AssertionError: took 1200 ms

&#39;x&#39; !== &#x27;y&#x27;
    at file:///b.test.ts:9:3</failure>
      </testcase>
    </testsuite>`,
  );
  assert.deepEqual(lines, [
    `FAILED ./b.test.ts > bounds <a> & "b"`,
    "  AssertionError: took 1200 ms",
    "  'x' !== 'y'",
    "      at file:///b.test.ts:9:3",
    "1 passed, 1 failed",
  ]);
  assert.equal(code, 1);
});

Deno.test("ci summary: a missing or empty report is a failed run", async () => {
  const empty = await summarise("");
  assert.deepEqual(empty.lines, ["0 passed, 0 failed"]);
  assert.equal(empty.code, 1);
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-config", "--allow-read", script, "/nonexistent/junit.xml"],
    stdout: "piped",
  }).output();
  assert.equal(
    new TextDecoder().decode(out.stdout).trimEnd().split("\n").at(-1),
    "0 passed, 1 failed",
  );
  assert.equal(out.code, 1);
});
