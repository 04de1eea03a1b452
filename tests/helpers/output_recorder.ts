/**
 * What each doc example's `console.log` calls print, recorded where they are called: the doc
 * examples' runner (build/doc_examples/run.ts, written by tests/tools/doc_examples.test.ts)
 * calls `recordConsoleLog` before it imports the blocks, and the test reads the child's stdout
 * back with `recordedOutputs`.
 *
 * Contract: a `console.log` call whose direct caller is a line of a module under the recorded
 * folder prints, on stdout, a begin line naming that module and line, the call's own text
 * exactly as Deno's console.log prints it (its lines), then an end line; any other call (the
 * library's, the runner's) prints as before, unmarked. The caller is read from the call's stack
 * (Deno maps it to the module's TypeScript lines), so the blocks run as written: nothing in
 * them is rewritten.
 *
 * @module
 */

const BEGIN = "\u001edoc-output ";
const END = "\u001edoc-output-end";

/** The module and line (1-based) of the frame `depth` below this function's caller. */
function callerOf(stack: string | undefined, depth: number): [string, number] | undefined {
  const frames = (stack ?? "").split("\n").filter((l) => l.trimStart().startsWith("at "));
  const match = /(file:\/\/[^\s()]+):(\d+):\d+\)?$/.exec(frames[depth] ?? "");
  return match ? [match[1], Number(match[2])] : undefined;
}

/**
 * Wraps `console.log` so that the calls made by modules under `folder` (a file: URL ending in
 * `/`) are marked as this module's contract says, each with its module's name relative to
 * `folder`.
 */
export function recordConsoleLog(folder: string): void {
  const log = console.log.bind(console);
  console.log = (...args: unknown[]) => {
    const at = callerOf(new Error().stack, 1); // 0: this wrapper; 1: the call's line
    if (at === undefined || !at[0].startsWith(folder)) return log(...args);
    log(`${BEGIN}${at[0].slice(folder.length)}:${at[1]}`);
    log(...args);
    log(END);
  };
}

/**
 * The marked calls in `stdout`, keyed `<module>:<line>`, each call's printed text in the order
 * they ran (a call in a loop prints more than once).
 */
export function recordedOutputs(stdout: string): Map<string, string[]> {
  const outputs = new Map<string, string[]>();
  const lines = stdout.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i].startsWith(BEGIN)) continue;
    const key = lines[i].slice(BEGIN.length);
    const end = lines.indexOf(END, i + 1);
    if (end < 0) throw new Error(`doc output of ${key} not closed`);
    outputs.set(key, [...outputs.get(key) ?? [], lines.slice(i + 1, end).join("\n")]);
    i = end;
  }
  return outputs;
}
