/**
 * Finding and opening the CANN shared libraries.
 *
 * Search order (first directory where the whole set opens wins):
 * 1. the `libDir` option,
 * 2. `$ACLNN_NORM_LIB_DIR`,
 * 3. `$ASCEND_HOME_PATH/lib64`, then `$ASCEND_TOOLKIT_HOME/lib64` (exported by `set_env.sh`),
 * 4. `/usr/local/Ascend/cann/lib64` (CANN >= 8.5), `/usr/local/Ascend/ascend-toolkit/latest/lib64`,
 * 5. the dynamic loader's own path (bare file names: `LD_LIBRARY_PATH`, ld.so.cache).
 *
 * In each directory the runtime is `libacl_rt.so` (CANN >= 8.5) or else `libascendcl.so`, then
 * `libnnopbase.so`, then the operators from `libopapi_nn.so` + `libopapi_math.so` or else the
 * single `libopapi.so` of older releases. They are opened in that (dependency) order, so the
 * DT_NEEDED entries of the later ones resolve to the objects already loaded even when
 * `LD_LIBRARY_PATH` does not name the directory. Opened sets are cached per directory for the
 * life of the process and never closed (the ACL runtime keeps process-wide state).
 *
 * @module
 */

import { AclError } from "./errors.ts";
import {
  type NnopbaseSymbols,
  nnopbaseSymbols,
  opapiMathSymbols,
  opapiNnSymbols,
  type OpapiSymbols,
  opapiSymbols,
  type RuntimeSymbols,
  runtimeSymbols,
} from "./symbols.ts";

/** The environment variable naming a directory that holds the CANN libraries. */
export const LIB_DIR_ENV = "ACLNN_NORM_LIB_DIR";

/** Where {@linkcode openCannLibraries} looks. */
export interface LibraryOptions {
  /** A directory holding libacl_rt.so/libascendcl.so, libnnopbase.so and libopapi*.so. */
  libDir?: string;
}

/** What a library file is for. */
export type LibraryRole = "runtime" | "nnopbase" | "opapi_nn" | "opapi_math" | "opapi";

/** One dlopen attempt. */
export interface LibraryAttempt {
  /** Which search location this attempt belongs to, e.g. `libDir option` or `loader path`. */
  readonly source: string;
  /** What the library is for. */
  readonly role: LibraryRole;
  /** The path (or bare file name) passed to dlopen. */
  readonly path: string;
  /** The dlopen error, or undefined when it opened. */
  readonly error?: string;
}

/** A search location that could not be tried (e.g. its environment variable is unset). */
export interface SkippedLocation {
  /** The location, e.g. `$ASCEND_HOME_PATH/lib64`. */
  readonly source: string;
  /** Why it was skipped. */
  readonly reason: string;
}

/** A library that was opened. */
export interface OpenedLibrary {
  /** What the library is for. */
  readonly role: LibraryRole;
  /** The path passed to dlopen. */
  readonly path: string;
  /** Symbols marked optional that this library does not export. */
  readonly missingOptional: readonly string[];
}

/** Result of library discovery, successful or not. Never throws; for the doctor and tests. */
export interface DiscoveryReport {
  /** Whether a complete set was opened. */
  readonly found: boolean;
  /** The directory the set came from (null: the loader's path resolved bare names). */
  readonly dir: string | null;
  /** Where it was found, e.g. `$ASCEND_HOME_PATH/lib64`. */
  readonly source: string | null;
  /** The libraries opened, in dependency order. */
  readonly libraries: readonly OpenedLibrary[];
  /** Every dlopen attempt, in order, including failed ones. */
  readonly attempts: readonly LibraryAttempt[];
  /** Locations that were not tried and why. */
  readonly skipped: readonly SkippedLocation[];
  /** The error that discovery would throw, when nothing was found. */
  readonly error?: string;
}

/** The opened CANN libraries: typed symbol tables by role. */
export interface CannLibraries {
  /** The directory of the set (null: opened by bare name through the loader path). */
  readonly dir: string | null;
  /** The ACL runtime (aclInit, aclrt*). */
  readonly runtime: Deno.DynamicLibrary<RuntimeSymbols>["symbols"];
  /** Descriptors and executors (aclCreateTensor, ...). */
  readonly nnopbase: Deno.DynamicLibrary<NnopbaseSymbols>["symbols"];
  /** The aclnn operators, merged over libopapi_nn/libopapi_math or libopapi. */
  readonly ops: Deno.DynamicLibrary<OpapiSymbols>["symbols"];
  /** How the set was found. */
  readonly report: DiscoveryReport;
}

const RUNTIME_FILES = ["libacl_rt.so", "libascendcl.so"] as const;
const NNOPBASE_FILE = "libnnopbase.so";
const OPAPI_SPLIT_FILES = ["libopapi_nn.so", "libopapi_math.so"] as const;
const OPAPI_LEGACY_FILE = "libopapi.so";

/** Default install roots' lib64 directories, newest layout first. */
export const DEFAULT_LIB_DIRS: readonly string[] = Object.freeze([
  "/usr/local/Ascend/cann/lib64",
  "/usr/local/Ascend/ascend-toolkit/latest/lib64",
]);

