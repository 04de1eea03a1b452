/**
 * The rule by which a doc example's `console.log(...); // <stated>` comment is held to what the
 * call printed (tests/tools/doc_examples.test.ts applies it; tests/tools/output_rule.test.ts
 * holds it to cases, the wrong strides of Tensor.zerosLike's old example among them).
 *
 * 1. Whitespace is layout, not output: on both sides every run of whitespace (newlines
 *    included, as Deno breaks a long array over lines) is one space, and none is kept inside
 *    brackets or before a comma. Deno's `[ 60, 20, 5, 1 ]` and `{ axis: 2 }` therefore read as the
 *    comments write them, `[60, 20, 5, 1]` and `{axis: 2}`; nothing else is rewritten: a typed
 *    array is `Float64Array(6) [...]` on both sides, a string inside an array is quoted and a
 *    string printed on its own is not (`console.log("cpu")` prints `cpu`).
 * 2. `...` in a comment stands for any text, none included: `[0.8485..., 1.1313...]`,
 *    `Ascend...`, `[...]` for values that are random or not stable.
 * 3. The comment may end with an explanation: text after a `: `, a ` (` or a `; ` outside
 *    brackets and quotes. The printed text must equal the whole comment or the comment cut
 *    before one of those separators (`[2048, 2048]: sum(dy) per channel` states `[2048, 2048]`;
 *    `HCCL_E_TIMEOUT rendezvous: rank 1 never joined [...]` is held whole, as its message
 *    holds a colon). The whole printed text is compared: never a prefix of it.
 * 4. A comment that opens with `(` is an explanation only (`// (no CANN here)`, in a catch
 *    branch that does not run on the simulator): nothing is compared, and its call need not run.
 *
 * @module
 */

/** `text` with its whitespace normalised by rule 1. */
export function normaliseOutput(text: string): string {
  return text.replace(/\s+/g, " ").trim()
    .replace(/([[{(]) /g, "$1")
    .replace(/ ([\]}),])/g, "$1");
}

/** Whether `comment` states no output (rule 4): it opens with `(`. */
export function isExplanation(comment: string): boolean {
  return comment.trimStart().startsWith("(");
}

/**
 * What `comment` may state (rule 3): itself, and itself cut before each separator (`: `, ` (`,
 * `; `) that lies outside brackets and double quotes, longest first; empty cuts are left out.
 */
export function statedValues(comment: string): string[] {
  const values = [comment.trim()];
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < comment.length; i++) {
    const c = comment[i];
    if (quoted) {
      if (c === "\\") i++;
      else if (c === '"') quoted = false;
      continue;
    }
    const pair = comment.slice(i, i + 2);
    if (depth === 0 && (pair === ": " || pair === " (" || pair === "; ")) {
      const cut = comment.slice(0, i).trim();
      if (cut !== "") values.push(cut);
    }
    if (c === '"') quoted = true;
    else if ("[{(".includes(c)) depth++;
    else if ("]})".includes(c)) depth = Math.max(0, depth - 1);
  }
  return [...new Set(values)];
}

/** A regular expression matching the whole normalised printed text that `value` states. */
function valuePattern(value: string): RegExp {
  const parts = normaliseOutput(value).split("...");
  const escaped = parts.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${escaped.join(".*")}$`, "s");
}

/**
 * Whether `printed` (one console.log call's text, as Deno printed it) is what `comment` states
 * by rules 1-3. An explanation-only comment (rule 4) states nothing: the caller skips it.
 */
export function outputMatches(printed: string, comment: string): boolean {
  const text = normaliseOutput(printed);
  return statedValues(comment).some((value) => valuePattern(value).test(text));
}
