/**
 * The README as JSR shows it (issue 38 D23): its task table names every task of deno.json once;
 * no command in backquotes is split over two lines (a copy would break it); every relative link
 * of a published Markdown file points to a file that is published too (deno.json's
 * `publish.include`), as JSR serves only those.
 *
 * @module
 */

import assert from "node:assert/strict";
import denoJson from "../../deno.json" with { type: "json" };

const ROOT = new URL("../../", import.meta.url);
const README = Deno.readTextFileSync(new URL("README.md", ROOT));

/** `text` without its fenced code blocks (each replaced by an empty line). */
function prose(text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, "");
}

Deno.test("README: the task table names every task of deno.json, each once", () => {
  const section = README.slice(README.indexOf("\n## Tasks"), README.indexOf("\n## Install"));
  const rows = section.split("\n").filter((l) => l.startsWith("| `deno task "));
  const first = rows.map((r) => /^\| `deno task ([^`]+)`/.exec(r)![1]);
  assert.deepEqual(first.filter((t, i) => first.indexOf(t) !== i), [], "listed twice");
  const named = new Set(rows.flatMap((r) => [...r.matchAll(/`(?:deno task )?([a-z0-9:]+)`/g)]));
  const names = new Set([...named].map((m) => m[1]));
  const missing = Object.keys(denoJson.tasks).filter((t) => !names.has(t));
  assert.deepEqual(missing, [], "tasks the table does not name");
});

Deno.test("README: no inline code is split over two lines", () => {
  const split = [...prose(README).matchAll(/`[^`]+`/g)].map((m) => m[0]).filter((c) =>
    c.includes("\n")
  );
  assert.deepEqual(split, []);
});

/** Whether `path` (relative to the root) is published: under an entry of publish.include. */
function published(path: string): boolean {
  return denoJson.publish.include.some((entry) =>
    entry.endsWith("/") ? path.startsWith(entry) : path === entry
  );
}

Deno.test("README and docs: every relative link points to a published file", () => {
  const markdown = [
    "README.md",
    ...[...Deno.readDirSync(new URL("docs/", ROOT))].map((e) => `docs/${e.name}`),
  ].filter(published);
  const bad: string[] = [];
  for (const file of markdown) {
    const text = prose(Deno.readTextFileSync(new URL(file, ROOT)));
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target) || target.startsWith("#")) continue; // absolute, same page
      const url = new URL(target.split("#")[0], new URL(file, ROOT));
      const path = url.href.slice(ROOT.href.length);
      let exists = true;
      try {
        Deno.statSync(url);
      } catch {
        exists = false;
      }
      if (!exists || !url.href.startsWith(ROOT.href) || !published(path)) {
        bad.push(`${file}: ${target}${exists ? " (not published)" : " (missing)"}`);
      }
    }
  }
  assert.ok(markdown.includes("README.md"));
  assert.deepEqual(bad, []);
});