const HINT = "Install CANN and `source <install root>/set_env.sh` (e.g. " +
  "/usr/local/Ascend/ascend-toolkit/set_env.sh), or pass openAscend({ libDir }) or set " +
  `${LIB_DIR_ENV} to the directory holding libacl_rt.so (or libascendcl.so), libnnopbase.so ` +
  "and libopapi_nn.so/libopapi_math.so (or libopapi.so).";

/** Turns a missing-permission error into an {@linkcode AclError} that names the flag. */
export function permissionError(error: unknown, flag: string, what: string): unknown {
  if (error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied) {
    const detail = error instanceof Error ? error.message : String(error);
    return new AclError(
      0,
      `${what} needs the ${flag} permission: run deno with ${flag} (${detail})`,
      { cause: error },
    );
  }
  return error;
}

function readEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch (e) {
    throw permissionError(e, "--allow-env", `reading $${name} to find the CANN libraries`);
  }
}

function trimDir(dir: string): string {
  return dir.length > 1 ? dir.replace(/\/+$/, "") : dir;
}

function join(dir: string | null, file: string): string {
  return dir === null ? file : `${dir}/${file}`;
}

interface Candidate {
  readonly source: string;
  readonly dir: string | null;
}

/** Search locations in order; env vars are read lazily (only when earlier ones failed). */
function* candidates(options: LibraryOptions, skipped: SkippedLocation[]): Generator<Candidate> {
  if (options.libDir !== undefined) {
    yield { source: "libDir option", dir: trimDir(options.libDir) };
  }
  for (
    const [name, suffix] of [[LIB_DIR_ENV, ""], ["ASCEND_HOME_PATH", "/lib64"], [
      "ASCEND_TOOLKIT_HOME",
      "/lib64",
    ]] as const
  ) {
    const value = readEnv(name);
    const source = `$${name}${suffix}`;
    if (value === undefined || value === "") {
      skipped.push({ source, reason: `${name} is not set` });
    } else yield { source, dir: trimDir(value) + suffix };
  }
  for (const dir of DEFAULT_LIB_DIRS) yield { source: "default install root", dir };
  yield { source: "loader path (LD_LIBRARY_PATH, ld.so.cache)", dir: null };
}

function dlopenError(e: unknown, path: string): string {
  let text = (e instanceof Error ? e.message : String(e)).replace(/\s+/g, " ").trim();
  // Deno wraps dlerror() as "Could not open library: Could not open library: <path>: <why>".
  text = text.replaceAll("Could not open library: ", "");
  if (text.startsWith(`${path}: `)) text = text.slice(path.length + 2);
  return text;
}

function missingOptional(
  symbols: Record<string, unknown>,
  table: Deno.ForeignLibraryInterface,
): string[] {
  return Object.keys(table).filter((name) => symbols[name] === null);
}

/** Opens `path`; NotCapable (no --allow-ffi) propagates as a clear AclError. */
function tryOpen<S extends Deno.ForeignLibraryInterface>(
  candidate: Candidate,
  role: LibraryRole,
  file: string,
  table: S,
  attempts: LibraryAttempt[],
): Deno.DynamicLibrary<S> | null {
  const path = join(candidate.dir, file);
  try {
    const lib = Deno.dlopen(path, table);
    attempts.push({ source: candidate.source, role, path });
    return lib;
  } catch (e) {
    if (e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied) {
      throw permissionError(e, "--allow-ffi", `opening ${path}`);
    }
    attempts.push({ source: candidate.source, role, path, error: dlopenError(e, path) });
    return null;
  }
}

interface OpenedSet {
  readonly libs: CannLibraries;
  readonly opened: OpenedLibrary[];
}

