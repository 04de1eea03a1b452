/**
 * Dropped tensors inside one job (src/tensor/liveness.ts): a child process (the collector
 * exposed, so that it runs when the test says) drops 32 heap tensors (two groups) in its first
 * job, whose whole work never awaits, and makes 32 more after a collection: they take the
 * dropped tensors' blocks (no heap growth, no fallback), and the 16 tensors it kept keep their
 * values.
 * A reclaim that gave back blocks without the proof (a token's WeakRef cleared) hands the kept
 * tensors' blocks to the new ones, which this test catches.
 */

import assert from "node:assert/strict";
import { childJson } from "../helpers/child_json.ts";

/** The JSON line of a fixture script run in a child with the collector exposed. */
function gcChild(fixture: string) {
  return childJson([
    "run",
    "--v8-flags=--expose-gc",
    "--allow-read",
    "--allow-env",
    new URL(`../fixtures/${fixture}`, import.meta.url).pathname,
  ]);
}

Deno.test("host heap: a loop that never awaits gets its dropped tensors' blocks back", async () => {
  const r = await gcChild("heap_drop_child.ts");
  assert.equal(r.keptIntact, true, "the kept tensors still hold their values");
  assert.equal(r.againWritten, true);
  assert.equal(r.dropped, 32);
  assert.equal(r.reclaimed, r.dropped, "each dropped tensor's block came back inside the job");
  // The new tensors took those blocks, not new memory: new memory only for as many as the loop
  // itself took back (when V8 collected during it), each in a block under twice its size.
  assert.ok(
    r.grewBytes <= r.reclaimedInLoop * 2 * r.tensorBytes,
    `grew ${r.grewBytes} bytes, ${r.reclaimedInLoop} reclaimed in the loop`,
  );
  assert.equal(r.fallbacks, 0);
});

Deno.test("host heap: a slow loop that drops its results gets blocks back from V8's own collections", async () => {
  const r = await childJson([
    "run",
    "--allow-read",
    "--allow-env",
    new URL("../fixtures/heap_slow_drop_child.ts", import.meta.url).pathname,
  ]);
  assert.equal(r.keptIntact, true, "the kept tensors still hold their values");
  assert.equal(r.fallbacks, 0);
  // With canaries asked every 2 ms, a set was used up before the collection it waited for
  // ended, and this loop got no block back (0 of 2000; its heap grew by all 2000 tensors).
  // Asked at V8's sweep of the old space, or later and later, 480-1048 came back here.
  assert.ok(r.reclaimed >= r.calls / 10, `${r.reclaimed} of ${r.calls} reclaimed`);
  assert.ok(
    r.grewBytes <= 0.9 * r.calls * r.tensorBytes,
    `grew ${r.grewBytes} bytes for ${r.calls} tensors of ${r.tensorBytes}`,
  );
});

Deno.test("drop watch: V8's old-space statistics are readable (the sign that asks a canary)", async () => {
  const { oldSpaceBytes } = await import("../../src/tensor/liveness.ts");
  // 0 would mean no statistics: the questions would then follow the backoff alone.
  assert.ok(oldSpaceBytes() > 0);
});

/** What tests/fixtures/heap_full_child.ts prints. */
interface FullHeapReport {
  readonly allocations: number;
  readonly fallbacks: number;
  readonly reclaimed: number;
  readonly limitMiB: number;
  readonly keptIntact: boolean;
}

/**
 * tests/fixtures/heap_full_child.ts' report with a heap of `mib` MiB: 160 tensors of 4 MiB
 * dropped in one job, 4 kept (checked intact here).
 */
async function fullHeapChild(mib: number): Promise<FullHeapReport> {
  const r = await childJson<FullHeapReport>([
    "run",
    "--allow-read",
    "--allow-env",
    new URL("../fixtures/heap_full_child.ts", import.meta.url).pathname,
  ], { ACLNN_NORM_HOST_HEAP_MB: String(mib) });
  assert.equal(r.limitMiB, mib);
  assert.equal(r.keptIntact, true, "the kept tensors still hold their values");
  return r;
}

