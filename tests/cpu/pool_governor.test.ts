/**
 * The worker pool's governor (pool/governor.ts) on timings given to it: it tries both ways,
 * then runs the faster one, looks at the other one again less and less often while the
 * choice stands, and changes its mind when the timings change (another process takes a CPU,
 * or leaves it). A new pool runs its first calls whatever their group, unrecorded (its workers
 * are cold). And on real calls: a 2-thread call of 64K elements is measured both ways, and
 * gives the calling thread's bits whichever way runs it.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  Governor,
  governor,
  GOVERNOR_WARMUP_RUNS,
  groupKey,
  POOL_WARM_RUNS,
  WAKING_RUNS,
} from "../../src/backends/cpu/pool/governor.ts";
import {
  batchNorm,
  cpuThreads,
  setCpuThreads,
  startCpuPool,
  stopCpuPool,
  Tensor,
} from "../../mod.ts";

const KEY = groupKey(["sums", "write"], 0, "rows", 1 << 20);
const ELEMENTS = 1 << 20;

/** A governor and its clock: each call advances it by the call's time. */
function governed() {
  return { g: new Governor({ warmRuns: 0, wakeFirst: false }), clock: 1000 };
}

/** Runs `calls` calls of KEY with the given ms per way; returns how many ran pooled. */
function drive(
  s: { g: Governor; clock: number },
  calls: number,
  pooledMs: number,
  aloneMs: number,
) {
  let pooled = 0;
  for (let i = 0; i < calls; i++) {
    const p = s.g.choose(KEY, s.clock);
    const ms = p ? pooledMs : aloneMs;
    if (p) pooled++;
    s.g.record(KEY, p, s.clock, ms, ELEMENTS);
    s.clock += ms;
  }
  return pooled;
}

Deno.test("pool governor: tries both ways, then keeps to the faster", () => {
  const s = governed();
  // Warm-up: alternating, pooled first.
  const first: boolean[] = [];
  for (let i = 0; i < 2 * GOVERNOR_WARMUP_RUNS; i++) {
    const p = s.g.choose(KEY, s.clock);
    first.push(p);
    s.g.record(KEY, p, s.clock, p ? 2 : 1, ELEMENTS); // the pool takes twice as long
    s.clock += p ? 2 : 1;
  }
  assert.deepEqual(first, [true, false, true, false, true, false]);
  // Then alone, but for the runs that check the pool again, 4, 8, 16, ... ms apart: in the
  // next 1000 calls of 1 ms, the checks 4, 8, ..., 256 ms apart (7); the next is 512 ms on.
  assert.equal(drive(s, 1000, 2, 1), 7);
  // From 2048 ms apart on: about one per 2 s.
  drive(s, 4000, 2, 1);
  assert.equal(drive(s, 8192, 2, 1), 4, "one check in 2048 ms once the choice has stood");
  const m = s.g.measured(KEY)!;
  assert.ok(
    Math.abs(m.pooled - 2e6 / ELEMENTS) < 1e-9 && Math.abs(m.alone - 1e6 / ELEMENTS) < 1e-9,
  );
});

Deno.test("pool governor: a new pool runs its first calls, unrecorded, then each group measures", () => {
  const s = { g: new Governor({ warmRuns: 5, wakeFirst: false }), clock: 1000 };
  const other = groupKey(["stats", "normalize"], 0, "rows", 1 << 20);
  // Cold: pooled whatever the group, and slow runs (cold workers) leave no estimate.
  for (let i = 0; i < 5; i++) {
    const key = i % 2 ? KEY : other;
    assert.equal(s.g.warming, true);
    assert.equal(s.g.choose(key, s.clock), true, `cold call ${i} runs pooled`);
    s.g.record(key, true, s.clock, 50, ELEMENTS);
    s.clock += 50;
  }
  assert.equal(s.g.warming, false);
  assert.equal(s.g.measured(KEY), undefined, "the cold runs were not recorded");
  // Then the group's own warm-up, of warm runs: the pool (2 ms) beats alone (3 ms).
  assert.equal(drive(s, 2 * GOVERNOR_WARMUP_RUNS, 2, 3), GOVERNOR_WARMUP_RUNS);
  // 100 calls of 2 ms: alone only for the checks 4, 8, 16, ... ms apart (6).
  const pooledAfter = drive(s, 100, 2, 3);
  assert.ok(pooledAfter >= 90 && pooledAfter < 100, `${pooledAfter}: pooled, but for the checks`);
  assert.equal(s.g.measured(KEY)!.pooled, 2e6 / ELEMENTS);
  // A new pool is cold again; the default is POOL_WARM_RUNS calls.
  s.g.reset();
  assert.equal(s.g.warming, true);
  assert.equal(new Governor().warming && POOL_WARM_RUNS > 0, true);
});

