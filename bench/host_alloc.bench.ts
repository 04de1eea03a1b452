/**
 * `deno bench bench/host_alloc.bench.ts`: what the host-storage constants of src/tensor/ rest
 * on (bench/RESULTS.md, "Why the constants are what they are"):
 * - a typed array of its own against a view of a slab (slab.ts: `SLAB_BYTES`,
 *   `SLAB_MAX_BYTES`);
 * - an ArrayBuffer against a SharedArrayBuffer of the same size, and a read-and-write pass over
 *   4M float32 on each (dtype.ts: `SHARED_HOST_BYTES`).
 *
 * @module
 */

import { Slab } from "../src/tensor/slab.ts";

const slab = new Slab();

const arrays: [string, number, 4 | 8][] = [
  ["16 float32", 16, 4],
  ["16 float64", 16, 8],
  ["1024 float64", 1024, 8],
];
for (const [name, length, size] of arrays) {
  const make = size === 4
    ? (buffer?: ArrayBuffer, at = 0) =>
      buffer ? new Float32Array(buffer, at, length) : new Float32Array(length)
    : (buffer?: ArrayBuffer, at = 0) =>
      buffer ? new Float64Array(buffer, at, length) : new Float64Array(length);
  Deno.bench(`own typed array, ${name}`, { group: `array ${name}`, baseline: true }, () => {
    make();
  });
  if (length * size > 1024) continue;
  Deno.bench(`slab view, ${name}`, { group: `array ${name}` }, () => {
    const [buffer, at] = slab.take(length * size)!;
    make(buffer, at);
  });
}

for (const kib of [4, 16, 64, 1024]) {
  const bytes = kib * 1024;
  Deno.bench(`ArrayBuffer ${kib} KiB`, { group: `buffer ${kib} KiB`, baseline: true }, () => {
    new ArrayBuffer(bytes);
  });
  Deno.bench(`SharedArrayBuffer ${kib} KiB`, { group: `buffer ${kib} KiB` }, () => {
    new SharedArrayBuffer(bytes);
  });
}

const PASS = 1 << 22;
const plain = new Float32Array(new ArrayBuffer(PASS * 4));
const shared = new Float32Array(new SharedArrayBuffer(PASS * 4));

/** One read-and-write pass: every element scaled in place. */
function pass(a: Float32Array): void {
  for (let i = 0; i < a.length; i++) a[i] = a[i] * 0.5 + 1;
}

Deno.bench("pass over 4M float32, ArrayBuffer", { group: "pass", baseline: true }, () => {
  pass(plain);
});
Deno.bench("pass over 4M float32, SharedArrayBuffer", { group: "pass" }, () => {
  pass(shared);
});
