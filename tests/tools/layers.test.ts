/**
 * The layers of src/ (README's Layout): each folder imports only from the ones above it, and
 * src/errors.ts is the top, the one home of every error type and status name, so it imports
 * nothing from a folder (issue 38 E3: it reached into src/ffi for the ACL status names).
 *
 * @module
 */

import assert from "node:assert/strict";
import { moduleGraph, ROOT } from "../helpers/module_graph.ts";

/** The local files of `entry`'s module graph, relative to the root. */
async function localGraph(entry: string): Promise<string[]> {
  return (await moduleGraph(entry)).filter((s) => s.startsWith(ROOT.href))
    .map((s) => s.slice(ROOT.href.length)).sort();
}

Deno.test("layers: src/errors.ts imports only files beside it, no folder below", async () => {
  const graph = await localGraph("src/errors.ts");
  assert.ok(graph.includes("src/errors.ts"));
  assert.deepEqual(graph.filter((f) => !/^src\/[^/]+\.ts$/.test(f)), []);
});
