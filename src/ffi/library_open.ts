/**
 * Opening one directory's CANN libraries: each file checked against its ELF headers first (a
 * truncated `.so` makes the loader fault instead of failing), its DT_NEEDED entries from the
 * same directory opened before it (CANN's libraries carry no RPATH), and the runtime,
 * nnopbase and operator libraries opened as one set. Every attempt is recorded for the report.
 * Opened files stay loaded for the life of the process.
 *
 * @module
 */

import { type ElfDynamicInfo, fileSource, inspectElf } from "./elf.ts";
import { AclError, permissionError } from "./errors.ts";
import {
  type CannLibraries,
  type DiscoveryReport,
  type LibraryAttempt,
  type LibraryRole,
  NNOPBASE_FILE,
  OPAPI_LEGACY_FILE,
  OPAPI_MATH_FILE,
  OPAPI_NN_FILE,
  type OpenedLibrary,
  RUNTIME_FILES,
  type SkippedLocation,
} from "./library_types.ts";
import {
  nnopbaseSymbols,
  opapiMathSymbols,
  opapiNnSymbols,
  type OpapiSymbols,
  opapiSymbols,
  type RuntimeSymbols,
  runtimeSymbols,
} from "./symbols.ts";

export function trimDir(dir: string): string {
  return dir.length > 1 ? dir.replace(/\/+$/, "") : dir;
}

export function join(dir: string | null, file: string): string {
  return dir === null ? file : `${dir}/${file}`;
}

export interface Candidate {
  readonly source: string;
  readonly dir: string | null;
  /** The user named this directory: failures are errors that name it, never replaced. */
  readonly explicit: boolean;
}

function dlopenError(e: unknown, path: string): string {
  let text = (e instanceof Error ? e.message : String(e)).replace(/\s+/g, " ").trim();
  // Deno wraps dlerror() as "Could not open library: Could not open library: <path>: <why>".
  text = text.replaceAll("Could not open library: ", "");
  if (text.startsWith(`${path}: `)) text = text.slice(path.length + 2);
  return text;
}

export function missingOptional(
  symbols: Record<string, unknown>,
  table: Deno.ForeignLibraryInterface,
): string[] {
  return Object.keys(table).filter((name) => symbols[name] === null);
}

/** Every file opened so far in this process (dependencies included), by path. */
const loaded = new Map<string, Deno.DynamicLibrary<Deno.ForeignLibraryInterface>>();

/**
 * Stat + ELF check of `path`: the problem in words, or its dynamic info. A missing
 * --allow-read becomes the AclError that names the flag.
 */
function checkFile(path: string): { info?: ElfDynamicInfo; problem?: string } {
  let file: Deno.FsFile;
  try {
    const stat = Deno.statSync(path);
    if (!stat.isFile) return { problem: "is not a regular file" };
    file = Deno.openSync(path, { read: true });
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      return { problem: "cannot open shared object file: No such file or directory" };
    }
    const denied = permissionError(e, "--allow-read", `checking ${path}`);
    if (denied !== e) throw denied;
    return { problem: e instanceof Error ? e.message : String(e) };
  }
  try {
    const check = inspectElf(fileSource(file));
    return check.ok ? { info: check.info } : { problem: `${check.problem} (not loaded)` };
  } catch (e) {
    return { problem: `cannot be read: ${e instanceof Error ? e.message : String(e)}` };
  } finally {
    file.close();
  }
}

/** Whether `dir/name` exists (a missing permission propagates as the flag's AclError). */
export function exists(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    const denied = permissionError(e, "--allow-read", `checking ${path}`);
    if (denied !== e) throw denied;
    return false;
  }
}

/** dlopen with a clear AclError for a missing --allow-ffi (scoped or not). */
function dlopen<S extends Deno.ForeignLibraryInterface>(
  path: string,
  table: S,
): Deno.DynamicLibrary<S> {
  try {
    return Deno.dlopen(path, table);
  } catch (e) {
    const denied = permissionError(
      e,
      "--allow-ffi",
      `opening ${path} (a path-scoped --allow-ffi must include the CANN library directory)`,
    );
    if (denied !== e) throw denied;
    throw e;
  }
}

/** Per-candidate state: the attempts so far and the dependencies opened for it. */
export interface Walk {
  readonly candidate: Candidate;
  readonly attempts: LibraryAttempt[];
  readonly dependencies: string[];
  /** Files being opened (guards against DT_NEEDED cycles). */
  readonly opening: Set<string>;
}

/**
 * Opens the DT_NEEDED entries of a library that exist in its own directory, dependencies
 * first. Returns the first problem, or undefined when every in-directory dependency opened.
 */
