/**
 * Finding and opening the CANN shared libraries.
 *
 * Where (first location whose whole set opens wins):
 * 1. the `libDir` option, else `$ACLNN_NORM_LIB_DIR`: an explicit choice. Only that directory
 *    is tried; when it is missing, relative, empty or incomplete the error names it, and no
 *    other location silently replaces it;
 * 2. `$ASCEND_HOME_PATH/lib64`, then `$ASCEND_TOOLKIT_HOME/lib64` (exported by `set_env.sh`);
 * 3. `/usr/local/Ascend/cann/lib64` (CANN >= 8.5), `/usr/local/Ascend/ascend-toolkit/latest/lib64`;
 * 4. only when asked for (`useLoaderPath`, or `$ACLNN_NORM_USE_LOADER_PATH=1`): bare file names
 *    resolved by the dynamic loader (`LD_LIBRARY_PATH`, ld.so.cache).
 *
 * Every directory must be an absolute path: a relative one (e.g. `ACLNN_NORM_LIB_DIR=.`) would
 * load whatever a working directory holds, so it is refused (explicit) or skipped (hint).
 *
 * What: the runtime is `libacl_rt.so` (CANN >= 8.5) or else `libascendcl.so`, then
 * `libnnopbase.so`, then the operators from `libopapi_math.so` + `libopapi_nn.so` or else the
 * single `libopapi.so` of older releases.
 *
 * How: CANN's shared objects carry no RPATH, so `dlopen("<dir>/libopapi_nn.so")` only works if
 * every library it needs is already loaded (glibc reuses a loaded object whose SONAME matches a
 * DT_NEEDED entry) or on `LD_LIBRARY_PATH`, which `set_env.sh` sets but which is read only at
 * process start. So before opening a library, each of its DT_NEEDED entries that exists in the
 * same directory is opened first, recursively (dependency order). Libraries outside it (the
 * driver's, libc) are left to the loader; when one is missing, the dlopen error names it and
 * the hint explains `set_env.sh`. Every file is checked against its ELF headers before
 * `dlopen`, because a truncated `.so` makes the loader fault (SIGBUS) instead of failing.
 *
 * Opened sets are cached per directory for the life of the process and never closed (the
 * ACL runtime keeps process-wide state).
 *
 * @module
 */

import { AclError, permissionError } from "../errors.ts";
import {
  type Candidate,
  exists,
  join,
  missingOptional,
  openLibrary,
  openSet,
  trimDir,
  type Walk,
} from "./library_open.ts";
import {
  type CannLibraries,
  DEFAULT_LIB_DIRS,
  type DiscoveryReport,
  LIB_DIR_ENV,
  type LibraryAttempt,
  type LibraryOptions,
  LOADER_PATH_ENV,
  RUNTIME_FILES,
  type SkippedLocation,
} from "./library_types.ts";
import { type HcclSymbols, hcclSymbols } from "./symbols.ts";

export { DEFAULT_LIB_DIRS, LIB_DIR_ENV, LOADER_PATH_ENV } from "./library_types.ts";
export type {
  CannLibraries,
  DiscoveryReport,
  LibraryAttempt,
  LibraryOptions,
  LibraryRole,
  OpenedLibrary,
  SkippedLocation,
} from "./library_types.ts";

const HINT = "Install CANN and `source <install root>/set_env.sh` before starting deno (e.g. " +
  "/usr/local/Ascend/ascend-toolkit/set_env.sh; it also puts the driver libraries on " +
  "LD_LIBRARY_PATH, which the loader reads only at process start), or pass " +
  `openAscend({ libDir }) or set ${LIB_DIR_ENV} to the absolute directory holding ` +
  "libacl_rt.so (or libascendcl.so), libnnopbase.so and libopapi_nn.so/libopapi_math.so " +
  "(or libopapi.so).";

function readEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch (e) {
    throw permissionError(e, "--allow-env", `reading $${name} to find the CANN libraries`);
  }
}

function truthy(value: string | undefined): boolean {
  return value !== undefined && /^(1|true|yes|on)$/i.test(value.trim());
}

