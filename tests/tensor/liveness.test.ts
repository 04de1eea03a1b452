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

Deno.test("host heap: a loop that never awaits gets its dropped tensors' blocks back", async () => {
  const r = await childJson([
    "run",
    "--v8-flags=--expose-gc",
    "--allow-read",
    "--allow-env",
    new URL("../fixtures/heap_drop_child.ts", import.meta.url).pathname,
  ]);
  assert.equal(r.keptIntact, true, "the kept tensors still hold their values");
  assert.equal(r.againWritten, true);
  assert.equal(r.dropped, 32);
  assert.equal(r.reclaimed, r.dropped, "each dropped tensor's block came back inside the job");
  assert.equal(r.grewBytes, 0, "the new tensors took those blocks, not new memory");
  assert.equal(r.fallbacks, 0);
});

Deno.test("drop watch: groups of blocks freed otherwise leave the queue unasked", async () => {
  const { BLOCKS_PER_GROUP, DropWatch } = await import("../../src/tensor/liveness.ts");
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
  // Without the compaction every one of the 20000 / BLOCKS_PER_GROUP groups would stay.
  assert.ok(watch.size < 20000 / BLOCKS_PER_GROUP / 2, `the others left: ${watch.size}`);
  // Without a collection nothing is asked, so nothing is given back (the owners live anyway).
  assert.equal(watch.reclaimIfCollected(), false);
  assert.deepEqual(given, []);
  assert.equal(owners.length, 20000);
});