Deno.test("pool governor: a measured pooled run after a run alone first wakes the workers and lets them settle, unrecorded", () => {
  const s = { g: new Governor({ warmRuns: 0 }), clock: 1000 };
  // A pooled run that finds the workers asleep takes 1 ms more (their wake-up): 2.5 ms; the
  // next one still 2.0 (as layerNorm [64,1024] ran 67.5, 27.1, then 18.4 us); then 1.5. Alone
  // takes 1.9: recording the run after the wake-up would choose alone.
  let streak = 0; // pooled runs since the last run alone
  const ways: boolean[] = [];
  const timeOf = (p: boolean) => p ? ([2.5, 2.0][streak++] ?? 1.5) : (streak = 0, 1.9);
  const run = () => {
    const p = s.g.choose(KEY, s.clock);
    const ms = timeOf(p);
    ways.push(p);
    s.g.record(KEY, p, s.clock, ms, ELEMENTS);
    s.clock += ms;
  };
  const WARM = GOVERNOR_WARMUP_RUNS * (WAKING_RUNS + 2);
  for (let i = 0; i < WARM; i++) run();
  // Warm-up: each pooled run after a run alone (or first) comes WAKING_RUNS + 1 times, only the
  // last recorded.
  const round = [...Array(WAKING_RUNS + 1).fill(true), false];
  assert.deepEqual(ways, Array.from({ length: GOVERNOR_WARMUP_RUNS }, () => round).flat());
  const m = s.g.measured(KEY)!;
  assert.equal(m.pooledRuns, GOVERNOR_WARMUP_RUNS);
  assert.equal(m.pooled, 1.5e6 / ELEMENTS, "only settled pooled runs were recorded");
  // So the pool (1.5 ms settled) is chosen over alone (1.9 ms), as a pooled loop runs it.
  for (let i = 0; i < 20; i++) run();
  // (but for the checks of alone, 4, 8, 16 ms apart, after which a chosen pooled run pays the
  // wake-up again, recorded as chosen runs are: 14 of 20 here).
  assert.equal(ways[WARM], true);
  const pooledLater = ways.slice(WARM).filter((p) => p).length;
  assert.ok(pooledLater > 10, `${pooledLater} of 20 pooled`);
  // Without the rule the wake-ups would be measured: 2.5 ms, and alone chosen.
  const plain = { g: new Governor({ warmRuns: 0, wakeFirst: false }), clock: 1000 };
  streak = 0;
  for (let i = 0; i < 20; i++) {
    const p = plain.g.choose(KEY, plain.clock);
    const ms = timeOf(p);
    plain.g.record(KEY, p, plain.clock, ms, ELEMENTS);
    plain.clock += ms;
  }
  assert.ok(plain.g.measured(KEY)!.pooled > plain.g.measured(KEY)!.alone);
});

Deno.test("pool governor: workers idle past their polling time are asleep too", () => {
  const other = groupKey(["stats", "normalize"], 0, "rows", 1 << 20);
  // Another group's pooled call ends at 1001 ms; KEY's first (measured) pooled run follows.
  const measuredAfter = (gap: number) => {
    const woken = new Governor({ warmRuns: 0 });
    woken.choose(other, 1000);
    woken.record(other, true, 1000, 1, ELEMENTS);
    assert.equal(woken.choose(KEY, 1001 + gap), true);
    woken.record(KEY, true, 1001 + gap, 1, ELEMENTS);
    return woken.measured(KEY)!.pooledRuns;
  };
  // Within JOB_POLL_MS (0.5 ms) the workers still poll: the run is recorded at once.
  assert.equal(measuredAfter(0.2), 1);
  // 5 ms later they sleep: the run wakes them and is not recorded (the next one will be).
  assert.equal(measuredAfter(5), 0);
});

