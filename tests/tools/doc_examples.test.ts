/**
 * Runs every `@example` of the public API and every code block of the README as a doc test
 * (`deno test --doc`), in a child process whose environment points discovery at the software
^ * CANN, so that the NPU examples (openAscend, selectDefaultDevice) really run too.
 *
 * @module
 */

import assert from "node:assert/strict";
import { SIM_DIR } from "../helpers/ffi_sim.ts";

Deno.test("doc examples: every @example and README block runs (NPU ones on the simulator)", async () => {
  const root = new URL("../..", import.meta.url).pathname;
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "test",
      "--doc",
      "--quiet",
      "--allow-ffi",
      "--allow-env",
      "--allow-read",
      "mod.ts",
      "ascend.ts",
      "backends.ts",
      "src/",
      "README.md",
    ],
    cwd: root,
    env: { ACLNN_NORM_LIB_DIR: SIM_DIR, ASCEND_OPP_PATH: SIM_DIR, NO_COLOR: "1" },
  }).output();
  const out = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
  assert.equal(code, 0, out);
  const summary = out.match(/ok \| (\d+) passed \| 0 failed/);
  assert.ok(summary, out);
  // mod.ts, every operator, openAscend, selectDefaultDevice, the errors and the README.
  assert.ok(Number(summary[1]) >= 25, `only ${summary[1]} doc examples ran:\n${out}`);
});

/** The public entry points of the package (deno.json "exports"). */
const ENTRY_POINTS = ["mod.ts", "ascend.ts", "backends.ts"];

Deno.test("doc examples: every public function and class has an @example", async () => {
  const root = new URL("../..", import.meta.url).pathname;
  const missing: string[] = [];
  for (const entry of ENTRY_POINTS) {
    const { code, stdout } = await new Deno.Command(Deno.execPath(), {
      args: ["doc", "--json", entry],
      cwd: root,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(code, 0);
    const doc = JSON.parse(new TextDecoder().decode(stdout));
    for (const node of Object.values(doc.nodes) as { symbols?: DocSymbol[] }[]) {
      for (const symbol of node.symbols ?? []) {
        for (const decl of symbol.declarations) {
          if (decl.kind !== "function" && decl.kind !== "class") continue;
          const tags = decl.jsDoc?.tags ?? [];
          if (!tags.some((t) => t.kind === "example")) {
            missing.push(`${entry}: ${decl.kind} ${symbol.name}`);
          }
        }
      }
    }
  }
  assert.deepEqual(missing, [], "public functions/classes without an @example");
});

interface DocSymbol {
  name: string;
  declarations: { kind: string; jsDoc?: { tags?: { kind: string }[] } }[];
}
