/**
 * The side-by-side benchmarks say how long they will take and show each case as it finishes
 * (issue 38 D19: `bench:norm` and `bench:cpu` printed nothing for minutes). Run small, without
 * PyTorch, with stderr (the progress) and stdout (the table) in one stream, in the order the
 * script wrote them.
 *
 * @module
 */

import assert from "node:assert/strict";

const root = new URL("../../", import.meta.url);

/**
 * The lines `deno <args>` writes to stdout and stderr, interleaved as written, without Deno's own
 * "Download <url>" lines (a fresh cache fetches the npm packages the script imports: a CI run
 * failed on one, written before the script's first line).
 */
async function lines(args: string[]): Promise<string[]> {
  const command = [Deno.execPath(), ...args].map((a) => `'${a}'`).join(" ");
  const out = await new Deno.Command("sh", {
    args: ["-c", `exec ${command} 2>&1`],
    cwd: root,
    env: { NO_COLOR: "1" },
    stdout: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, text);
  return text.trimEnd().split("\n").filter((line) => !/^Download https?:\/\//.test(line));
}

Deno.test("bench:norm: an estimate first, then one line per case as it finishes", async () => {
  const out = await lines([
    "run",
    "--allow-read",
    "bench/norm_compare.ts",
    "--no-torch",
    "--rounds",
    "1",
    "--min-time",
    "0.01",
    "--ops",
    "rmsNorm",
    "--dtypes",
    "float32",
  ]);
  assert.match(
    out[0],
    /^bench:norm: 3 cases x 1 round\(s\) x 1 side\(s\); estimated total \d+ (ms|s)\. /,
  );
  const shapes = ["64x1024", "2048x1024", "8192x768"];
  for (const [i, shape] of shapes.entries()) {
    assert.match(
      out[1 + i],
      new RegExp(
        `^bench:norm \\[${i + 1}/3\\] round 1/1: rmsNorm float32 ${shape} here [\\d.]+ ms \\(`,
      ),
    );
  }
  assert.match(out[3], /\(\d+ (ms|s) in all\)$/);
  assert.match(out[4], /^CPU backend, /, "then the table");
});

Deno.test("bench:cpu: an estimate first, then each row as its case finishes", async () => {
  const out = await lines([
    "run",
    "--allow-read",
    "bench/cpu_compare.ts",
    "--no-torch",
    "--no-reference",
    "--ops",
    "batchNorm",
    "--dtypes",
    "float32",
    "--shapes",
    "2x4x4x4,4x8x4x4",
    "--layouts",
    "contiguous",
    "--min-time",
    "0.01",
  ]);
  assert.equal(out[0], "bench:cpu: timing one call of each operator and shape for the estimate");
  assert.match(out[1], /^bench:cpu: 2 cases x 1 repeat\(s\); estimated total \d+ (ms|s)\. /);
  const at = (re: RegExp) => out.findIndex((l) => re.test(l));
  const header = at(/^op +dtype +shape/);
  assert.ok(header > 0, out.join("\n"));
  for (const [i, shape] of ["2x4x4x4", "4x8x4x4"].entries()) {
    const step = at(
      new RegExp(`^bench:cpu \\[${i + 1}/2\\] repeat 1/1: batchNorm float32 ${shape}`),
    );
    const row = at(new RegExp(`^batchNorm +float32 +${shape} +contiguous +[\\d.]+ +[\\d.]+`));
    assert.ok(step > header && row === step + 1, `row ${shape} printed as it finished`);
  }
});
