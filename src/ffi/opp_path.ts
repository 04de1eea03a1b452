/**
 * ASCEND_OPP_PATH, which aclnn needs (561107 without it): `set_env.sh` sets it to
 * `<toolkit>/opp`, the sibling of `<toolkit>/lib64`. When it is unset, `openAscend` sets it the
 * same way from the directory the libraries were loaded from, taken lexically: `<toolkit>/lib64`
 * is a symlink to `<toolkit>/<arch>-linux/lib64`, so resolving it first would look for a
 * `<arch>-linux/opp` that does not exist. Only an absolute library directory (never the loader
 * path) is trusted. `deno task doctor` reports the same derivation.
 *
 * @module
 */

import { permissionError } from "./errors.ts";

/** The `opp` directory beside `libDir` when it exists (lexically, see the module doc). */
export function oppPathBeside(libDir: string | null): string | undefined {
  if (libDir === null || !libDir.startsWith("/")) return undefined;
  const parent = libDir.slice(0, libDir.lastIndexOf("/")) || "/";
  const opp = `${parent === "/" ? "" : parent}/opp`;
  try {
    return Deno.statSync(opp).isDirectory ? opp : undefined;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

/**
 * What ASCEND_OPP_PATH is for libraries in `libDir`: the environment's value, else the `opp`
 * beside them (`derived`), else undefined.
 */
export function effectiveOppPath(
  libDir: string | null,
): { path: string; derived: boolean } | undefined {
  const set = Deno.env.get("ASCEND_OPP_PATH");
  if (set) return { path: set, derived: false };
  const beside = oppPathBeside(libDir);
  return beside === undefined ? undefined : { path: beside, derived: true };
}

/**
 * Sets ASCEND_OPP_PATH beside `libDir` when it is unset (see the module doc). Missing
 * permissions surface as an AclError that names the flag.
 */
export function deriveOppPath(libDir: string | null): void {
  try {
    const effective = effectiveOppPath(libDir);
    if (effective?.derived) Deno.env.set("ASCEND_OPP_PATH", effective.path);
  } catch (e) {
    const flag = e instanceof Deno.errors.NotCapable && /env/i.test(String(e))
      ? "--allow-env"
      : "--allow-read";
    throw permissionError(e, flag, "setting ASCEND_OPP_PATH beside the CANN libraries");
  }
}