Deno.test("pool governor: runs alone that improve but still lose do not bring the checks back", () => {
  // One call per training step, 17 ms apart; the pool takes 2 ms, alone a little less each
  // time it runs (3.9, 3.8, ...: its times scatter downwards) but never near 2 ms.
  const s = governed();
  let aloneMs = 4;
  let alone = 0;
  for (let step = 0; step < 100; step++) {
    const p = s.g.choose(KEY, s.clock);
    const ms = p ? 2 : (aloneMs = Math.max(3, aloneMs - 0.1));
    if (!p) alone++;
    s.g.record(KEY, p, s.clock, ms, ELEMENTS);
    s.clock += 17;
  }
  // Warm-up (3), then checks 4, 8, 16, ... ms apart: at most one a step while under 17 ms,
  // then fewer; not one every step.
  assert.ok(alone <= 3 + 9, `${alone} of 100 steps ran alone`);
});

Deno.test("pool governor: changes its mind when the timings change", () => {
  const s = governed();
  // Pooled wins: alone for the warm-up (3) and the checks 4, 8, ..., 256 ms apart (7).
  assert.equal(600 - drive(s, 600, 1, 2), 3 + 7);
  // Another process now takes the other CPU: pooled calls take 4x longer than before. The
  // pooled average passes the alone one within a few calls.
  const pooled = drive(s, 2000, 4, 2);
  assert.ok(pooled < 20, `${pooled} of 2000 still pooled after the pool became slower`);
  // It leaves: the pool wins again, and is found again at the next check (at most 2 s
  // away), after which a few checks 4 ms apart settle it.
  drive(s, 2100, 1, 2);
  const settled = drive(s, 1000, 1, 2);
  assert.ok(settled >= 990, `${settled} of the next 1000 pooled`);
});

Deno.test("pool governor: a pool whose runs improve (workers warming up) is checked soon, then chosen", () => {
  const s = governed();
  // The calling thread's kernels are warm (1 ms); a worker's start in the interpreter: the
  // k-th pooled run takes 4 * 0.9^k ms, down to 0.5 ms (below 1 ms from the 14th on).
  let pooledRuns = 0;
  const choices: boolean[] = [];
  for (let i = 0; i < 300; i++) {
    const p = s.g.choose(KEY, s.clock);
    const ms = p ? Math.max(0.5, 4 * 0.9 ** pooledRuns++) : 1;
    s.g.record(KEY, p, s.clock, ms, ELEMENTS);
    s.clock += ms;
    choices.push(p);
  }
  // Each improving check comes 4 ms after the last: the 14th pooled run is within the first
  // 100 calls, and from then on the pool wins. (Checks spaced 4, 8, 16, ... ms, as for a
  // way that does not improve, would reach about 10 pooled runs in these 300 calls.)
  const last = choices.slice(200).filter((p) => p).length;
  assert.ok(last >= 98, `${last} of the last 100 calls pooled`);
  assert.ok(s.g.measured(KEY)!.pooled <= 0.5e6 / ELEMENTS + 1e-9, "the estimate is the best run");
});

Deno.test("pool governor: after a few slow pooled runs turn the choice, the pool is checked again at once", () => {
  const s = governed();
  // The pool wins (1 ms against 2); its checks of the calling thread alone are slower each
  // time, so they grow 4, 8, ..., 2048 ms apart.
  drive(s, 5000, 1, 2);
  assert.equal(s.g.measured(KEY)!.interval, 2048);
  // Another thread takes the second CPU for ten calls: pooled runs take 3 ms, the estimate
  // rises past the calling thread's, and the group turns to it.
  drive(s, 10, 3, 2);
  assert.equal(s.g.choose(KEY, s.clock), false, "alone after the slow phase");
  s.g.record(KEY, false, s.clock, 2, ELEMENTS);
  s.clock += 2;
  // The phase is over: the pool is checked within 4 ms and chosen again.
  const pooled = drive(s, 20, 1, 2);
  assert.ok(pooled >= 15, `${pooled} of the next 20 calls pooled`);
});

