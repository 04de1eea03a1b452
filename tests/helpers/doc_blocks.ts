/**
 * The code blocks `deno test --doc` runs, found by the same rules as Deno's doc-test
 * extraction (checked against the names `deno test --doc` prints: the same 96 blocks): every
 * fenced block whose language is a JavaScript or TypeScript one (a block without a language is
 * prose), inside a JSDoc comment of a TypeScript file or anywhere in a Markdown file; a fence
 * that carries `ignore` is skipped. Each block is named as Deno names it:
 * `<file>#<opening fence line>-<line after the closing fence>`.
 *
 * tests/tools/doc_examples.test.ts writes them as modules and runs them in one process.
 *
 * @module
 */

/** One runnable code block. */
export interface DocBlock {
  /** Where it is, as Deno names it: `src/tensor/tensor.ts#217-224`. */
  readonly name: string;
  /** The block's code, one line per source line, without the comment's `*` prefix. */
  readonly code: string;
}

const LANGUAGES = new Set([
  "js",
  "javascript",
  "mjs",
  "cjs",
  "jsx",
  "ts",
  "typescript",
  "mts",
  "cts",
  "tsx",
]);

/** A fence line's language and attributes, e.g. "```ts ignore" -> ["ts", "ignore"]. */
function fenceWords(line: string): string[] | undefined {
  const match = /^\s*```(.*)$/.exec(line);
  return match ? match[1].split(/[\s,]+/).filter((w) => w !== "") : undefined;
}

/**
 * The runnable blocks among `lines` (the file's lines, or a comment's with its prefix taken
 * off), `first` the file line number of lines[0].
 */
function blocksOf(file: string, lines: readonly string[], first: number) {
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const words = fenceWords(lines[i]);
    if (words === undefined) continue;
    let end = i + 1;
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end])) end++;
    const language = words[0]?.toLowerCase();
    const runnable = language !== undefined && LANGUAGES.has(language);
    if (runnable && !words.includes("ignore") && end < lines.length) {
      blocks.push({
        name: `${file}#${first + i}-${first + end + 1}`,
        code: lines.slice(i + 1, end).join("\n"),
      });
    }
    i = end;
  }
  return blocks;
}

/** The runnable blocks of the JSDoc comments of TypeScript source `text`. */
function jsDocBlocks(file: string, text: string): DocBlock[] {
  const lines = text.split("\n");
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*\/\*\*/.test(lines[i])) continue;
    let end = i;
    while (end < lines.length && !lines[end].includes("*/")) end++;
    const body = lines.slice(i + 1, end).map((l) => l.replace(/^\s*\*( |$)/, ""));
    blocks.push(...blocksOf(file, body, i + 2));
    i = end;
  }
  return blocks;
}

/** The runnable blocks of `file` (relative to `root`): a .ts source or a Markdown file. */
export function docBlocks(root: URL, file: string): DocBlock[] {
  const text = Deno.readTextFileSync(new URL(file, root));
  return file.endsWith(".md") ? blocksOf(file, text.split("\n"), 1) : jsDocBlocks(file, text);
}

/** Every .ts file under `dir` (relative to `root`), sorted. */
export function sourcesUnder(root: URL, dir: string): string[] {
  const files: string[] = [];
  for (const entry of Deno.readDirSync(new URL(dir, root))) {
    const path = `${dir}${entry.name}`;
    if (entry.isDirectory) files.push(...sourcesUnder(root, `${path}/`));
    else if (entry.name.endsWith(".ts")) files.push(path);
  }
  return files.sort();
}
