/**
 * How many threads the CPU backend uses: {@linkcode setCpuThreads} if called, else the
 * `ACLNN_NORM_THREADS` environment variable (read only when `--allow-env` grants it: the
 * CPU backend never prompts), else `navigator.hardwareConcurrency`; and the worker pool
 * that runs them: {@linkcode startCpuPool}, {@linkcode stopCpuPool}, its idle time
 * {@linkcode CPU_POOL_IDLE_MS}.
 *
 * @module
 */

import { POOL_IDLE_MS, retirePool, startPool } from "./pool/pool.ts";
import { grantedEnv } from "../../tensor/env.ts";

/**
 * Calls with fewer elements stay on the calling thread: below it a pooled job costs more than
 * it saves (its fixed cost is tens of microseconds: waking a worker, waiting for the last
 * item). From it up, the pool's governor (pool/governor.ts) times each kind and size of call
 * and uses the pool only where 2 threads beat 1.
 */
export const MIN_PARALLEL_ELEMENTS = 1 << 16;

/** The environment variable that sets the default thread count. */
export const THREADS_ENV = "ACLNN_NORM_THREADS";

let configured: number | undefined;
let fromEnv: number | null | undefined;

/** The thread count `text` gives, null when unset; anything but an integer >= 1 is refused. */
function parseThreads(text: string | undefined): number | null {
  if (text === undefined || text.trim() === "") return null;
  const n = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || n < 1) {
    throw new RangeError(`${THREADS_ENV}=${text}: must be a whole number of threads >= 1`);
  }
  return n;
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
 * How long the CPU worker pool stays up without work before its workers are terminated, by
 * default: 30,000 ms. Idle workers use no CPU time and never keep the process alive (a script
 * exits when its work is done); what they hold is memory (about 20 MB for the first worker,
 * 10-15 MB for each further one). A call after the pool retired starts it again and runs on
 * the calling thread alone meanwhile (one worker starts in 25-40 ms on an idle 2-vCPU VM).
 * {@linkcode startCpuPool} sets another idle time.
 */
export const CPU_POOL_IDLE_MS: number = POOL_IDLE_MS;

/** Options of {@linkcode startCpuPool}. */
export interface CpuPoolOptions {
  /**
   * Milliseconds without work after which the workers are terminated (they restart with the
   * next large call). `Infinity` keeps them until {@linkcode stopCpuPool}. Default: the idle
   * time set last, initially {@linkcode CPU_POOL_IDLE_MS}.
   */
  idleMs?: number;
}

/**
 * Starts the CPU worker pool now (`cpuThreads() - 1` workers: the calling thread is the
 * other one) and resolves once every worker is ready. Without it the pool starts with the
 * first call of 2^16 elements or more, which then runs on the calling thread alone. Does
 * nothing with one thread. Rejects when the workers cannot start (CPU calls then run on the
 * calling thread; a later `startCpuPool()` tries again).
 *
 * @example
 * ```ts
 * import { batchNorm, startCpuPool, stopCpuPool, Tensor } from "@aclnn/norm";
 * await startCpuPool({ idleMs: 60_000 }); // warm now, and through pauses up to a minute
 * const x = Tensor.random([8, 16, 32, 32], { seed: 1 }); // 128K elements: shared at once
 * console.log(batchNorm({ input: x, training: true }).output.shape); // [8, 16, 32, 32]
 * stopCpuPool(); // optional: idle workers never keep the process alive
 * ```
 */
export function startCpuPool(options: CpuPoolOptions = {}): Promise<void> {
  const idle = options.idleMs;
  if (idle !== undefined && !(idle >= 0)) {
    return Promise.reject(new RangeError(`startCpuPool: idleMs ${idle} must be >= 0`));
  }
  const threads = cpuThreads();
  return threads > 1 ? startPool(threads - 1, idle) : Promise.resolve();
}

/**
 * Terminates the CPU worker pool's workers now (the next large call, or
 * {@linkcode startCpuPool}, starts new ones). Not needed for a script to exit: idle workers
 * never keep the process alive. Use it to give their memory back at once.
 *
 * @example
 * ```ts
 * import { startCpuPool, stopCpuPool } from "@aclnn/norm";
 * await startCpuPool();
 * stopCpuPool(); // the workers are gone; CPU calls run on the calling thread until restarted
 * ```
 */
export function stopCpuPool(): void {
  retirePool();
}
