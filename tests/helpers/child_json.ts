/**
 * Tests that run a script in a child Deno process (`Deno.execPath()`, never `deno` by name):
 * a fresh process, with V8 flags or a first job of its own, whose result is the JSON object of
 * the last line it prints.
 *
 * @module
 */

import assert from "node:assert/strict";

/**
 * Runs `Deno.execPath()` with `args` (and `env` added to the environment), requires exit code 0
 * (the message carries the child's stderr) and returns the last line of its stdout, parsed as
 * JSON (typed as `T`, by default as untyped as `JSON.parse`'s result).
 */
export async function childJson<T = ReturnType<typeof JSON.parse>>(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<T> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [...args],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!);
}
