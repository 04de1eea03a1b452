/**
 * What the CPU worker pool costs to keep and to start again: for `--threads` (workers =
 * threads - 1), the time `startCpuPool()` takes to have every worker ready, and the process
 * RSS it adds (300 ms after the start), over `--repeat` start/stop cycles. These figures
 * chose the pool's idle time (CPU_POOL_IDLE_MS).
 *
 *   deno run --allow-read bench/cpu_pool_cost.ts [--threads 2] [--repeat 3]
 *
 * @module
 */

import { parseArgs } from "node:util";
import { setCpuThreads, startCpuPool, stopCpuPool } from "../mod.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: { threads: { type: "string", default: "2" }, repeat: { type: "string", default: "3" } },
});
const threads = Number(flags.threads);
const rssMiB = () => Deno.memoryUsage().rss / 2 ** 20;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
setCpuThreads(threads);
const before = rssMiB();
for (let i = 0; i < Number(flags.repeat); i++) {
  const start = performance.now();
  await startCpuPool();
  const ms = performance.now() - start;
  await pause(300);
  const added = rssMiB() - before;
  console.log(
    `${threads - 1} worker(s): ready after ${ms.toFixed(1)} ms, RSS +${added.toFixed(1)} MiB ` +
      `(${(added / (threads - 1)).toFixed(1)} per worker)`,
  );
  stopCpuPool();
  await pause(300);
}
