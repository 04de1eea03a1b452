/**
 * Reading the package's environment variables without ever prompting: a variable counts
 * only when `--allow-env` already grants reading it, so code paths that need no permission
 * (the CPU backend, the default device choice) never ask for one.
 *
 * @module
 */

/**
 * The value of environment variable `name` when reading it is granted; undefined when it is
 * not set, not granted, or outside Deno (no permission API).
 */
export function grantedEnv(name: string): string | undefined {
  try {
    if (Deno.permissions.querySync({ name: "env", variable: name }).state !== "granted") {
      return undefined;
    }
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}
