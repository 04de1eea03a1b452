/**
 * Which `console.log` calls of a doc example state their output, and what they state: the call
 * whose line is a whole `console.log(...);` statement (possibly after an `if (...)` or inside a
 * `for`) followed by a `// <stated>` comment, or, when that line has no comment (it would be too
 * long), a line right after it holding only a `// <stated>` comment. A line with no such comment
 * states nothing and is not compared. `outputFailures` holds each stated call to what it printed
 * when the block ran, by the rule of tests/helpers/output_rule.ts: every time it printed, and
 * it must have printed unless its comment is an explanation only.
 *
 * @module
 */

import { isExplanation, outputMatches } from "./output_rule.ts";

/** One call of a block that states its output. */
export interface StatedOutput {
  /** The call's line in the block's code, 0-based. */
  readonly line: number;
  /** The comment after `//`, trimmed. */
  readonly comment: string;
}

const CALL = "console.log(";
/** A statement that ends the line, then its comment: `...); // <stated>`. */
const TRAILING = /\);\s*\/\/(.*)$/;
/** A line that is only a comment. */
const COMMENT_LINE = /^\s*\/\/(.*)$/;

/** The calls of `code` (a block's code) that state their output, in line order. */
export function statedOutputs(code: string): StatedOutput[] {
  const lines = code.split("\n");
  const stated: StatedOutput[] = [];
  lines.forEach((text, line) => {
    const at = text.indexOf(CALL);
    if (at < 0 || COMMENT_LINE.test(text)) return;
    const trailing = TRAILING.exec(text);
    const below = text.trimEnd().endsWith(");") ? COMMENT_LINE.exec(lines[line + 1] ?? "") : null;
    const comment = (trailing ?? below)?.[1].trim();
    if (comment === undefined) return;
    if (text.indexOf(CALL, at + 1) >= 0) {
      throw new Error(`line ${line + 1} states an output but holds two console.log calls`);
    }
    stated.push({ line, comment });
  });
  return stated;
}

/**
 * What is wrong with the stated outputs of `code`: one line per call that printed other than
 * its comment states (each time it did) or that states an output but never printed.
 * `printed(line)` gives the texts the call on `line` (0-based) printed, in order; `where(line)`
 * names that line in messages.
 */
export function outputFailures(
  code: string,
  printed: (line: number) => readonly string[],
  where: (line: number) => string,
): string[] {
  const failures: string[] = [];
  for (const { line, comment } of statedOutputs(code)) {
    if (isExplanation(comment)) continue;
    const texts = printed(line);
    if (texts.length === 0) failures.push(`${where(line)}: states "${comment}" but never printed`);
    for (const text of texts) {
      if (!outputMatches(text, comment)) {
        failures.push(`${where(line)}: printed "${text}", its comment states "${comment}"`);
      }
    }
  }
  return failures;
}
