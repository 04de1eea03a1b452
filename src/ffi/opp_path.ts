/**
 * ASCEND_OPP_PATH beside the CANN libraries, as `set_env.sh` sets it.
 *
 * @module
 */

import { permissionError } from "./library.ts";

/**
 * `set_env.sh` sets ASCEND_OPP_PATH to `<toolkit>/opp`, the sibling of `<toolkit>/lib64`, and
 * aclnn fails with 561107 without it. When it is unset, set it the same way from the directory
 * the libraries were loaded from, taken lexically: `<toolkit>/lib64` is a symlink to
 * `<toolkit>/<arch>-linux/lib64`, so resolving it first would look for a `<arch>-linux/opp`
 * that does not exist. Only an absolute library directory (never the loader path) is trusted.
 * Missing permissions surface as an AclError that names the flag.
 */
export function deriveOppPath(libDir: string | null): void {
  if (libDir === null || !libDir.startsWith("/")) return;
  try {
    if (Deno.env.get("ASCEND_OPP_PATH")) return;
    const parent = libDir.slice(0, libDir.lastIndexOf("/")) || "/";
    const opp = `${parent === "/" ? "" : parent}/opp`;
    let isDirectory = false;
    try {
      isDirectory = Deno.statSync(opp).isDirectory;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    if (isDirectory) Deno.env.set("ASCEND_OPP_PATH", opp);
  } catch (e) {
    const flag = e instanceof Deno.errors.NotCapable && /env/i.test(String(e))
      ? "--allow-env"
      : "--allow-read";
    const denied = permissionError(e, flag, "setting ASCEND_OPP_PATH beside the CANN libraries");
    throw denied;
  }
}