function openDependencies(walk: Walk, info: ElfDynamicInfo): string | undefined {
  const dir = walk.candidate.dir;
  if (dir === null) return undefined;
  for (const name of info.needed) {
    const path = join(dir, name);
    if (loaded.has(path) || walk.opening.has(path) || !exists(path)) continue;
    walk.opening.add(path);
    const problem = openChecked(walk, "dependency", path, {});
    walk.opening.delete(path);
    if (problem !== undefined) return `${name} (needed) ${problem}`;
    walk.dependencies.push(path);
  }
  return undefined;
}

/**
 * Checks, opens the dependencies of, and dlopens `path` with `table` (cached per path).
 * Records the attempt; returns the problem, or undefined on success.
 */
function openChecked(
  walk: Walk,
  role: LibraryRole,
  path: string,
  table: Deno.ForeignLibraryInterface,
): string | undefined {
  const record = (error?: string) => {
    walk.attempts.push({ source: walk.candidate.source, role, path, error });
    return error;
  };
  if (walk.candidate.dir !== null) {
    const { info, problem } = checkFile(path);
    if (problem !== undefined) return record(problem);
    const dependencyProblem = openDependencies(walk, info!);
    if (dependencyProblem !== undefined) return record(dependencyProblem);
  }
  if (Object.keys(table).length === 0 && loaded.has(path)) return record();
  try {
    loaded.set(path, dlopen(path, table));
    return record();
  } catch (e) {
    if (e instanceof AclError) throw e;
    return record(dlopenError(e, path));
  }
}

/** Opens one library of the set with its symbol table; null when it did not open. */
export function openLibrary<S extends Deno.ForeignLibraryInterface>(
  walk: Walk,
  role: LibraryRole,
  file: string,
  table: S,
): Deno.DynamicLibrary<S> | null {
  const path = join(walk.candidate.dir, file);
  if (openChecked(walk, role, path, table) !== undefined) return null;
  return loaded.get(path) as unknown as Deno.DynamicLibrary<S>;
}

export interface OpenedSet {
  readonly libs: CannLibraries;
}

/** Tries one directory. Libraries that opened stay loaded (harmless; reused on a retry). */
export function openSet(walk: Walk, skipped: SkippedLocation[]): OpenedSet | null {
  const opened: OpenedLibrary[] = [];
  const note = <S extends Deno.ForeignLibraryInterface>(
    lib: Deno.DynamicLibrary<S>,
    role: LibraryRole,
    file: string,
    table: S,
  ) => {
    opened.push({
      role,
      path: join(walk.candidate.dir, file),
      missingOptional: missingOptional(lib.symbols as Record<string, unknown>, table),
    });
  };

  let runtime: Deno.DynamicLibrary<RuntimeSymbols> | null = null;
  for (const file of RUNTIME_FILES) {
    runtime = openLibrary(walk, "runtime", file, runtimeSymbols);
    if (runtime) {
      note(runtime, "runtime", file, runtimeSymbols);
      break;
    }
  }
  if (!runtime) return null;

  const nnopbase = openLibrary(walk, "nnopbase", NNOPBASE_FILE, nnopbaseSymbols);
  if (!nnopbase) return null;
  note(nnopbase, "nnopbase", NNOPBASE_FILE, nnopbaseSymbols);

  let ops: Deno.DynamicLibrary<OpapiSymbols>["symbols"] | null = null;
  // libopapi_nn.so needs libopapi_math.so: open math first.
  const math = openLibrary(walk, "opapi_math", OPAPI_MATH_FILE, opapiMathSymbols);
  const nn = math ? openLibrary(walk, "opapi_nn", OPAPI_NN_FILE, opapiNnSymbols) : null;
  if (nn && math) {
    note(math, "opapi_math", OPAPI_MATH_FILE, opapiMathSymbols);
    note(nn, "opapi_nn", OPAPI_NN_FILE, opapiNnSymbols);
    ops = { ...nn.symbols, ...math.symbols };
  } else {
    const legacy = openLibrary(walk, "opapi", OPAPI_LEGACY_FILE, opapiSymbols);
    if (legacy) {
      note(legacy, "opapi", OPAPI_LEGACY_FILE, opapiSymbols);
      ops = legacy.symbols;
    }
  }
  if (!ops) return null;

  const dir = walk.candidate.dir;
  let resolvedDir: string | null = null;
  if (dir !== null) {
    try {
      resolvedDir = Deno.realPathSync(dir);
    } catch {
      resolvedDir = dir;
    }
  }
  const report: DiscoveryReport = {
    found: true,
    dir,
    resolvedDir,
    source: walk.candidate.source,
    libraries: opened,
    dependencies: [...walk.dependencies],
    attempts: [...walk.attempts],
    skipped: [...skipped],
  };
  return {
    libs: { dir, runtime: runtime.symbols, nnopbase: nnopbase.symbols, ops, report },
  };
}
