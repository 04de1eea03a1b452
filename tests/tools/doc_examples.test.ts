/**
 * Runs every `@example` of the public API and every code block of the README, the blocks
 * `deno test --doc` would run (tests/helpers/doc_blocks.ts finds them by its rules), in one child
 * process whose environment points discovery at the software CANN, so that the NPU examples
 * (openAscend, selectDefaultDevice) really run too. Each block is written as a module under
 * build/doc_examples/ and one `deno run --check` type-checks them all and imports them in turn:
 * one process and one isolate, where `deno test --doc` starts an isolate per block (96 of them:
 * 15 s on a quiet machine, 3 min under load). The blocks run from that directory, so one that
 * works only from the repository's root fails here.
 *
 * @module
 */

import assert from "node:assert/strict";
import { SIM_DIR } from "../helpers/ffi_sim.ts";
import { type DocBlock, docBlocks, sourcesUnder } from "../helpers/doc_blocks.ts";

const ROOT = new URL("../../", import.meta.url);
const OUT = new URL("build/doc_examples/", ROOT);

/** Writes each block as a module and a runner that imports them in turn; returns its path. */
function writeRunner(blocks: readonly DocBlock[]): string {
  try {
    Deno.removeSync(OUT, { recursive: true });
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e; // a fresh checkout has none yet
  }
  Deno.mkdirSync(OUT, { recursive: true });
  const entries = blocks.map((b) => {
    const file = `${b.name.replaceAll("/", "_").replace("#", "_")}.ts`;
    // `export {}`: a module, so that blocks without imports do not share one global scope.
    Deno.writeTextFileSync(new URL(file, OUT), `${b.code}\nexport {};\n`);
    return `  [${JSON.stringify(b.name)}, () => import("./${file}")],`;
  });
  const runner = new URL("run.ts", OUT);
  Deno.writeTextFileSync(
    runner,
    `const blocks: [string, () => Promise<unknown>][] = [
${entries.join("\n")}
];
let failed = 0;
for (const [name, load] of blocks) {
  try {
    await load();
  } catch (e) {
    failed++;
    console.error(\`doc example \${name} failed: \${(e as Error)?.stack ?? e}\`);
  }
}
console.log(\`doc examples: \${blocks.length - failed} passed, \${failed} failed\`);
if (failed > 0) Deno.exit(1);
`,
  );
  return runner.pathname;
}

Deno.test("doc examples: every @example and README block runs (NPU ones on the simulator)", async () => {
  const files = ["mod.ts", "ascend.ts", "backends.ts", ...sourcesUnder(ROOT, "src/"), "README.md"];
  const blocks = files.flatMap((f) => docBlocks(ROOT, f));
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--check", "--allow-ffi", "--allow-env", "--allow-read", writeRunner(blocks)],
    cwd: OUT,
    env: { ACLNN_NORM_LIB_DIR: SIM_DIR, ASCEND_OPP_PATH: SIM_DIR, NO_COLOR: "1" },
  }).output();
  const out = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
  assert.equal(code, 0, out);
  assert.match(out, new RegExp(`doc examples: ${blocks.length} passed, 0 failed`));
  // mod.ts, every operator, openAscend, selectDefaultDevice, the errors and the README.
  assert.ok(blocks.length >= 90, `only ${blocks.length} doc examples ran:\n${out}`);
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
