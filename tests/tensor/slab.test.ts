/**
 * Slabs (src/tensor/slab.ts): small host storage and float64 temporaries are views of shared
 * ArrayBuffers, each zero-filled, 8-byte aligned and disjoint from its neighbours; larger
 * ones get a buffer of their own; neighbours on one slab are not taken for overlapping
 * tensors.
 */

import assert from "node:assert/strict";
import { Slab, SLAB_BYTES, SLAB_MAX_BYTES, temporaryFloat64 } from "../../src/tensor/slab.ts";
import { allocateHostData } from "../../src/tensor/dtype.ts";
import { overlaps } from "../../src/ops/overlap.ts";
import { Tensor } from "../../src/tensor/tensor.ts";

Deno.test("slab: ranges are zero-filled, aligned, disjoint; a new slab when one is full", () => {
  const slab = new Slab();
  const taken: [ArrayBuffer, number, number][] = [];
  for (const bytes of [1, 12, 64, 1024, 3, 1000]) {
    const [buffer, at] = slab.take(bytes)!;
    assert.equal(at % 8, 0, "8-byte aligned");
    const view = new Uint8Array(buffer, at, bytes);
    assert.equal(view.findIndex((v) => v !== 0), -1, "zero-filled");
    view.fill(0xff);
    taken.push([buffer, at, bytes]);
  }
  for (let i = 0; i < taken.length; i++) {
    for (let j = i + 1; j < taken.length; j++) {
      const [bi, ai, ni] = taken[i];
      const [bj, aj, nj] = taken[j];
      assert.ok(bi !== bj || ai + ni <= aj || aj + nj <= ai, `ranges ${i} and ${j} are disjoint`);
    }
  }
  assert.equal(slab.take(SLAB_MAX_BYTES + 1), undefined, "larger ones are not served");
  // Filling a slab moves on to a fresh one.
  const first = slab.take(8)![0];
  let next = first;
  for (let i = 0; i < SLAB_BYTES / 8 && next === first; i++) next = slab.take(8)![0];
  assert.notEqual(next, first);
  assert.equal(new Uint8Array(next).findIndex((v) => v !== 0), -1, "a fresh slab is zero");
});

Deno.test("slab: small host storage and temporaries come from slabs, zeroed", () => {
  const a = allocateHostData("float32", 16);
  const b = allocateHostData("float32", 16);
  assert.equal(a.buffer, b.buffer, "neighbours share a slab");
  assert.ok(!(a.buffer instanceof SharedArrayBuffer));
  assert.equal(a.length, 16);
  a.fill(3);
  assert.deepEqual([...b], new Array(16).fill(0), "a neighbour's writes do not reach b");
  const big = allocateHostData("float32", SLAB_MAX_BYTES / 4 + 1);
  assert.equal(big.byteOffset, 0, "larger storage gets a buffer of its own");
  const t = temporaryFloat64(100);
  assert.equal(t.length, 100);
  assert.ok(t.every((v) => v === 0));
});

Deno.test("slab: tensors on one slab do not overlap; views of one storage do", () => {
  const a = Tensor.zeros([8]);
  const b = Tensor.zeros([8]);
  assert.equal((a.storage as Float32Array).buffer, (b.storage as Float32Array).buffer);
  assert.equal(overlaps(a, b), false);
  assert.equal(overlaps(a, a.slice(0, 2, 5)), true);
  a.copy_([1, 2, 3, 4, 5, 6, 7, 8]);
  assert.deepEqual(b.toArray(), [0, 0, 0, 0, 0, 0, 0, 0]);
});

Deno.test("slab: a slab whose buffer was detached (a tensor's storage transferred) is replaced", () => {
  const t = Tensor.zeros([3]);
  const storage = t.storage as Float32Array<ArrayBuffer>;
  storage.buffer.transfer();
  assert.equal(storage.length, 0);
  const next = Tensor.fromArray([1, 2, 3], [3]);
  assert.deepEqual(next.toArray(), [1, 2, 3]);
  assert.notEqual((next.storage as Float32Array).buffer, storage.buffer);
  const slab = new Slab();
  const [buffer] = slab.take(8)!;
  buffer.transfer();
  const [fresh, at] = slab.take(8)!;
  assert.ok(!fresh.detached && fresh !== buffer && at === 0);
  assert.equal(temporaryFloat64(4).length, 4);
});