/** Search locations in order; env vars are read lazily (only when earlier ones failed). */
function* candidates(options: LibraryOptions, skipped: SkippedLocation[]): Generator<Candidate> {
  if (options.libDir !== undefined) {
    yield { source: "libDir option", dir: trimDir(options.libDir), explicit: true };
    return;
  }
  const fromEnv = readEnv(LIB_DIR_ENV);
  if (fromEnv !== undefined && fromEnv !== "") {
    yield { source: `$${LIB_DIR_ENV}`, dir: trimDir(fromEnv), explicit: true };
    return;
  }
  skipped.push({ source: `$${LIB_DIR_ENV}`, reason: `${LIB_DIR_ENV} is not set` });
  for (const name of ["ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"]) {
    const value = readEnv(name);
    const source = `$${name}/lib64`;
    if (value === undefined || value === "") {
      skipped.push({ source, reason: `${name} is not set` });
    } else if (!value.startsWith("/")) {
      skipped.push({ source, reason: `${name}=${value} is not an absolute path (ignored)` });
    } else yield { source, dir: `${trimDir(value)}/lib64`, explicit: false };
  }
  for (const dir of DEFAULT_LIB_DIRS) {
    yield { source: "default install root", dir, explicit: false };
  }
  const source = "loader path (LD_LIBRARY_PATH, ld.so.cache)";
  if (options.useLoaderPath || truthy(readEnv(LOADER_PATH_ENV))) {
    yield { source, dir: null, explicit: false };
  } else {
    skipped.push({
      source,
      reason: `off by default; opt in with openAscend({ useLoaderPath: true }) or ` +
        `${LOADER_PATH_ENV}=1`,
    });
  }
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

/** Why an explicit directory cannot hold the libraries, before any dlopen; else undefined. */
function explicitDirProblem(candidate: Candidate): string | undefined {
  const dir = candidate.dir!;
  const name = candidate.source === "libDir option" ? "libDir" : `$${LIB_DIR_ENV}`;
  if (dir === "") return `${name} is empty`;
  if (!dir.startsWith("/")) {
    return `${name} ${dir} is not an absolute path (relative library directories are refused)`;
  }
  try {
    if (!Deno.statSync(dir).isDirectory) return `${name} ${dir} is not a directory`;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return `${name} ${dir} does not exist`;
    const denied = permissionError(e, "--allow-read", `checking ${name} ${dir}`);
    if (denied !== e) throw denied;
    return `${name} ${dir} cannot be read: ${e instanceof Error ? e.message : String(e)}`;
  }
  if (!RUNTIME_FILES.some((f) => exists(`${dir}/${f}`))) {
    return `${name} ${dir} holds neither libacl_rt.so nor libascendcl.so`;
  }
  return undefined;
}

/** The report of a discovery that found no usable installation. */
function notFound(
  error: string,
  attempts: LibraryAttempt[],
  skipped: SkippedLocation[],
): DiscoveryReport {
  return {
    found: false,
    dir: null,
    resolvedDir: null,
    source: null,
    libraries: [],
    dependencies: [],
    attempts,
    skipped,
    error,
  };
}

function discover(options: LibraryOptions): { libs?: CannLibraries; report: DiscoveryReport } {
  const attempts: LibraryAttempt[] = [];
  const skipped: SkippedLocation[] = [];
  const trail: (LibraryAttempt | SkippedLocation)[] = [];
  const failed = (error: string) => ({ report: notFound(error, attempts, skipped) });
  for (const candidate of candidates(options, skipped)) {
    const cached = cache.get(cacheKey(candidate.dir));
    if (cached) return { libs: cached, report: cached.report };
    if (candidate.explicit) {
      const problem = explicitDirProblem(candidate);
      if (problem !== undefined) return failed(`${problem}. ${HINT}`);
    }
    const walk: Walk = { candidate, attempts: [], dependencies: [], opening: new Set() };
    const set = openSet(walk, skipped);
    attempts.push(...walk.attempts);
    trail.push(...skipped.filter((s) => !trail.includes(s)), ...walk.attempts);
    if (set) {
      const report: DiscoveryReport = { ...set.libs.report, attempts, skipped };
      const libs: CannLibraries = { ...set.libs, report };
      cache.set(cacheKey(candidate.dir), libs);
      return { libs, report };
    }
  }
  trail.push(...skipped.filter((s) => !trail.includes(s)));
  return failed(formatFailure(trail));
}

/**
 * The NPU backend needs Deno's pointer API (Deno.UnsafePointer) for device addresses, handles
 * and error texts, and Deno 2.9 grants it only with an unscoped --allow-ffi: under a
 * path-scoped --allow-ffi=<dir> the libraries would open and the first call would fail with a
 * raw NotCapable. Say so up front, naming what to grant.
 */
function checkFfiPermission(): void {
  let state: Deno.PermissionState;
  try {
    state = Deno.permissions.querySync({ name: "ffi" }).state;
  } catch {
    return; // no permission API (should not happen): dlopen reports the problem
  }
  if (state === "granted") return;
  throw new AclError(
    0,
    "The NPU backend needs the --allow-ffi permission without a path: besides dlopen it uses " +
      "Deno's pointer API (Deno.UnsafePointer), which a path-scoped --allow-ffi=<dir> does " +
      "not grant. Run deno with --allow-ffi.",
  );
}

/**
 * Finds and opens the CANN libraries (cached per directory). Throws one {@linkcode AclError}
 * (code 0) listing every path tried with its problem, naming the explicit directory that is
 * wrong, or naming the missing permission. The result holds the raw symbol tables.
 *
 * @example
 * ```ts
 * import { openCannLibraries } from "@aclnn/norm/ascend";
 * try {
 *   const libs = openCannLibraries();
 *   const soc = libs.runtime.aclrtGetSocName?.();
 *   console.log(libs.dir, soc ? Deno.UnsafePointerView.getCString(soc) : "unknown SoC");
 * } catch (e) {
 *   console.log((e as Error).message.split("\n")[0]); // (no CANN: "Could not open the CANN libraries...")
 * }
 * ```
 */
export function openCannLibraries(options: LibraryOptions = {}): CannLibraries {
  const automatic = options.libDir === undefined && !options.useLoaderPath;
  if (automatic && autoDiscovered) return autoDiscovered;
  checkFfiPermission();
  const { libs, report } = discover(options);
  if (!libs) throw new AclError(0, report.error ?? "Could not open the CANN libraries");
  if (automatic) autoDiscovered = libs;
  return libs;
}

/**
 * Reports where the CANN libraries are (or every path tried when they are not), opening them
 * as {@linkcode openCannLibraries} would. Never throws for a missing install; a missing
 * permission is reported as the error.
 *
 * @example
 * ```ts
 * import { describeLibraries } from "@aclnn/norm/ascend";
 * const report = describeLibraries();
 * console.log(report.found ? `CANN in ${report.dir}` : report.error);
 * ```
 */
export function describeLibraries(options: LibraryOptions = {}): DiscoveryReport {
  try {
    const automatic = options.libDir === undefined && !options.useLoaderPath;
    if (automatic && autoDiscovered) return autoDiscovered.report;
    checkFfiPermission();
    const { libs, report } = discover(options);
    if (libs && automatic) autoDiscovered = libs;
    return report;
  } catch (e) {
    return notFound(e instanceof Error ? e.message : String(e), [], []);
  }
}

const HCCL_FILE = "libhccl.so";

/** HCCL opened beside a set of CANN libraries (see {@linkcode openHccl}). */
export interface HcclLibrary {
  /** The file that was opened. */
  readonly path: string;
  /** The HCCL symbol table (optional symbols are null when this release lacks them). */
  readonly symbols: Deno.DynamicLibrary<HcclSymbols>["symbols"];
  /** Optional symbols this release does not export. */
  readonly missingOptional: readonly string[];
}

/** HCCL by the directory of the CANN set it was opened beside. */
const hcclCache = new Map<string, HcclLibrary>();

/**
 * Opens `libhccl.so` from the directory of an opened CANN set (HCCL ships in the same
 * `lib64`), after the libraries it needs from that directory (on CANN releases that split
 * HCCL, `libhcomm.so`, which defines the communicator calls): the same rules as the rest of
 * discovery, and never another directory. Throws an {@linkcode AclError} (code 0) that names
 * the file and its problem.
 *
 * @example
 * ```ts
 * import { openCannLibraries, openHccl } from "@aclnn/norm/ascend";
 * try {
 *   const hccl = openHccl(openCannLibraries());
 *   console.log(hccl.path, hccl.missingOptional);
 * } catch (e) {
 *   console.log((e as Error).message.split("\n")[0]); // (no CANN, or no HCCL, here)
 * }
 * ```
 */
export function openHccl(libs: CannLibraries): HcclLibrary {
  const key = cacheKey(libs.dir);
  const cached = hcclCache.get(key);
  if (cached) return cached;
  checkFfiPermission();
  const candidate: Candidate = {
    source: libs.report.source ?? "loader path",
    dir: libs.dir,
    explicit: true,
  };
  const walk: Walk = { candidate, attempts: [], dependencies: [], opening: new Set() };
  const lib = openLibrary(walk, "hccl", HCCL_FILE, hcclSymbols);
  if (!lib) {
    const tried = walk.attempts.map((a) => `  ${a.path}: ${a.error ?? "opened"}`).join("\n");
    throw new AclError(
      0,
      `Could not open HCCL (${HCCL_FILE}) beside the CANN libraries in ${
        libs.dir ?? "the loader path"
      }:\n${tried}\nHCCL is part of the CANN toolkit; install it with the toolkit that ` +
        `provides the other libraries.`,
    );
  }
  const opened: HcclLibrary = {
    path: join(libs.dir, HCCL_FILE),
    symbols: lib.symbols,
    missingOptional: missingOptional(lib.symbols as Record<string, unknown>, hcclSymbols),
  };
  hcclCache.set(key, opened);
  return opened;
}