/** Tries one directory; closes what it opened when the set is incomplete. */
function openSet(candidate: Candidate, attempts: LibraryAttempt[]): OpenedSet | null {
  const handles: Deno.DynamicLibrary<Deno.ForeignLibraryInterface>[] = [];
  const opened: OpenedLibrary[] = [];
  const fail = () => {
    for (const h of handles.reverse()) h.close();
    return null;
  };
  const note = <S extends Deno.ForeignLibraryInterface>(
    lib: Deno.DynamicLibrary<S>,
    role: LibraryRole,
    file: string,
    table: S,
  ) => {
    handles.push(lib as unknown as Deno.DynamicLibrary<Deno.ForeignLibraryInterface>);
    opened.push({
      role,
      path: join(candidate.dir, file),
      missingOptional: missingOptional(lib.symbols as Record<string, unknown>, table),
    });
  };

  let runtime: Deno.DynamicLibrary<RuntimeSymbols> | null = null;
  for (const file of RUNTIME_FILES) {
    runtime = tryOpen(candidate, "runtime", file, runtimeSymbols, attempts);
    if (runtime) {
      note(runtime, "runtime", file, runtimeSymbols);
      break;
    }
  }
  if (!runtime) return fail();

  const nnopbase = tryOpen(candidate, "nnopbase", NNOPBASE_FILE, nnopbaseSymbols, attempts);
  if (!nnopbase) return fail();
  note(nnopbase, "nnopbase", NNOPBASE_FILE, nnopbaseSymbols);

  let ops: Deno.DynamicLibrary<OpapiSymbols>["symbols"] | null = null;
  const nn = tryOpen(candidate, "opapi_nn", OPAPI_SPLIT_FILES[0], opapiNnSymbols, attempts);
  const math = nn
    ? tryOpen(candidate, "opapi_math", OPAPI_SPLIT_FILES[1], opapiMathSymbols, attempts)
    : null;
  if (nn && math) {
    note(nn, "opapi_nn", OPAPI_SPLIT_FILES[0], opapiNnSymbols);
    note(math, "opapi_math", OPAPI_SPLIT_FILES[1], opapiMathSymbols);
    ops = { ...nn.symbols, ...math.symbols };
  } else {
    nn?.close();
    const legacy = tryOpen(candidate, "opapi", OPAPI_LEGACY_FILE, opapiSymbols, attempts);
    if (legacy) {
      note(legacy, "opapi", OPAPI_LEGACY_FILE, opapiSymbols);
      ops = legacy.symbols;
    }
  }
  if (!ops) return fail();

  const report: DiscoveryReport = {
    found: true,
    dir: candidate.dir,
    source: candidate.source,
    libraries: opened,
    attempts: [...attempts],
    skipped: [],
  };
  return {
    libs: { dir: candidate.dir, runtime: runtime.symbols, nnopbase: nnopbase.symbols, ops, report },
    opened,
  };
}

/** Opened sets by directory (`""` for the loader path). */
const cache = new Map<string, CannLibraries>();
/** The set that automatic discovery (no libDir) resolved to. */
let autoDiscovered: CannLibraries | undefined;

function cacheKey(dir: string | null): string {
  return dir ?? "";
}

function formatFailure(trail: readonly (LibraryAttempt | SkippedLocation)[]): string {
  const lines = ["Could not open the CANN libraries. Tried, in order:"];
  let source = "";
  for (const entry of trail) {
    if ("reason" in entry) {
      lines.push(`  ${entry.source}: skipped (${entry.reason})`);
      source = "";
      continue;
    }
    if (entry.source !== source) {
      source = entry.source;
      lines.push(`  ${source}:`);
    }
    lines.push(`    ${entry.path}: ${entry.error ?? "opened (but the set is incomplete)"}`);
  }
  lines.push(HINT);
  return lines.join("\n");
}

function discover(options: LibraryOptions): { libs?: CannLibraries; report: DiscoveryReport } {
  const attempts: LibraryAttempt[] = [];
  const skipped: SkippedLocation[] = [];
  const trail: (LibraryAttempt | SkippedLocation)[] = [];
  for (const candidate of candidates(options, skipped)) {
    const cached = cache.get(cacheKey(candidate.dir));
    if (cached) return { libs: cached, report: cached.report };
    const before = attempts.length;
    const set = openSet(candidate, attempts);
    trail.push(...skipped.filter((s) => !trail.includes(s)), ...attempts.slice(before));
    if (set) {
      const report: DiscoveryReport = { ...set.libs.report, attempts, skipped };
      const libs: CannLibraries = { ...set.libs, report };
      cache.set(cacheKey(candidate.dir), libs);
      return { libs, report };
    }
  }
  trail.push(...skipped.filter((s) => !trail.includes(s)));
  const error = formatFailure(trail);
  return {
    report: { found: false, dir: null, source: null, libraries: [], attempts, skipped, error },
  };
}

/**
 * Finds and opens the CANN libraries (cached per directory). Throws one {@linkcode AclError}
 * (code 0) listing every path tried with its dlopen error, or naming the missing permission.
 */
export function openCannLibraries(options: LibraryOptions = {}): CannLibraries {
  if (options.libDir === undefined && autoDiscovered) return autoDiscovered;
  const { libs, report } = discover(options);
  if (!libs) throw new AclError(0, report.error ?? "Could not open the CANN libraries");
  if (options.libDir === undefined) autoDiscovered = libs;
  return libs;
}

/**
 * Reports where the CANN libraries are (or every path tried when they are not), opening them
 * as {@linkcode openCannLibraries} would. Never throws for a missing install; a missing
 * permission is reported as the error.
 *
 * @example
 * ```ts
 * import { describeLibraries } from "@aclnn/norm";
 * const report = describeLibraries();
 * console.log(report.found ? `CANN in ${report.dir}` : report.error);
 * ```
 */
export function describeLibraries(options: LibraryOptions = {}): DiscoveryReport {
  try {
    if (options.libDir === undefined && autoDiscovered) return autoDiscovered.report;
    const { libs, report } = discover(options);
    if (libs && options.libDir === undefined) autoDiscovered = libs;
    return report;
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e);
    return {
      found: false,
      dir: null,
      source: null,
      libraries: [],
      attempts: [],
      skipped: [],
      error,
    };
  }
}
