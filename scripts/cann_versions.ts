/**
 * Where a CANN install records its versions, read the way CANN reads them: used by
 * `deno task doctor` and `deno task verify:npu`.
 *
 * - The CANN (toolkit) version: `<install root>/share/info/runtime/version.info`, its
 *   `Version=` line (hicann/runtime `src/acl/aclrt_impl/acl.cpp`: `kRelPathInfo`
 *   "/share/info/", `kInfoFileName` "/version.info", `kVersionInfoKey` "Version=",
 *   `kMapToPkgName` ACL_PKG_NAME_CANN -> "runtime", in `GetVersionByPkgName` /
 *   `GetCANNVersionInternal`, under `$ASCEND_HOME_PATH`; `src/acl/utils/cann_info_utils.cpp`
 *   `RUNTIME_VERSION_PATH`, which `GetConfigInstallPath` looks for from the runtime library's
 *   real directory upwards). The root is taken beside the library directory and beside (and
 *   one above) the directory it resolves to. Older toolkits also have `version.cfg` /
 *   `version.info` at the root and `<arch>-linux/ascend_toolkit_install.info` (hicann/runtime
 *   README "Check CANN version"), read as fallbacks.
 * - The driver version: `<Driver_Install_Path_Param>/driver/version.info`, where the path
 *   comes from `/etc/ascend_install.info` (acl.cpp `kAscendInstallPath`, `kDriverPathKey`,
 *   `GetDriverPath`); `/usr/local/Ascend/driver/version.info`, the default install path, when
 *   that file names none.
 *
 * The software CANN's build (scripts/build_sim.ts) writes `share/info/runtime/version.info`
 * beside `build/sim`, where a real install keeps it; it has no driver.
 *
 * @module
 */

/** A version and the file it was read from ("unknown" and no file when none was found). */
export interface VersionInfo {
  /** The version string, or "unknown". */
  readonly version: string;
  /** The file it came from. */
  readonly file?: string;
}

/** Where the runtime package records the CANN version, relative to the install root. */
export const RUNTIME_VERSION_PATH = "share/info/runtime/version.info";
/** The file naming the driver's install path (Driver_Install_Path_Param=). */
export const ASCEND_INSTALL_INFO = "/etc/ascend_install.info";
/** The driver's version file under the default install path. */
export const DEFAULT_DRIVER_VERSION_FILE = "/usr/local/Ascend/driver/version.info";

function readText(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return undefined;
  }
}

function listDir(path: string): string[] {
  try {
    return [...Deno.readDirSync(path)].map((e) => e.name);
  } catch {
    return [];
  }
}

/** The value after the first `Version=` in the text, trimmed (CANN's own rule). */
export function versionField(text: string): string | undefined {
  for (const line of text.split("\n")) {
    const at = line.indexOf("Version=");
    if (at >= 0) {
      const v = line.slice(at + "Version=".length).trim();
      return v === "" ? undefined : v;
    }
  }
  return undefined;
}

/** `version=8.0.RC2` / `Version: ...` lines of older version files (any case). */
function looseVersionField(text: string): string | undefined {
  return text.match(/^\s*version\s*[=:]\s*(\S+)/im)?.[1];
}

function parentOf(dir: string): string {
  const trimmed = dir.replace(/\/+$/, "");
  const at = trimmed.lastIndexOf("/");
  return at <= 0 ? "/" : trimmed.slice(0, at);
}

/**
 * The CANN version of the install whose libraries are in `libDir` (lexically: `<root>/lib64`,
 * or the simulator's `build/sim`), "unknown" when no version file is found.
 */
export function cannVersion(libDir: string | null): VersionInfo {
  if (libDir === null) return { version: "unknown" };
  // The root beside the library directory as given (ASCEND_HOME_PATH's layout), then beside
  // and above the directory it resolves to (`<root>/lib64` is often a symlink to
  // `<root>/<arch>-linux/lib64`; CannInfoUtils searches from the real directory upwards).
  const roots = [parentOf(libDir)];
  try {
    const real = Deno.realPathSync(libDir);
    roots.push(parentOf(real), parentOf(parentOf(real)));
  } catch { /* not there: only the lexical root */ }
  for (const root of new Set(roots)) {
    const file = `${root}/${RUNTIME_VERSION_PATH}`;
    const text = readText(file);
    const version = text === undefined ? undefined : versionField(text);
    if (version) return { version, file };
  }
  // Older layouts, beside the library directory.
  const root = parentOf(libDir);
  const candidates = [`${root}/version.cfg`, `${root}/version.info`];
  for (const name of listDir(root)) {
    if (name.endsWith("_install.info")) candidates.push(`${root}/${name}`);
    if (name.endsWith("-linux")) {
      for (const inner of listDir(`${root}/${name}`)) {
        if (inner.endsWith("_install.info")) candidates.push(`${root}/${name}/${inner}`);
      }
    }
  }
  for (const file of candidates) {
    const text = readText(file);
    const version = text === undefined ? undefined : looseVersionField(text);
    if (version) return { version, file };
  }
  return { version: "unknown" };
}

/**
 * The NPU driver's version: `Driver_Install_Path_Param` of `installInfo` (default
 * /etc/ascend_install.info), then `<that path>/driver/version.info`; else `fallback` (default
 * /usr/local/Ascend/driver/version.info). "unknown" when neither holds a version.
 */
export function driverVersion(
  installInfo = ASCEND_INSTALL_INFO,
  fallback = DEFAULT_DRIVER_VERSION_FILE,
): VersionInfo {
  const files: string[] = [];
  const info = readText(installInfo);
  const path = info?.match(/Driver_Install_Path_Param=(.*)/)?.[1]?.trim();
  if (path) files.push(`${path.replace(/\/+$/, "")}/driver/version.info`);
  files.push(fallback);
  for (const file of files) {
    const text = readText(file);
    const version = text === undefined ? undefined : versionField(text) ?? looseVersionField(text);
    if (version) return { version, file };
  }
  return { version: "unknown" };
}
