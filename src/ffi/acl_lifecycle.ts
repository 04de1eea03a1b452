/**
 * ACL's process-wide lifetime: aclInit once per process (a repeated aclInit, 100002, is
 * tolerated) and `finalizeAscend()`, the explicit aclFinalize once every device is closed.
 * ACL is NOT finalised when a device closes: releases before CANN 8.x cannot call aclInit
 * again after aclFinalize, and other devices may still be open. `finalizeAscend()` finalises
 * only when this package's aclInit is the one that initialised ACL: aclFinalize zeroes the
 * process-wide reference count whatever it was (hicann/runtime src/acl/aclrt_impl/acl.cpp
 * aclFinalizeInternal), so finalising after a 100002 would pull ACL from under whoever
 * initialised it first.
 *
 * @module
 */

import { ACL_ERROR_REPEAT_INITIALIZE, ACL_SUCCESS } from "./constants.ts";
import { openDevicesInProcess } from "./open_devices.ts";
import { AclError, recentErrorMessage, unwrapAcl } from "../errors.ts";
import { type CannLibraries, type LibraryOptions, openCannLibraries } from "./library.ts";
import type { DeviceState } from "./device_state.ts";

type Runtime = CannLibraries["runtime"];

/**
 * Runtimes (per library set) on which this process has called aclInit, and whether that call
 * initialised ACL (0) or found it initialised by someone else (100002).
 */
const initialised = new WeakMap<Runtime, { owner: boolean; aclnn: boolean }>();
/** Open devices, for finalizeAscend() (openAscend adds them, close() removes them). */
export const openDevices: Set<DeviceState> = new Set<DeviceState>();

/** aclInit (and aclnnInit) once per library set; a repeated aclInit (100002) is tolerated. */
export function initAcl(libs: CannLibraries): void {
  const rt = libs.runtime;
  if (initialised.has(rt)) return;
  // Whatever text is pending belongs to an earlier failure, not to this call: drop it, so a
  // failing aclInit never reports a stale message (aclGetRecentErrMsg keeps a message until it
  // is read, and repeats it on a thread with no device; runtime acl.cpp GetRecentErrMsgImpl).
  recentErrorMessage(rt);
  const status = rt.aclInit(null);
  const owner = status === ACL_SUCCESS;
  if (status === ACL_ERROR_REPEAT_INITIALIZE) recentErrorMessage(rt); // harmless; clear it
  else unwrapAcl(status, "aclInit", rt);
  // aclnnInit is optional (missing before CANN 8.0) and not needed (operator packages load on
  // first use) but documented; it returns 0 even when called again (opbase aclnn_init.cpp).
  let aclnn = false;
  if (libs.nnopbase.aclnnInit) {
    aclnn = libs.nnopbase.aclnnInit(null) === ACL_SUCCESS;
    if (!aclnn) recentErrorMessage(rt);
  }
  initialised.set(rt, { owner, aclnn });
}

/**
 * Calls aclFinalize for the libraries in `options` (or the automatically discovered ones) once
 * every device is closed. ACL is process-wide, so a device still open in another Worker of
 * this process (recorded in the process environment when `--allow-env` is granted) makes it
 * throw too. Optional: the process may simply exit. Returns whether it finalised:
 * false when this package never initialised ACL, or when ACL was already initialised by
 * someone else in this process (aclInit answered 100002), whose initialisation this package
 * must not undo.
 *
 * @example
 * ```ts
 * import { openAscend } from "@aclnn/norm";
 * import { finalizeAscend } from "@aclnn/norm/ascend";
 * try {
 *   openAscend().close();
 *   console.log(finalizeAscend()); // true: this package initialised ACL
 * } catch (e) {
 *   console.log((e as Error).message.split("\n")[0]); // (no CANN here)
 * }
 * ```
 */
export function finalizeAscend(options: LibraryOptions = {}): boolean {
  const libs = openCannLibraries(options);
  for (const s of openDevices) {
    if (s.libs.runtime === libs.runtime) {
      throw new AclError(100000, `finalizeAscend: ${s.name} is still open; close it first`);
    }
  }
  // ACL is process-wide: a device another Worker opened on the same libraries counts too.
  const prefix = openRecord(libs.dir, "");
  const elsewhere = openDevicesInProcess().filter((r) => r.startsWith(prefix));
  if (elsewhere.length > 0) {
    const names = elsewhere.map((r) => r.slice(prefix.length)).join(", ");
    throw new AclError(
      100000,
      `finalizeAscend: ${names} still open in another Worker of this process; close it first`,
    );
  }
  const init = initialised.get(libs.runtime);
  if (init === undefined) return false;
  initialised.delete(libs.runtime);
  if (!init.owner) return false;
  if (init.aclnn && libs.nnopbase.aclnnFinalize) {
    if (libs.nnopbase.aclnnFinalize() !== ACL_SUCCESS) recentErrorMessage(libs.runtime);
  }
  unwrapAcl(libs.runtime.aclFinalize(), "aclFinalize", libs.runtime);
  return true;
}

/** What open_devices.ts records for a device: the library directory, a tab, the name. */
export function openRecord(dir: string | null, name: string): string {
  return `${dir ?? "(loader path)"}\t${name}`;
}
