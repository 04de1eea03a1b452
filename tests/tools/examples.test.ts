/**
 * Runs the examples as they are documented (`deno run --allow-ffi --allow-env
 * --allow-read examples/X.ts`, on the default backend) and checks the exit code and the line
 * that states the result. Needs `--allow-run=deno`.
 */

import assert from "node:assert/strict";

/** Runs examples/`name` with the documented flags plus `flags`, then `args`; exit 0 required. */
async function spawnExample(name: string, flags: string[] = [], args: string[] = []) {
  const path = new URL(`../../examples/${name}`, import.meta.url).pathname;
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-prompt",
      "--allow-ffi",
      "--allow-env",
      "--allow-read",
      ...flags,
      path,
      ...args,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, `${name} exited with ${out.code}\n${stdout}\n${stderr}`);
  return stdout;
}

/** An example on the default backend: it names the backend first. */
async function runExample(name: string): Promise<string> {
  const stdout = await spawnExample(name);
  assert.match(stdout, /^backend: /m, stdout);
  return stdout;
}

Deno.test("examples/training_loop.ts: the three modules' losses fall; sync and state dict agree", async () => {
  const stdout = await runExample("training_loop.ts");
  assert.match(stdout, /^BatchNorm: loss fell from .* ok$/m, stdout);
  assert.match(stdout, /^GroupNorm: loss fell from .* ok$/m, stdout);
  assert.match(stdout, /^SyncBatchNorm: loss fell from .* ok$/m, stdout);
  for (const name of ["weight", "bias", "runningMean", "runningVar"]) {
    assert.match(stdout, new RegExp(`^SyncBatchNorm ${name} vs BatchNorm: .* ok$`, "m"), stdout);
  }
  assert.match(stdout, /^eval output after a state-dict round trip: .* ok$/m, stdout);
});

Deno.test("examples/gradient_check.ts: every backward operator matches finite differences", async () => {
  const stdout = await runExample("gradient_check.ts");
  // Every backward operator of the package, each with its verdict (not three of them).
  const ops = [
    "batchNormBackward \\(training\\)",
    "batchNormBackward \\(eval\\)",
    "batchNormReduceBackward",
    "batchNormElemtBackward",
    "groupNormBackward",
    "syncBatchNormBackward",
    "BatchNormBackwardDescriptor",
    "layerNormBackward",
    "rmsNormGrad",
  ];
  assert.match(
    stdout,
    new RegExp(`^${ops.length} operators checked in .*: all within threshold`, "m"),
  );
  for (const op of ops) assert.match(stdout, new RegExp(`^worst ${op}.* ok$`, "m"), stdout);
  assert.equal(stdout.match(/^worst /gm)?.length, ops.length, stdout);
});

Deno.test("examples/sync_batch_norm.ts: 4 ranks match single-process BatchNorm", async () => {
  const stdout = await runExample("sync_batch_norm.ts");
  assert.match(stdout, /^max deviation from single-process BN: .* ok$/m, stdout);
});

Deno.test("examples/sync_batch_norm_hccl.ts --sim: 3 rank processes over HCCL match single-process BatchNorm", async () => {
  // As `deno task example:syncbn:sim -- --ranks 3` runs it (with the `--` the task hands on).
  const stdout = await spawnExample(
    "sync_batch_norm_hccl.ts",
    ["--allow-run", "--allow-net=127.0.0.1"],
    ["--sim", "--", "--ranks", "3"],
  );
  for (const name of ["output", "gradInput", "gradWeight", "runningMean", "runningVar"]) {
    assert.match(stdout, new RegExp(`^${name}\\b.* max deviation .* ok$`, "m"), stdout);
  }
  assert.match(stdout, /^3 ranks over HCCL agree with single-process BatchNorm: ok$/m, stdout);
});

Deno.test("examples/transformer_norms.ts: AddRmsNorm + RmsNormGrad train gamma; dx matches finite differences", async () => {
  const stdout = await runExample("transformer_norms.ts");
  assert.equal(stdout.match(/^step \d+: loss /gm)?.length, 8, stdout);
  assert.match(stdout, /^loss fell from .* ok$/m, stdout);
  assert.match(stdout, /^dL\/dresidual vs finite differences: .* ok$/m, stdout);
});
