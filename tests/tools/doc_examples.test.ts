/**
 * Runs every `@example` of the public API and every code block of the README, the blocks
 * `deno test --doc` would run (tests/helpers/doc_blocks.ts finds them by its rules), in one child
 * process whose environment points discovery at the software CANN, so that the NPU examples
 * (openAscend, selectDefaultDevice, createHcclProcessGroup) really run too. The blocks are
 * written as modules under build/doc_examples/, and one `deno run --check` type-checks them all
 * and imports them in turn (tests/helpers/doc_runner.ts): one process and one isolate, where
 * `deno test --doc` starts an isolate per block (15 s on a quiet machine for 96 blocks, 3 min
 * under load). The blocks run from build/doc_examples/, so one that works only from the
 * repository's root fails here.
 *
 * What the blocks print is held to what they say they print. Every `console.log(...); //
 * <stated>` call (tests/helpers/stated_outputs.ts says which calls state an output: the comment
 * ends the call's line, or is the line after it) is compared, each time it runs, with its
 * comment by the rule of tests/helpers/output_rule.ts:
 * - whitespace is layout: Deno's `[ 60, 20, 5, 1 ]` reads as the comments' `[60, 20, 5, 1]`,
 *   and an array Deno breaks over lines as one line; nothing else is rewritten
 *   (`Float64Array(6) [...]`, strings quoted inside arrays and bare on their own);
 * - `...` stands for any text (digits past those stated, random values, a SoC name);
 * - the comment may end with an explanation after a `: `, ` (` or `; ` outside brackets: the
 *   printed text must equal the whole comment or the comment cut at one of those;
 * - a comment that opens with `(` is an explanation only, compared with nothing (the catch
 *   branches that report a missing CANN, which do not run on the simulator).
 * A stated call that never printed fails, unless its comment is an explanation only. Calls
 * without such a comment are not compared. tests/tools/doc_outputs.test.ts holds the rule and
 * the runner to blocks that state wrong outputs.
 *
 * @module
 */

import assert from "node:assert/strict";
import { SIM_DIR } from "../helpers/ffi_sim.ts";
import { type DocBlock, docBlocks, sourcesUnder } from "../helpers/doc_blocks.ts";
import { runDocBlocks } from "../helpers/doc_runner.ts";
import { statedOutputs } from "../helpers/stated_outputs.ts";

const ROOT = new URL("../../", import.meta.url);
const OUT = new URL("build/doc_examples/", ROOT);

/**
 * `blocks` in the order they run: a block that registers a backend takes over its device for
 * every block after it in this one process (registerBackend's own example logs every CPU
 * batchNormStats call, and backendFor's would name it), so those run last.
 */
function runOrder(blocks: readonly DocBlock[]): DocBlock[] {
  const registers = (b: DocBlock) => b.code.includes("registerBackend(");
  return [...blocks.filter((b) => !registers(b)), ...blocks.filter(registers)];
}

Deno.test("doc examples: every @example and README block runs (NPU ones on the simulator) and prints what it states", async () => {
  const files = ["mod.ts", "ascend.ts", "backends.ts", ...sourcesUnder(ROOT, "src/"), "README.md"];
  const blocks = runOrder(files.flatMap((f) => docBlocks(ROOT, f)));
  // 127.0.0.1: createHcclProcessGroup's example meets itself at its rendezvous.
  const permissions = ["--allow-ffi", "--allow-env", "--allow-read", "--allow-net=127.0.0.1"];
  const env = { ACLNN_NORM_LIB_DIR: SIM_DIR, ASCEND_OPP_PATH: SIM_DIR };
  const { code, output, summary, failures } = await runDocBlocks(blocks, OUT, permissions, env);
  assert.equal(code, 0, output);
  assert.equal(summary, `doc examples: ${blocks.length} passed, 0 failed`, output);
  assert.deepEqual(failures, [], "doc examples that print other than they state");
  const stated = blocks.reduce((n, b) => n + statedOutputs(b.code).length, 0);
  assert.ok(stated >= 145, `only ${stated} console.log calls state their output`);
  // mod.ts, every operator, openAscend, selectDefaultDevice, the errors and the README.
  assert.ok(blocks.length >= 130, `only ${blocks.length} doc examples ran:\n${output}`);
  for (const f of ["mod.ts", "README.md", "src/ffi/runtime.ts", "src/ops/layer_norm.ts"]) {
    assert.ok(blocks.some((b) => b.name.startsWith(`${f}#`)), `no example of ${f}`);
  }
});

/** The public entry points of the package (deno.json "exports"). */
const ENTRY_POINTS = ["mod.ts", "ascend.ts", "backends.ts"];

Deno.test("doc examples: every public function and class has an @example", async () => {
  const missing: string[] = [];
  for (const entry of ENTRY_POINTS) {
    const { code, stdout } = await new Deno.Command(Deno.execPath(), {
      args: ["doc", "--json", entry],
      cwd: ROOT,
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