Deno.test("host heap: a full heap collects itself and takes back the blocks of dropped tensors", async () => {
  const r = await fullHeapChild(64);
  // Without the collection of its own the heap fell back for all but the first 8 (152 of
  // 160, none reclaimed) until V8 collected; with it, a collection after 16 MiB of fallbacks
  // (COLLECT_SOON_BYTES), then after every 64 MiB (each gives back less than
  // COLLECTION_PAYS_BYTES, and the limit caps COLLECT_WHEN_FULL_BYTES), brings a full heap's
  // worth of dropped blocks back.
  assert.ok(r.reclaimed >= 24, `${r.reclaimed} reclaimed`);
  assert.ok(r.fallbacks <= r.allocations - 24, `${r.fallbacks} fallbacks`);
});

Deno.test("host heap: after a collection that paid, the next comes after 16 MiB", async () => {
  const r = await fullHeapChild(256);
  // 60 of the 4 MiB tensors fill the heap beside the 4 kept; the first collection comes
  // after 16 MiB of fallbacks (COLLECT_SOON_BYTES: 4 tensors) and gives back 240 MiB, more
  // than COLLECTION_PAYS_BYTES, so the next one comes after 16 MiB again: 9 fallbacks where a
  // wait of 128 MiB after each collection (32 tensors) fell back 49-50 times.
  assert.ok(r.fallbacks <= 16, `${r.fallbacks} fallbacks`);
  // Every dropped tensor comes back but those of the last fill, which the loop ends before
  // collecting: at least 160 - 4 kept - 16 fallbacks - 60 = 80 (112 here; one fresh-clone CI
  // run gave 96, a group of 16 later, where this said 100).
  assert.ok(r.reclaimed >= 80, `${r.reclaimed} reclaimed`);
});

Deno.test("drop watch: groups grow while they come back whole, and shrink while results are kept", async () => {
  const r = await gcChild("group_size_child.ts");
  // Four rounds that drop all 256 owners: each reclaim finds its groups dead at their first
  // question, so the groups double up to the maximum; every closed group's blocks come back.
  assert.equal(r.sizes[3], r.max, `sizes ${r.sizes}`);
  for (const n of r.given.slice(0, 4)) assert.ok(n >= 256 - r.max, `given ${r.given}`);
  // Then rounds that keep one owner in 8: groups of 16 or 8 all hold a kept one and answer
  // "alive", so they halve down to the minimum, where half of a round's blocks come back.
  assert.equal(r.sizes[7], r.min, `sizes ${r.sizes}`);
  assert.ok(r.given[7] >= 256 / 2 - r.max, `given ${r.given}`);
});

Deno.test("drop watch: groups of blocks freed otherwise leave the queue unasked", async () => {
  const { MIN_BLOCKS_PER_GROUP, DropWatch } = await import("../../src/tensor/liveness.ts");
  type FakeBlock = { held: boolean };
  const given: FakeBlock[] = [];
  const watch = new DropWatch<FakeBlock>((b) => given.push(b), (b) => b.held, () => 0);
  const owners: object[] = [];
  let heldGroups = 0;
  for (let i = 0; i < 20000; i++) {
    const owner = {};
    const block = { held: i % 100 === 0 }; // a disposing loop: 1 block in 100 still held
    if (block.held) heldGroups++;
    owners.push(owner);
    watch.missed(0); // keeps it watching (no sign of dropped results stops it)
    watch.watch(owner, block);
    assert.ok(watch.size <= Math.max(1024, 2 * heldGroups) + 1, `size at ${i}: ${watch.size}`);
  }
  assert.ok(watch.size >= heldGroups, "the groups with a held block stay watched");
  // Without the compaction every one of the 20000 / MIN_BLOCKS_PER_GROUP groups would stay
  // (no reclaim ran, so groups keep their first size).
  assert.equal(watch.groupSize, MIN_BLOCKS_PER_GROUP);
  assert.ok(watch.size < 20000 / MIN_BLOCKS_PER_GROUP / 2, `the others left: ${watch.size}`);
  // Without a collection nothing is asked, so nothing is given back (the owners live anyway).
  assert.equal(watch.reclaimIfCollected(), false);
  assert.deepEqual(given, []);
  assert.equal(owners.length, 20000);
});
