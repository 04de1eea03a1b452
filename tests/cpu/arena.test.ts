/**
 * The calls' float64 arena (src/backends/cpu/arena.ts): zeroed allocations a cache line apart,
 * none past the block, the block taken once and reused (zeroed again) after every reset.
 */

import assert from "node:assert/strict";
import { Float64Arena } from "../../src/backends/cpu/arena.ts";

Deno.test("Float64Arena: zeroed, disjoint, a cache line apart, refused past the block", () => {
  let sources = 0;
  const arena = new Float64Arena(() => {
    sources++;
    return new Float64Array(40);
  });
  assert.equal(arena.take(1), undefined, "no block before the first call");
  arena.reset();
  const a = arena.take(3)!;
  const b = arena.take(9)!;
  assert.deepEqual([a.length, b.length], [3, 9]);
  assert.equal(b.byteOffset - a.byteOffset, 64);
  a.fill(1);
  b.fill(2);
  assert.deepEqual(Array.from(a), [1, 1, 1]);
  assert.equal(arena.take(17), undefined, "24 + 17 entries overflow 40");
  const c = arena.take(16)!;
  assert.equal(c.byteOffset, 24 * 8);
  arena.reset();
  const again = arena.take(12)!;
  assert.equal(again.byteOffset, 0);
  assert.deepEqual(Array.from(again), new Array(12).fill(0), "zeroed again after a reset");
  assert.equal(sources, 1);
});

Deno.test("Float64Arena: a source without a block is asked again at the next call", () => {
  let room = false;
  const arena = new Float64Arena(() => room ? new Float64Array(8) : undefined);
  arena.reset();
  assert.equal(arena.take(1), undefined);
  room = true;
  arena.reset();
  assert.deepEqual(Array.from(arena.take(8)!), new Array(8).fill(0));
});
