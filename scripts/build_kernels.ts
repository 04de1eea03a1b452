/**
 * Builds the CPU backend's TypeScript kernels from their templates: each kernel family
 * (sums, stats, normalize, gradient, scale, for rows and for channels-last pixels) is
 * written once in scripts/kernel_templates/ and emitted once per dtype (dtypes.ts), so that
 * every function V8 compiles still sees one typed-array type. The output is formatted with
 * `deno fmt` and committed: the published package needs no build step.
 *
 * ```sh
 * deno task build:kernels            # rewrite row_kernels.ts and pixel_kernels.ts
 * deno task build:kernels --check    # exit 1 when either is stale (writes nothing)
 * ```
 *
 * `deno task check` runs the `--check`, and tests/cpu/kernel_templates.test.ts compares a
 * rebuild with the committed files, so CI detects a template edited without a rebuild (or
 * a generated file edited by hand).
 *
 * @module
 */

import { parseCommand } from "./cli.ts";
import { type KernelModule, kernelModules } from "./kernel_templates/modules.ts";

const root = new URL("../", import.meta.url);

/** `text` as `deno fmt` formats a TypeScript file with this repository's deno.json. */
export async function formatTypeScript(text: string): Promise<string> {
  const fmt = new Deno.Command(Deno.execPath(), {
    args: ["fmt", `--config=${new URL("deno.json", root).pathname}`, "--ext=ts", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = fmt.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const { code, stdout, stderr } = await fmt.output();
  if (code !== 0) throw new Error(`deno fmt failed: ${new TextDecoder().decode(stderr)}`);
  return new TextDecoder().decode(stdout);
}

/** Every generated module, formatted. */
export async function buildKernelModules(): Promise<KernelModule[]> {
  return await Promise.all(
    kernelModules().map(async (m) => ({ path: m.path, text: await formatTypeScript(m.text) })),
  );
}

/**
 * One line on how `committed` (undefined: missing) differs from `rebuilt`, or undefined when
 * they are equal: the first differing line, both versions of it, and both lengths.
 */
export function describeDifference(
  committed: string | undefined,
  rebuilt: string,
): string | undefined {
  if (committed === rebuilt) return undefined;
  if (committed === undefined) return "missing";
  const a = committed.split("\n");
  const b = rebuilt.split("\n");
  let line = 0;
  while (line < a.length && line < b.length && a[line] === b[line]) line++;
  const show = (lines: string[]) =>
    line < lines.length ? JSON.stringify(lines[line].trim()) : "(end of file)";
  return `first difference at line ${line + 1}: committed ${show(a)}, rebuilt ${show(b)}; ` +
    `${a.length} lines committed, ${b.length} rebuilt`;
}

/**
 * The generated modules under `at` (a repository root) that differ from a rebuild, each
 * as `path: how` (see {@linkcode describeDifference}).
 */
export async function staleModules(at: URL = root): Promise<string[]> {
  const stale: string[] = [];
  for (const m of await buildKernelModules()) {
    let committed: string | undefined;
    try {
      committed = await Deno.readTextFile(new URL(m.path, at));
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    const how = describeDifference(committed, m.text);
    if (how !== undefined) stale.push(`${m.path}: ${how}`);
  }
  return stale;
}

if (import.meta.main) {
  const flags = parseCommand({
    name: "build:kernels",
    usage: `usage: deno task build:kernels [--check]
  --check      exit 1 when a generated kernel module differs from a rebuild (writes nothing)
  -h, --help   print this text`,
    options: { check: { type: "boolean", default: false } },
  });
  if (flags.check) {
    const stale = await staleModules();
    if (stale.length > 0) {
      for (const line of stale) console.error(`build:kernels: stale ${line}`);
      console.error("build:kernels: run `deno task build:kernels` and commit the result");
      Deno.exit(1);
    }
    console.log("build:kernels: generated kernel modules are up to date");
  } else {
    for (const m of await buildKernelModules()) {
      await Deno.writeTextFile(new URL(m.path, root), m.text);
      console.log(`build:kernels: wrote ${m.path} (${m.text.split("\n").length - 1} lines)`);
    }
  }
}