Deno.test("pool governor: one preempted run does not flip the choice", () => {
  const s = governed();
  drive(s, 200, 2, 1); // alone wins (1 ms against 2)
  // The next alone call is preempted for 50 ms: it counts as twice the average at most.
  assert.equal(s.g.choose(KEY, s.clock), false);
  s.g.record(KEY, false, s.clock, 50, ELEMENTS);
  s.clock += 50;
  assert.ok(s.g.measured(KEY)!.alone < 1.3e6 / ELEMENTS, "the average rose by 25% at most");
  assert.ok(drive(s, 100, 2, 1) <= 1, "still alone (but for a scheduled check of the pool)");
});

Deno.test("pool governor: groups are apart", () => {
  const s = governed();
  const other = groupKey(["sums", "write"], 0, "rows", 1 << 17);
  assert.notEqual(other, KEY, "another size is another group");
  assert.equal(s.g.choose(other, s.clock), true, "a new group starts with a pooled run");
  // Powers of two of elements: 2^16 up to 2^17 - 1 is one group.
  assert.equal(groupKey(["stats"], 2, "pixels", 65536), groupKey(["stats"], 2, "pixels", 131071));
  const keys = new Set([
    groupKey(["stats"], 2, "pixels", 65536),
    groupKey(["stats"], 2, "rows", 65536),
    groupKey(["stats"], 1, "pixels", 65536),
    groupKey(["sums"], 2, "pixels", 65536),
    groupKey(["stats", "normalize"], 2, "pixels", 65536),
    groupKey(["normalize", "stats"], 2, "pixels", 65536),
  ]);
  assert.equal(keys.size, 6, "layout, dtype, stage kinds and their order tell groups apart");
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
    // The new pool's first calls run pooled, unrecorded; then the group's own warm-up.
    for (let i = 0; i < POOL_WARM_RUNS + 2 * GOVERNOR_WARMUP_RUNS + 10; i++) {
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

Deno.test("pool governor: a new group starts with the way its nearest measured neighbour chose", () => {
  const s = governed();
  // The group of 2^20 elements measures: alone (1 ms) beats the pool (2 ms).
  drive(s, 2 * GOVERNOR_WARMUP_RUNS, 2, 1);
  // A new group of 2^18 (the same stages, dtype and layout) runs alone first, as its neighbour;
  // a group of another layout has no measured neighbour and alternates, pooled first.
  const near = groupKey(["sums", "write"], 0, "rows", 1 << 18);
  const apart = groupKey(["sums", "write"], 0, "pixels", 1 << 18);
  assert.equal(s.g.choose(apart, s.clock), true);
  const ways: boolean[] = [];
  for (let i = 0; i < 40; i++) {
    const p = s.g.choose(near, s.clock);
    ways.push(p);
    // At this size the pool wins: 0.5 ms against 1.
    const ms = p ? 0.5 : 1;
    s.g.record(near, p, s.clock, ms, 1 << 18);
    s.clock += ms;
  }
  assert.deepEqual(ways.slice(0, 4), [false, false, false, false], "alone first, as the neighbour");
  // The pool runs as checks 4 ms apart, the first 4 ms after the third run alone began (runs
  // of 1 ms: the seventh call), until it has measured three times, and wins from there on.
  assert.equal(ways.indexOf(true), GOVERNOR_WARMUP_RUNS - 1 + 4);
  const m = s.g.measured(near)!;
  assert.ok(m.pooledRuns >= GOVERNOR_WARMUP_RUNS && m.pooled < m.alone);
  assert.ok(ways.slice(-10).every((p) => p), "pooled once measured faster");
});
