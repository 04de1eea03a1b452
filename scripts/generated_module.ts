/**
 * What every build of a committed, generated module shares (scripts/build_worker.ts): the
 * text formatted as `deno fmt` formats it, and a one-line account of how a committed file
 * differs from its rebuild.
 *
 * @module
 */

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
