/**
 * The module graph of an entry point of this repository, as `deno info --json` lists it (the
 * tests of layers and of the oracle's separation read it).
 *
 * @module
 */

import assert from "node:assert/strict";

/** The repository's root. */
export const ROOT: URL = new URL("../../", import.meta.url);

/** The `file:` specifiers of the modules `entry` (a path from the root) loads, itself included. */
export async function moduleGraph(entry: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: { specifier: string }[];
  };
  return info.modules.map((m) => m.specifier).filter((s) => s.startsWith("file:"));
}
