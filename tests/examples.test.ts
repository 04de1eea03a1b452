/**
 * Runs the three examples as they are documented (`deno run --allow-ffi --allow-env
 * --allow-read examples/X.ts`, on the default backend) and checks the exit code and the line
 * that states the result. Needs `--allow-run=deno`.
 */

import assert from "node:assert/strict";

async function runExample(name: string): Promise<string> {
  const path = new URL(`../examples/${name}`, import.meta.url).pathname;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--allow-ffi", "--allow-env", "--allow-read", path],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, `${name} exited with ${out.code}\n${stdout}\n${stderr}`);
  assert.match(stdout, /^backend: /m, stdout);
  return stdout;
}

Deno.test("examples/training_loop.ts: both losses fall", async () => {
  const stdout = await runExample("training_loop.ts");
  assert.match(stdout, /^BatchNorm: loss fell from .* ok$/m, stdout);
  assert.match(stdout, /^GroupNorm: loss fell from .* ok$/m, stdout);
});

Deno.test("examples/gradient_check.ts: every backward operator matches finite differences", async () => {
  const stdout = await runExample("gradient_check.ts");
  assert.match(stdout, /operators checked in .*: all within threshold/, stdout);
  for (const op of ["batchNormBackward", "groupNormBackward", "batchNormElemtBackward"]) {
    assert.match(stdout, new RegExp(`^worst ${op}.* ok$`, "m"), stdout);
  }
});

Deno.test("examples/sync_batch_norm.ts: 4 ranks match single-process BatchNorm", async () => {
  const stdout = await runExample("sync_batch_norm.ts");
  assert.match(stdout, /^max deviation from single-process BN: .* ok$/m, stdout);
});
