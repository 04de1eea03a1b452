/**
 * The demo as a first-time user meets it: `--help` prints the usage, a bad option ends in one
 * line and exit status 2 (no stack trace), and a run ends by saying whether each operator
 * matched its float64 recomputation, and what "deviation" means.
 *
 * @module
 */

import assert from "node:assert/strict";

const DEMO = new URL("../../scripts/demo.ts", import.meta.url).pathname;

async function demo(...args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-ffi", "--allow-env", "--allow-read", DEMO, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

Deno.test("demo: --help prints the usage and exits 0", async () => {
  const r = await demo("--help");
  assert.equal(r.code, 0);
  assert.match(r.stdout, /^deno task demo \[options\]/);
  assert.match(r.stdout, /--shape N,C,H,W/);
  assert.match(r.stdout, /Exit status: 0 when every operator matches/);
  // `deno task demo -- --help` hands the `--` to the script.
  const viaTask = await demo("--", "--help");
  assert.equal(viaTask.code, 0);
  assert.equal(viaTask.stdout, r.stdout);
});

Deno.test("demo: a bad option is one line and exit status 2", async () => {
  for (
    const [args, message] of [
      [["--shape", "banana"], /--shape dimensions must be a positive integer, got "banana"/],
      [["--bogus"], /Unknown option '--bogus'/],
      [["--dtype", "float64"], /--dtype must be float32, float16 or bfloat16/],
      [["--shape", "2,6,3", "--groups", "4"], /--groups 4 must divide C = 6/],
      [["--lib-dir", "build/sim"], /--lib-dir must be an absolute path/],
    ] as const
  ) {
    const r = await demo(...args);
    assert.equal(r.code, 2, args.join(" "));
    assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    assert.match(r.stderr, message);
    assert.doesNotMatch(r.stderr, /\bat \S+:\d+:\d+/, "no stack trace");
  }
});

Deno.test("demo: every operator gets a verdict against its float64 recomputation", async () => {
  const r = await demo("--cpu", "--shape", "2,8,3,3", "--groups", "4", "--repeat", "1");
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.match(/ matches$/gm)?.length, 4, r.stdout);
  assert.match(r.stdout, /deviation: the largest \|output - reference\|/);
  assert.match(r.stdout, /All 4 operators match their float64 recomputation\./);
});
