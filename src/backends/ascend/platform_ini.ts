/**
 * The CANN platform files: `<SoC_version>.ini`, whose `[version]` section names the chip's
 * `Short_SoC_version` (what opbase turns into op::SocVersion) and `NpuArch` (what newer operator
 * code branches on). This package reads them only for a SoC name its own table does not know,
 * the way CANN itself learns about a chip.
 *
 * Where CANN keeps them (hicann/runtime):
 * - the platform library looks in `data/platform_config` beside the directory that holds its
 *   own shared library, after resolving symbolic links (`src/platform/platform_infos_utils.h`,
 *   GetConfigFilePath: `dirname(dirname(realpath(so))) + "/data/platform_config"`);
 * - the toolkit installs them to `<arch>-linux/data/platform_config`, beside
 *   `<arch>-linux/lib64` (`cmake/package.cmake`, the platform_config install rules), and
 *   `set_env.sh` exports that toolkit's root as `ASCEND_HOME_PATH` / `ASCEND_TOOLKIT_HOME`.
 *
 * @module
 */

/** The `[version]` facts of one platform file. */
export interface PlatformVersion {
  /** The file they were read from. */
  readonly file: string;
  /** `SoC_version`: what aclrtGetSocName returns. */
  readonly socVersion: string;
  /** `Short_SoC_version`, e.g. `Ascend910B`; undefined when the file has none. */
  readonly shortSocVersion: string | undefined;
  /** `NpuArch`, e.g. 2201; undefined when the file has none or it is not a number. */
  readonly npuArch: number | undefined;
}

/** What a search for a platform file found, and every path it tried. */
export interface PlatformSearch {
  /** The facts, when a file was found and read. */
  readonly found: PlatformVersion | undefined;
  /** Each path tried, with why it was not used (in order). */
  readonly tried: readonly string[];
}

const CPU_DIR: Record<string, string> = { x86_64: "x86_64-linux", aarch64: "aarch64-linux" };

function parent(path: string): string {
  const trimmed = path.replace(/\/+$/, "");
  const i = trimmed.lastIndexOf("/");
  return i <= 0 ? "/" : trimmed.slice(0, i);
}

function realPath(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch {
    return path;
  }
}

/**
 * The directories that may hold platform files, in the order they are tried: CANN's rule
 * relative to the libraries in use (`libDir`), then the toolkit roots that `set_env.sh`
 * exports.
 */
export function platformConfigDirs(libDir: string | null): string[] {
  const dirs: string[] = [];
  if (libDir !== null && libDir.startsWith("/")) {
    dirs.push(`${parent(realPath(libDir))}/data/platform_config`.replace(/^\/\//, "/"));
  }
  const cpu = CPU_DIR[Deno.build.arch] ?? `${Deno.build.arch}-linux`;
  for (const name of ["ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"]) {
    let root: string | undefined;
    try {
      root = Deno.env.get(name);
    } catch {
      root = undefined; // no --allow-env for it: that root is not tried
    }
    if (root?.startsWith("/")) dirs.push(`${root.replace(/\/+$/, "")}/${cpu}/data/platform_config`);
  }
  return [...new Set(dirs)];
}

/** The `[version]` section of an ini text as key/value pairs. */
export function versionSection(text: string): Map<string, string> {
  const values = new Map<string, string>();
  let inVersion = false;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const section = /^\[(.+)\]$/.exec(line);
    if (section) {
      inVersion = section[1].trim() === "version";
      continue;
    }
    const eq = line.indexOf("=");
    if (inVersion && eq > 0) values.set(line.slice(0, eq).trim(), line.slice(eq + 1).trim());
  }
  return values;
}

/**
 * Finds and reads `<socName>.ini` in {@linkcode platformConfigDirs}. A file that cannot be read
 * (missing, no read permission) is listed in `tried` with the reason, and the next one is tried.
 *
 * @example
 * ```ts
 * import { findPlatformVersion } from "@aclnn/norm/ascend";
 * const { found, tried } = findPlatformVersion("Ascend910B4", "/usr/local/Ascend/cann/lib64");
 * console.log(found?.shortSocVersion ?? `not found: ${tried.join("; ")}`);
 * ```
 */
export function findPlatformVersion(socName: string, libDir: string | null): PlatformSearch {
  const tried: string[] = [];
  if (!/^[A-Za-z0-9_.-]+$/.test(socName)) {
    return { found: undefined, tried: [`(no file: "${socName}" is not a file name)`] };
  }
  for (const dir of platformConfigDirs(libDir)) {
    const file = `${dir}/${socName}.ini`;
    let text: string;
    try {
      text = Deno.readTextFileSync(file);
    } catch (e) {
      const why = e instanceof Deno.errors.NotFound
        ? "not found"
        : e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied
        ? "no read permission"
        : String((e as Error).message ?? e);
      tried.push(`${file} (${why})`);
      continue;
    }
    const v = versionSection(text);
    const arch = Number(v.get("NpuArch"));
    return {
      found: {
        file,
        socVersion: v.get("SoC_version") ?? socName,
        shortSocVersion: v.get("Short_SoC_version") || undefined,
        npuArch: v.has("NpuArch") && Number.isInteger(arch) ? arch : undefined,
      },
      tried: [...tried, file],
    };
  }
  if (tried.length === 0) tried.push("(no directory: no absolute libDir, ASCEND_HOME_PATH unset)");
  return { found: undefined, tried };
}
