/**
 * Devices open anywhere in this process, across Workers. ACL is process-wide state (one
 * aclInit/aclFinalize for every thread), but each Worker has its own copy of this package's
 * modules, so a module-level set cannot see another Worker's devices. The process environment
 * is the one store every Worker shares without cooperation: each open device sets a variable
 * `ACLNN_NORM_OPEN_<pid>_<unique id>` naming it, and removes it when it closes. The pid in the
 * name keeps a child process, which inherits the environment, from counting its parent's
 * devices.
 *
 * Without `--allow-env` the registry holds only this Worker's devices (opening a device with
 * CANN's own ASCEND_OPP_PATH handling needs the permission anyway).
 *
 * @module
 */

const PREFIX = `ACLNN_NORM_OPEN_${Deno.pid}_`;

/** This Worker's registrations, by key (also the fallback when env access is not granted). */
const local = new Map<string, string>();

function envGranted(): boolean {
  try {
    return Deno.permissions.querySync({ name: "env" }).state === "granted";
  } catch {
    return false;
  }
}

function uniqueId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Records that `description` (e.g. "npu:0 (/usr/local/Ascend/cann/lib64)") is open; returns the key. */
export function registerOpenDevice(description: string): string {
  const key = PREFIX + uniqueId();
  local.set(key, description);
  if (envGranted()) Deno.env.set(key, description);
  return key;
}

/** Removes a registration made by {@linkcode registerOpenDevice}. */
export function unregisterOpenDevice(key: string): void {
  local.delete(key);
  if (envGranted()) Deno.env.delete(key);
}

/** Descriptions of the devices open in this process, in every Worker that could record them. */
export function openDevicesInProcess(): string[] {
  const found = new Map(local);
  if (envGranted()) {
    for (const [key, value] of Object.entries(Deno.env.toObject())) {
      if (key.startsWith(PREFIX)) found.set(key, value);
    }
  }
  return [...found.values()];
}
