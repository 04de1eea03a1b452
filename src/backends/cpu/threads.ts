/**
 * How many threads the CPU backend uses: {@linkcode setCpuThreads} if called, else the
 * `ACLNN_NORM_THREADS` environment variable (read only when `--allow-env` grants it: the
 * CPU backend never prompts), else `navigator.hardwareConcurrency`.
 *
 * @module
 */

import { startPool } from "./pool/pool.ts";
import { grantedEnv } from "../../tensor/env.ts";

/** The environment variable that sets the default thread count. */
export const THREADS_ENV = "ACLNN_NORM_THREADS";

let configured: number | undefined;
let fromEnv: number | null | undefined;

function parseThreads(text: string | undefined): number | null {
  if (text === undefined || !/^\s*\d+\s*$/.test(text)) return null;
  const n = Number(text);
  return n >= 1 ? n : null;
}

function envThreads(): number | null {
  // Read once (null, "not set", is cached too: cpuThreads runs on every call).
  if (fromEnv === undefined) fromEnv = parseThreads(grantedEnv(THREADS_ENV));
  return fromEnv;
}

/**
 * The number of threads CPU kernels may use (the calling thread included): at least 1.
 *
 * @example
 * ```ts
 * import { cpuThreads } from "@aclnn/norm";
 * console.log(cpuThreads() >= 1); // true
 * ```
 */
export function cpuThreads(): number {
  if (configured !== undefined) return configured;
  const env = envThreads();
  if (env !== null) return env;
  const hardware = globalThis.navigator?.hardwareConcurrency;
  return Number.isInteger(hardware) && hardware > 0 ? hardware : 1;
}

/**
 * Sets the number of threads CPU kernels may use (1 = the calling thread only), overriding
 * `ACLNN_NORM_THREADS` and the hardware default. A running pool of another size is replaced
 * at the next large call (or retires when idle). Results do not depend on the count: every
 * reduction is split the same way whatever the thread count.
 *
 * @example
 * ```ts
 * import { cpuThreads, setCpuThreads } from "@aclnn/norm";
 * const before = cpuThreads();
 * setCpuThreads(1); // every CPU kernel on the calling thread
 * console.log(cpuThreads()); // 1
 * setCpuThreads(before);
 * ```
 */
export function setCpuThreads(threads: number): void {
  if (!Number.isInteger(threads) || threads < 1) {
    throw new RangeError(`setCpuThreads: ${threads} is not an integer >= 1`);
  }
  configured = threads;
}

/**
 * Starts the worker pool now (it otherwise starts with the first large call, which then runs
 * single-threaded) and resolves once every worker is ready. Does nothing with one thread.
 *
 * @example
 * ```ts
 * import { startCpuThreads } from "./threads.ts";
 * await startCpuThreads(); // the next large call shares its work at once
 * ```
 */
export function startCpuThreads(): Promise<void> {
  const threads = cpuThreads();
  return threads > 1 ? startPool(threads - 1) : Promise.resolve();
}
