/**
 * Runs doc blocks (tests/helpers/doc_blocks.ts) in one child process and holds what they print
 * to what they state. Each block is written as a module under `<dir>/blocks/`, and
 * `<dir>/run.ts` records their console.log calls (tests/helpers/output_recorder.ts), then
 * imports them in turn, in the order given: one `deno run --check` type-checks them all, and a
 * block that fails is reported on stderr while the others still run. The child's working
 * directory is `dir`.
 *
 * tests/tools/doc_examples.test.ts runs the package's examples with it;
 * tests/tools/doc_outputs.test.ts holds it to blocks that state wrong outputs.
 *
 * @module
 */

import type { DocBlock } from "./doc_blocks.ts";
import { recordedOutputs } from "./output_recorder.ts";
import { outputFailures } from "./stated_outputs.ts";

/** What one run of the blocks gave. */
export interface DocRun {
  /** The child's exit status: 0 when every block ran without throwing. */
  readonly code: number;
  /** Its stdout then its stderr, for messages. */
  readonly output: string;
  /** The summary line the runner printed last: `doc examples: <n> passed, <m> failed`. */
  readonly summary: string | undefined;
  /** Every stated output the blocks did not print (stated_outputs.ts `outputFailures`). */
  readonly failures: readonly string[];
}

/** The module (under `<dir>/blocks/`) that holds `block`. */
function moduleOf(block: DocBlock): string {
  return `${block.name.replaceAll("/", "_").replace("#", "_")}.ts`;
}

/** Where line `line` (0-based) of `block`'s code is in its file: `src/tensor/tensor.ts:197`. */
function sourceLine(block: DocBlock, line: number): string {
  const [file, range] = block.name.split("#");
  return `${file}:${Number(range.split("-")[0]) + 1 + line}`;
}

/** Writes each block as a module and a runner that imports them in turn; returns its path. */
function writeRunner(blocks: readonly DocBlock[], dir: URL): string {
  try {
    Deno.removeSync(dir, { recursive: true });
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e; // a fresh checkout has none yet
  }
  Deno.mkdirSync(new URL("blocks/", dir), { recursive: true });
  const entries = blocks.map((b) => {
    const file = moduleOf(b);
    // `export {}`: a module, so that blocks without imports do not share one global scope. The
    // block's line i (0-based) is the module's line i + 1.
    Deno.writeTextFileSync(new URL(`blocks/${file}`, dir), `${b.code}\nexport {};\n`);
    return `  [${JSON.stringify(b.name)}, () => import("./blocks/${file}")],`;
  });
  const recorder = new URL("./output_recorder.ts", import.meta.url).href;
  const runner = new URL("run.ts", dir);
  Deno.writeTextFileSync(
    runner,
    `import { recordConsoleLog } from "${recorder}";
recordConsoleLog(new URL("./blocks/", import.meta.url).href);
const blocks: [string, () => Promise<unknown>][] = [
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

/**
 * Runs `blocks` in turn in one `deno run --check` child with `permissions` and `env` (NO_COLOR
 * is added), from `dir` (a file: URL ending in `/`, emptied first).
 */
export async function runDocBlocks(
  blocks: readonly DocBlock[],
  dir: URL,
  permissions: readonly string[],
  env: Readonly<Record<string, string>> = {},
): Promise<DocRun> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--check", ...permissions, writeRunner(blocks, dir)],
    cwd: dir,
    env: { ...env, NO_COLOR: "1" },
  }).output();
  const printed = new TextDecoder().decode(stdout);
  const recorded = recordedOutputs(printed);
  const failures = blocks.flatMap((b) =>
    outputFailures(
      b.code,
      (line) => recorded.get(`${moduleOf(b)}:${line + 1}`) ?? [],
      (line) => sourceLine(b, line),
    )
  );
  const summary = /^doc examples: \d+ passed, \d+ failed$/m.exec(printed)?.[0];
  return { code, output: printed + new TextDecoder().decode(stderr), summary, failures };
}
