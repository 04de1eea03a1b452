/**
 * The command-line contract of every task script (scripts/ and bench/): `--help` prints the
 * usage and exits 0; an unknown flag or a bad value prints one line naming it and exits 2; an
 * error the user can act on (a refused argument, a bad environment value, a missing library)
 * prints one line and exits 1. Nothing prints a stack trace for those.
 *
 * @module
 */

import { parseArgs, type ParseArgsConfig } from "node:util";
import { AclError, AclnnError, HcclError } from "../src/errors.ts";

/** What a command declares: its name (as `deno task <name>`), usage text and flags. */
export interface Command<O extends NonNullable<ParseArgsConfig["options"]>> {
  /** The task name, e.g. `bench:cpu`. */
  readonly name: string;
  /** The usage text: the synopsis line, then one line per flag. */
  readonly usage: string;
  /** node:util parseArgs options (`--help` / `-h` are handled before them). */
  readonly options: O;
}

/**
 * `message` on one line: its lines trimmed and joined, a list's entries separated by "; " (a
 * line that ends in ":" introduces what follows), so an error that lists every path tried keeps
 * the list.
 */
export function oneLine(message: string): string {
  const lines = message.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  let text = lines[0] ?? "";
  for (let i = 1; i < lines.length; i++) {
    text += (lines[i - 1].endsWith(":") ? " " : "; ") + lines[i];
  }
  return text;
}

/** Prints `<name>: <message>` and a pointer to `--help`, then exits 2. */
export function usageError(name: string, message: string): never {
  console.error(`${name}: ${oneLine(message)} (see deno task ${name} --help)`);
  Deno.exit(2);
}

/**
 * The flags of `command` from `Deno.args` (a `--` that `deno task` passes through is
 * dropped): `--help` (or `-h`) anywhere prints the usage and exits 0; an unknown flag, a
 * missing value or a positional argument exits 2 with one line.
 */
export function parseCommand<O extends NonNullable<ParseArgsConfig["options"]>>(
  command: Command<O>,
  args: readonly string[] = Deno.args,
) {
  reportUserErrors(command.name);
  const given = args.filter((a) => a !== "--");
  if (given.includes("--help") || given.includes("-h")) {
    console.log(command.usage.trimEnd());
    Deno.exit(0);
  }
  try {
    return parseArgs({
      args: given,
      options: command.options,
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (e) {
    usageError(command.name, (e as Error).message);
  }
}

/** A positive integer flag value, or a usage error naming the flag. */
export function positiveInteger(name: string, flag: string, text: string): number {
  const value = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || !(value > 0)) {
    usageError(name, `--${flag} must be a positive integer, got "${text}"`);
  }
  return value;
}

/** A positive number flag value, or a usage error naming the flag. */
export function positiveNumber(name: string, flag: string, text: string): number {
  const value = Number(text);
  if (!(value > 0) || !Number.isFinite(value)) {
    usageError(name, `--${flag} must be a positive number, got "${text}"`);
  }
  return value;
}

/** Each comma-separated item of `text`, which must be one of `allowed`. */
export function listOf<T extends string>(
  name: string,
  flag: string,
  text: string,
  allowed: readonly T[],
): T[] {
  const items = text.split(",").map((s) => s.trim()).filter((s) => s !== "");
  const bad = items.find((s) => !allowed.includes(s as T));
  if (bad !== undefined || items.length === 0) {
    usageError(name, `--${flag} takes ${allowed.join(", ")}; got "${bad ?? text}"`);
  }
  return items as T[];
}

/** Errors a user can act on: one line, no stack trace. */
function isUserError(e: unknown): e is Error {
  return e instanceof AclnnError || e instanceof AclError || e instanceof HcclError ||
    e instanceof RangeError || e instanceof Deno.errors.NotCapable;
}

/**
 * From now on an uncaught error the user can act on (a bad environment value found at the
 * first allocation, a refused argument) ends the process with one line `<name>: <message>`
 * ({@linkcode oneLine}) and exit code 1; other errors (bugs) keep Deno's report with the stack.
 */
export function reportUserErrors(name: string): void {
  const report = (error: unknown, event: Event) => {
    if (!isUserError(error)) return;
    event.preventDefault();
    console.error(`${name}: ${oneLine(error.message)}`);
    Deno.exit(1);
  };
  globalThis.addEventListener("error", (e) => report((e as ErrorEvent).error, e));
  globalThis.addEventListener(
    "unhandledrejection",
    (e) => report((e as PromiseRejectionEvent).reason, e),
  );
}

/**
 * Runs the command's body; an error the user can act on prints `<name>: <message>` (on one
 * line: {@linkcode oneLine}) and exits 1, anything else (a bug) propagates with its stack.
 */
export async function runCommand(name: string, body: () => unknown): Promise<void> {
  try {
    await body();
  } catch (e) {
    if (!isUserError(e)) throw e;
    console.error(`${name}: ${oneLine(e.message)}`);
    Deno.exit(1);
  }
}
