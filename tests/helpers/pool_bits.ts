/**
 * The CPU kernels' thread-count invariance, as the row-kernel tests check it: a call run on one
 * thread and the same call run on the worker pool (two threads, the policy forcing the pool)
 * give the same bits in every output.
 *
 * @module
 */

import assert from "node:assert/strict";
import { pooledJobCount, withCpuPolicy } from "../../src/backends/cpu/pool/pool.ts";
import { cpuThreads, setCpuThreads, startCpuPool } from "../../src/backends/cpu/threads.ts";
import type { Tensor } from "../../src/tensor/tensor.ts";

/**
 * For each case, runs `run(c)` on one thread and on the pool: asserts that the pooled call ran
 * jobs on the pool and that every output is identical. The thread count is restored.
 */
export async function assertPoolMatchesOneThread<C>(
  cases: readonly C[],
  run: (c: C) => Record<string, Tensor>,
): Promise<void> {
  const threads = cpuThreads();
  try {
    for (const c of cases) {
      setCpuThreads(1);
      const alone = run(c);
      setCpuThreads(2);
      await startCpuPool();
      const { jobs, pooled } = withCpuPolicy({ pool: "always" }, () => {
        const jobs = pooledJobCount();
        return { jobs, pooled: run(c) };
      });
      assert.ok(pooledJobCount() > jobs, `${JSON.stringify(c)} ran on the pool`);
      for (const [name, t] of Object.entries(pooled)) {
        assert.deepEqual(t.toArray(), alone[name].toArray(), `${JSON.stringify(c)} ${name}`);
      }
    }
  } finally {
    setCpuThreads(threads);
  }
}
