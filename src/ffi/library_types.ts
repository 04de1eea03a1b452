/**
 * The names and shapes of CANN library discovery: its environment variables, default
 * locations, file names, options and the report of what was tried (library.ts finds and opens;
 * library_open.ts opens one directory).
 *
 * @module
 */

import type { NnopbaseSymbols, OpapiSymbols, RuntimeSymbols } from "./symbols.ts";

/** The environment variable naming the directory that holds the CANN libraries. */
export const LIB_DIR_ENV = "ACLNN_NORM_LIB_DIR";

/** The environment variable that opts in to the loader-path fallback (`1` or `true`). */
export const LOADER_PATH_ENV = "ACLNN_NORM_USE_LOADER_PATH";

/** Where {@linkcode openCannLibraries} looks. */
export interface LibraryOptions {
  /**
   * An absolute directory holding libacl_rt.so/libascendcl.so, libnnopbase.so and
   * libopapi*.so. When given, it is the only location tried.
   */
  libDir?: string;
  /**
   * Last resort: let the dynamic loader resolve bare file names (`LD_LIBRARY_PATH`,
   * ld.so.cache). Off by default, because an empty `LD_LIBRARY_PATH` entry means the current
   * directory.
   */
  useLoaderPath?: boolean;
}

/** What a library file is for (`dependency`: a library another one needs, opened first). */
export type LibraryRole =
  | "runtime"
  | "nnopbase"
  | "opapi_nn"
  | "opapi_math"
  | "opapi"
  | "hccl"
  | "dependency";

/** One dlopen attempt. */
export interface LibraryAttempt {
  /** Which search location this attempt belongs to, e.g. `libDir option` or `loader path`. */
  readonly source: string;
  /** What the library is for. */
  readonly role: LibraryRole;
  /** The path (or bare file name) passed to dlopen. */
  readonly path: string;
  /** Why it did not open, or undefined when it opened. */
  readonly error?: string;
}

/** A search location that was not tried (e.g. its environment variable is unset). */
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
  /** The directory of the set as it was found (null: bare names through the loader path). */
  readonly dir: string | null;
  /** That directory with every symlink resolved (null as for `dir`). */
  readonly resolvedDir: string | null;
  /** Where it was found, e.g. `$ASCEND_HOME_PATH/lib64`. */
  readonly source: string | null;
  /** The libraries of the set, in the order they were opened. */
  readonly libraries: readonly OpenedLibrary[];
  /** Libraries opened first because the set needs them (paths, in order). */
  readonly dependencies: readonly string[];
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

/** The runtime library, newest name first (libacl_rt from CANN 8.5; libascendcl before). */
export const RUNTIME_FILES = ["libacl_rt.so", "libascendcl.so"] as const;
/** The aclTensor / executor library. */
export const NNOPBASE_FILE = "libnnopbase.so";
/** The operators, split (CANN >= 8.5): math (BatchNormStats). */
export const OPAPI_MATH_FILE = "libopapi_math.so";
/** The operators, split (CANN >= 8.5): nn (the norm family). */
export const OPAPI_NN_FILE = "libopapi_nn.so";
/** The operators in one library (older releases). */
export const OPAPI_LEGACY_FILE = "libopapi.so";

/** Default install roots' lib64 directories, newest layout first. */
export const DEFAULT_LIB_DIRS: readonly string[] = Object.freeze([
  "/usr/local/Ascend/cann/lib64",
  "/usr/local/Ascend/ascend-toolkit/latest/lib64",
]);
