/**
 * The worker pool's governor (pool/governor.ts) on timings given to it: it tries both ways,
 * then runs the faster one, looks at the other one again less and less often while the
 * choice stands, and changes its mind when the timings change (another process takes a CPU,
 * or leaves it). And on real calls: a 2-thread call of 64K elements is measured both ways,
 * and gives the calling thread's bits whichever way runs it.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  Governor,
  governor,
  GOVERNOR_WARMUP_RUNS,
  groupKey,
} from "../src/backends/cpu/pool/governor.ts";
import { batchNorm, cpuThreads, setCpuThreads, startCpuPool, stopCpuPool, Tensor } from "../mod.ts";

const KEY = groupKey(["sums", "write"], 0, "rows", 1 << 20);
const ELEMENTS = 1 << 20;

/** Runs `calls` calls of KEY with the given ms per way; returns how many ran pooled. */
function drive(g: Governor, calls: number, pooledMs: number, aloneMs: number): number {
  let pooled = 0;
  for (let i = 0; i < calls; i++) {
    const p = g.choose(KEY);
    if (p) pooled++;
    g.record(KEY, p, p ? pooledMs : aloneMs, ELEMENTS);
  }
  return pooled;
}

Deno.test("pool governor: tries both ways, then keeps to the faster", () => {
  const g = new Governor();
  // Warm-up: alternating, pooled first.
  const first: boolean[] = [];
  for (let i = 0; i < 2 * GOVERNOR_WARMUP_RUNS; i++) {
    const p = g.choose(KEY);
    first.push(p);
    g.record(KEY, p, p ? 2 : 1, ELEMENTS); // the pool takes twice as long
  }
  assert.deepEqual(first, [true, false, true, false, true, false]);
  // Then alone, but for the runs that check the pool again: every 8th, then 16th, 32nd...
  const pooled = drive(g, 1000, 2, 1);
  assert.ok(pooled >= 4 && pooled <= 7, `${pooled} pooled runs in 1000 (8+16+...+512)`);
  assert.equal(drive(g, 1024, 2, 1), 2, "one in 512 once the choice has stood");
  const m = g.measured(KEY)!;
  assert.ok(
    Math.abs(m.pooled - 2e6 / ELEMENTS) < 1e-9 && Math.abs(m.alone - 1e6 / ELEMENTS) < 1e-9,
  );
});

Deno.test("pool governor: changes its mind when the timings change", () => {
  const g = new Governor();
  // Pooled wins: alone for the warm-up (3) and the checks after 8, 16, 32, ... 256 calls (6).
  assert.equal(600 - drive(g, 600, 1, 2), 3 + 6);
  // Another process now takes the other CPU: pooled calls take 4x longer than before.
  const pooled = drive(g, 2000, 4, 2);
  assert.ok(pooled < 40, `${pooled} of 2000 still pooled after the pool became slower`);
  // It leaves: the pool wins again, and is found again at the next check (at most 512
  // calls away by now), after which a few checks in quick succession settle it.
  const back = drive(g, 2000, 1, 2);
  assert.ok(back > 2000 - 512 - 64, `${back} of 2000 pooled after the pool became faster again`);
  const settled = drive(g, 500, 1, 2);
  assert.ok(settled >= 490, `${settled} of the next 500 pooled`);
});

Deno.test("pool governor: the 'always' policy pools every eligible call; groups are apart", () => {
  const g = new Governor();
  g.setPolicy("always");
  assert.equal(drive(g, 50, 10, 1), 50);
  g.setPolicy("measured");
  const other = groupKey(["sums", "write"], 0, "rows", 1 << 17);
  assert.notEqual(other, KEY, "another size is another group");
  assert.equal(g.choose(other), true, "a new group starts with a pooled run");
  assert.equal(groupKey(["stats"], 2, "pixels", 65536), "stats|2|pixels|16");
  assert.equal(groupKey(["stats"], 2, "pixels", 131071), "stats|2|pixels|16");
});

Deno.test("pool governor: real 2-thread calls are measured both ways, with the same bits", async () => {
  const before = cpuThreads();
  const x = Tensor.random([4, 16, 32, 32], { seed: 3 }); // 64K elements, rows of 1024
  const run = () => batchNorm({ input: x, training: true }).output.toFloat64Array();
  try {
    setCpuThreads(1);
    const alone = run();
    setCpuThreads(2);
    await startCpuPool(); // a fresh pool: the governor's measurements start over
    stopCpuPool();
    await startCpuPool();
    for (let i = 0; i < 2 * GOVERNOR_WARMUP_RUNS + 10; i++) {
      const bits = run();
      assert.ok(bits.every((v, j) => Object.is(v, alone[j])), `call ${i}: the same bits`);
    }
    // batchNorm in training runs its statistics, then normalizes: one group of two stages.
    const key = groupKey(["stats", "normalize"], 0, "rows", 4 * 16 * 32 * 32);
    const m = governor.measured(key);
    assert.ok(m, `the calls were measured as ${key}`);
    assert.ok(m.pooledRuns >= GOVERNOR_WARMUP_RUNS && m.aloneRuns >= GOVERNOR_WARMUP_RUNS);
    assert.ok(m.pooled > 0 && m.alone > 0);
  } finally {
    stopCpuPool();
    setCpuThreads(before);
  }
});
