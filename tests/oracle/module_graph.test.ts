/**
 * The float64 oracle stays off the production path: no module the package's entry points load
 * (`deno info --json` of mod.ts, ascend.ts, backends.ts) is a file of tests/ (the oracle lives
 * in tests/oracle), and no file of src/ imports from tests/. The oracle is also not published
 * (deno.json `publish.include` names no tests/ path).
 */

import assert from "node:assert/strict";
import denoJson from "../../deno.json" with { type: "json" };
import { moduleGraph, ROOT } from "../helpers/module_graph.ts";

const TESTS = new URL("tests/", ROOT).href;
const ORACLE = new URL("tests/oracle/", ROOT).href;

for (const entry of ["mod.ts", "ascend.ts", "backends.ts"]) {
  Deno.test(`${entry}'s module graph holds no file of tests/ (the oracle)`, async () => {
    const graph = await moduleGraph(entry);
    // The graph is the real one: the CPU kernels and the tensor module are in it.
    assert.ok(graph.some((s) => s.endsWith("/src/tensor/tensor.ts")), `${entry}: no tensor.ts`);
    if (entry !== "ascend.ts") {
      assert.ok(
        graph.some((s) => s.endsWith("/src/backends/cpu/channels/mod.ts")),
        `${entry}: no CPU kernels`,
      );
    }
    const leaks = graph.filter((s) => s.startsWith(TESTS));
    assert.deepEqual(leaks, [], `${entry} reaches test modules`);
  });
}

Deno.test("the oracle is in tests/oracle, imported by no file of src/", async () => {
  const oracle = await moduleGraph("tests/oracle/mod.ts");
  assert.ok(oracle.some((s) => s === `${ORACLE}kernels/mod.ts`), "oracle kernels not found");
  const importsTests = /\bfrom\s+["'][^"']*\/tests\//;
  const offenders: string[] = [];
  const walk = async (dir: URL) => {
    for await (const e of Deno.readDir(dir)) {
      const url = new URL(e.name + (e.isDirectory ? "/" : ""), dir);
      if (e.isDirectory) await walk(url);
      else if (e.name.endsWith(".ts") && importsTests.test(await Deno.readTextFile(url))) {
        offenders.push(url.pathname);
      }
    }
  };
  await walk(new URL("src/", ROOT));
  assert.deepEqual(offenders, []);
  const published = denoJson.publish.include;
  assert.ok(!published.some((p) => p.startsWith("tests")), `published: ${published}`);
});
