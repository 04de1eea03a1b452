/**
 * The host caching allocator (src/tensor/host_heap.ts, host_blocks.ts): large host storage is
 * allocated there in size classes; a freed block is cached for its class and reused (zero-filled
 * on request, else with its old bytes, poisoned to NaN in tests); when the heap is full the
 * cache is flushed, neighbours merge and the top comes down; views of other buffers have no heap
 * address; a full heap leaves storage on a buffer of its own (the kernels then copy, with the
 * same results); dispose() makes a host tensor of any size unusable.
 */

import assert from "node:assert/strict";
import { BlockPool, sizeClass } from "../../src/tensor/host_blocks.ts";
import {
  blockBytes,
  heapAddress,
  heapAllocate,
  heapFreed,
  HOST_HEAP_SLACK_BYTES,
  hostHeapMemory,
  hostHeapUsage,
  releaseForTests,
  startHostHeap,
} from "../../src/tensor/host_heap.ts";
import {
  HOST_HEAP_DEFAULT_BYTES,
  HOST_HEAP_ENV,
  HOST_HEAP_TENSOR_LIMIT_BYTES,
  hostHeapMaxBytes,
} from "../../src/tensor/host_heap_size.ts";
import {
  allocateHostBuffer,
  allocateHostData,
  HEAP_HOST_BYTES,
  SHARED_HOST_BYTES,
} from "../../src/tensor/dtype.ts";
import { AclnnError, batchNorm, batchNormReduceBackward, keep, tidy } from "../../mod.ts";
import { Tensor } from "../../src/tensor/tensor.ts";

// The heap of these tests poisons reused blocks (checked below); a child checks the default.
startHostHeap({ poisonReused: true });

Deno.test("host heap: large host storage lives in the heap, small storage does not", () => {
  const large = allocateHostData("float32", HEAP_HOST_BYTES / 4);
  const small = allocateHostData("float32", HEAP_HOST_BYTES / 4 - 1);
  assert.ok(heapAddress(large) > 0, "large storage has a heap address");
  assert.equal(large.buffer, hostHeapMemory()!.buffer, "on the heap's memory");
  assert.equal(large.length, HEAP_HOST_BYTES / 4);
  assert.equal(heapAddress(small), -1);
  assert.ok(!(small.buffer instanceof SharedArrayBuffer), "small storage stays unshared");
  assert.equal(heapAddress(new Float32Array(new SharedArrayBuffer(1 << 16))), -1);
  assert.equal(heapAddress(undefined), -1);
  // Buffers of their own (the heap full or off) are shared only where the pool can use them.
  assert.ok(!(allocateHostBuffer(SHARED_HOST_BYTES - 1) instanceof SharedArrayBuffer));
  assert.ok(allocateHostBuffer(SHARED_HOST_BYTES) instanceof SharedArrayBuffer);
  const half = allocateHostData("float16", HEAP_HOST_BYTES);
  assert.ok(half instanceof Float16Array && heapAddress(half) > 0);
  assert.equal(heapAddress(half) % 64, 0, "blocks are 64-byte aligned");
});

Deno.test("host heap: size classes step by 4 KiB, then by quarters of a power of two", () => {
  assert.equal(sizeClass(1), 4096);
  assert.equal(sizeClass(4097), 8192);
  assert.equal(sizeClass(65536), 65536);
  assert.equal(sizeClass(65537), 81920);
  assert.equal(sizeClass(100_000), 114688); // 2^16 + 3 * 2^14
  assert.equal(sizeClass(25_690_112 + 128), 29_360_128); // [32,64,56,56] float32: 2^24 * 1.75
  for (let bytes = 1; bytes < 1e8; bytes = Math.ceil(bytes * 1.37)) {
    const c = sizeClass(bytes);
    assert.ok(
      c >= bytes && c % 64 === 0 && c <= Math.max(bytes + 4096, bytes * 1.25),
      `${bytes} -> ${c}`,
    );
    assert.equal(sizeClass(c), c, "a class is its own class");
  }
});

Deno.test("host heap: a tensor of a whole class takes its class and the slack, no more", () => {
  const MiB = 2 ** 20;
  // [2048,768] and [16,64,32,32] float32: the slack past the class, not the next class.
  assert.equal(blockBytes(6 * MiB), 6 * MiB + 64);
  assert.equal(blockBytes(4 * MiB), 4 * MiB + 64);
  assert.equal(blockBytes(4096), 4096 + 64);
  // Room for the slack inside the class: the class itself.
  assert.equal(blockBytes(4 * MiB - 64), 4 * MiB);
  assert.equal(blockBytes(4 * MiB - 63), 4 * MiB + 64);
  assert.equal(blockBytes(100_000), sizeClass(100_032));
  for (let bytes = 1; bytes < 1e8; bytes = Math.ceil(bytes * 1.13)) {
    const size = blockBytes(bytes);
    const before = sizeClass(Math.ceil((bytes + HOST_HEAP_SLACK_BYTES) / 64) * 64);
    assert.ok(size - bytes >= HOST_HEAP_SLACK_BYTES, `${bytes} -> ${size}: the slack fits`);
    assert.ok(size % 64 === 0 && size <= before, `${bytes} -> ${size}: aligned, at most ${before}`);
  }
  // The heap takes blocks of that size: bytes in use grow by it.
  const before = hostHeapUsage().bytesInUse;
  const t = Tensor.empty([16, 64, 32, 32]);
  assert.equal(hostHeapUsage().bytesInUse - before, 4 * MiB + 64);
  t.dispose();
});

Deno.test("block pool: a freed block is cached for its class; a miss coalesces the cache before the top", () => {
  const cap = 1 << 20;
  const pool = new BlockPool(65536, (end) => end <= cap);
  const a = pool.take(65536)!;
  const b = pool.take(65536)!;
  const c = pool.take(131072)!;
  assert.deepEqual([a.at, b.at, c.at], [65536, 131072, 196608]);
  assert.ok(!a.dirty && !b.dirty && !c.dirty, "fresh memory above `clean` is still zero");
  const top = pool.top;
  pool.give(b.at, 65536);
  assert.equal(pool.counters.bytesCached, 65536);
  // The next request of b's class takes b back without searching: a hit, with old bytes.
  const again = pool.take(65536)!;
  assert.equal(again.at, b.at);
  assert.ok(again.dirty);
  assert.equal(pool.counters.cacheHits, 1);
  assert.equal(pool.counters.flushes, 0, "a hit flushes nothing");
  // A request of another class flushes the cache: a and b merge into a range of 128 KiB, taken
  // before any fresh memory at the top.
  pool.give(again.at, 65536);
  pool.give(a.at, 65536);
  const merged = pool.take(131072)!;
  assert.equal(merged.at, a.at, "neighbours merged into one free range");
  assert.ok(merged.dirty);
  assert.equal(pool.counters.flushes, 1);
  assert.equal(pool.top, top, "no fresh memory");
  // A smaller shape takes the front of that block; when the larger one comes back, the smaller
  // one's freed block and the rest merge again (the shape coming back takes no fresh memory).
  pool.give(merged.at, 131072);
  const smaller = pool.take(65536)!;
  assert.equal(smaller.at, a.at);
  pool.give(smaller.at, 65536);
  const back = pool.take(131072)!;
  assert.equal(back.at, a.at, "the freed front and the rest, merged");
  assert.equal(pool.top, top, "still no fresh memory");
  assert.equal(pool.counters.flushes, 3);
  // Freed blocks at the top give the space back to the bump pointer on the next flush.
  pool.give(c.at, 131072);
  pool.give(back.at, 131072);
  assert.equal(pool.counters.blocks, 0);
  assert.equal(pool.take(cap), undefined, "nothing fits beyond the cap");
  assert.equal(pool.top, 65536, "the top came down to the base");
  assert.equal(pool.counters.bytesCached, 0);
  assert.equal(pool.counters.bytesInUse, 0);
  assert.equal(pool.counters.peakBytesInUse, 65536 + 65536 + 131072);
});

Deno.test("block pool: a miss takes the smallest free range that holds it (best fit)", () => {
  const pool = new BlockPool(65536, () => true);
  const large = pool.take(131072)!;
  pool.take(65536); // live: keeps the two free ranges apart
  const small = pool.take(65536)!;
  pool.take(65536);
  pool.give(large.at, 131072);
  pool.give(small.at, 65536);
  // No 8 KiB block is cached: the cache is flushed into two ranges, 128 KiB and 64 KiB.
  assert.equal(pool.take(8192)!.at, small.at, "the 64 KiB range, not the first one");
  assert.equal(pool.take(131072)!.at, large.at, "the large range is still whole");
});

Deno.test("host heap: reused blocks are zero-filled on request, else poisoned (this policy)", () => {
  const bytes = 3 * 65536;
  const first = heapAllocate(bytes)!;
  new Uint8Array(first.buffer, first.at, bytes).fill(7);
  releaseForTests(first);
  const zeroed = heapAllocate(bytes)!;
  assert.equal(zeroed.at, first.at, "the cached block of the same class");
  const view = new Uint8Array(zeroed.buffer, zeroed.at, bytes);
  assert.equal(view.findIndex((v) => v !== 0), -1, "zero-filled");
  view.fill(7);
  releaseForTests(zeroed);
  const poisoned = heapAllocate(bytes, false)!;
  assert.equal(poisoned.at, first.at);
  assert.ok(Number.isNaN(new Float32Array(poisoned.buffer, poisoned.at, 4)[0]), "NaN-filled");
  releaseForTests(poisoned);
  // Freeing a block twice does nothing the second time.
  const before = hostHeapUsage().bytesInUse;
  releaseForTests(poisoned);
  assert.equal(hostHeapUsage().bytesInUse, before);
  // Once in use, the heap's policy stays.
  assert.throws(() => startHostHeap({ poisonReused: false }), /under another policy/);
  startHostHeap({ poisonReused: true });
});

Deno.test("host heap: under the default policy, a reused block keeps its old bytes", async () => {
  const module = new URL("../../src/tensor/host_heap.ts", import.meta.url);
  const script = [
    `import { heapAllocate, releaseForTests } from "${module}";`,
    `const first = heapAllocate(${3 * 65536})!;`,
    `new Uint8Array(first.buffer, first.at, ${3 * 65536}).fill(7);`,
    `releaseForTests(first);`,
    `const kept = heapAllocate(${3 * 65536}, false)!;`,
    `console.log(kept.at === first.at, new Uint8Array(kept.buffer, kept.at, 4096)[100]);`,
  ].join("\n");
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-config", "--ext=ts", script],
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  assert.equal(new TextDecoder().decode(out.stdout).trim(), "true 7", "old bytes, no fill");
});

Deno.test("host heap: an operator's output reuses a disposed output's block without zero-filling", () => {
  const x = Tensor.random([4, 8, 32, 32], { seed: 9 });
  const first = batchNorm({ input: x, training: true });
  const at = heapAddress(first.output.storage as Float32Array);
  const want = first.output.toArray();
  first.output.dispose();
  const hits = hostHeapUsage().cacheHits;
  const second = batchNorm({ input: x, training: true });
  assert.equal(heapAddress(second.output.storage as Float32Array), at, "the same block");
  assert.equal(hostHeapUsage().cacheHits, hits + 1);
  // The block came poisoned (NaN): every element is the kernel's.
  assert.deepEqual(second.output.toArray(), want);
});

Deno.test("host heap: when it is full, storage gets a buffer of its own", () => {
  assert.equal(
    hostHeapMaxBytes(),
    HOST_HEAP_DEFAULT_BYTES,
    "2 GiB without --allow-sys, unless configured",
  );
  assert.equal(heapAllocate(hostHeapMaxBytes()), undefined, "beyond the maximum");
  // Fill the heap (grown memory is committed only when touched, so this is cheap).
  const taken: { at: number }[] = [];
  for (const size of [1 << 26, 1 << 20, 1 << 16]) {
    for (let block = heapAllocate(size); block; block = heapAllocate(size)) taken.push(block);
  }
  assert.ok(taken.length >= 8, `${taken.length} blocks before full`);
  try {
    const data = allocateHostData("float32", 1 << 16);
    assert.equal(heapAddress(data), -1, "not in the full heap");
    assert.ok(data.buffer instanceof SharedArrayBuffer, "shared, for the worker pool");
    assert.equal(data.length, 1 << 16);
  } finally {
    for (const block of taken) releaseForTests(block);
  }
  assert.ok(heapAddress(allocateHostData("float32", 1 << 16)) > 0, "room again once freed");
});

Deno.test("host heap: kernels give the same results on heap and non-heap storage", () => {
  const shape = [4, 8, 32, 32];
  const x = Tensor.random(shape, { seed: 1, distribution: "normal" });
  const dy = Tensor.random(shape, { seed: 2, distribution: "normal" });
  assert.ok(heapAddress(x.storage as Float32Array) > 0, "x is in the heap");
  const own = (t: Tensor) => {
    const data = new Float32Array(new SharedArrayBuffer(t.numel * 4));
    data.set(t.storage as Float32Array);
    return new Tensor(data, "float32", t.shape, t.strides, 0);
  };
  const mean = Tensor.random([8], { seed: 3, low: -0.1, high: 0.1 });
  const invstd = Tensor.random([8], { seed: 4, low: 0.5, high: 2 });
  const args = { mean, invstd, weight: invstd };
  const inHeap = batchNormReduceBackward({ gradOut: dy, input: x, ...args });
  const outside = batchNormReduceBackward({ gradOut: own(dy), input: own(x), ...args });
  for (const key of ["sumDy", "sumDyXmu", "gradWeight", "gradBias"] as const) {
    assert.deepEqual(inHeap[key]!.toArray(), outside[key]!.toArray(), key);
  }
  // And against float64 sums of the same data.
  const xs = x.toFloat64Array();
  const ds = dy.toFloat64Array();
  const m = mean.toFloat64Array();
  const sumDy = new Float64Array(8);
  const sumDyXmu = new Float64Array(8);
  for (let i = 0; i < xs.length; i++) {
    const c = Math.floor(i / 1024) % 8;
    sumDy[c] += ds[i];
    sumDyXmu[c] += ds[i] * (xs[i] - m[c]);
  }
  const close = (got: Float64Array, want: Float64Array, name: string) => {
    for (let c = 0; c < 8; c++) {
      const tolerance = 1e-5 * (1 + Math.abs(want[c]));
      assert.ok(Math.abs(got[c] - want[c]) <= tolerance, `${name}[${c}]: ${got[c]} vs ${want[c]}`);
    }
  };
  close(inHeap.sumDy!.toFloat64Array(), sumDy, "sumDy");
  close(inHeap.sumDyXmu!.toFloat64Array(), sumDyXmu, "sumDyXmu");
});

Deno.test("host heap: dispose() frees a large host tensor's block now; later use is an error", () => {
  const t = Tensor.random([4, 8, 32, 32], { seed: 5 });
  const data = t.storage as Float32Array;
  const at = heapAddress(data);
  assert.ok(at > 0, "in the heap");
  const blocks = hostHeapUsage().blocks;
  const view = t.reshape([32, 1024]);
  t.dispose();
  assert.equal(hostHeapUsage().blocks, blocks - 1, "the block is free");
  assert.ok(heapFreed(data));
  t.dispose(); // idempotent
  assert.equal(hostHeapUsage().blocks, blocks - 1);
  assert.throws(() => view.toArray(), /was disposed/, "views of it are unusable");
  assert.throws(() => t.copy_(new Float32Array(t.numel)), /was disposed/);
  assert.throws(
    () => batchNorm({ input: t, training: true }),
    (e: unknown) =>
      e instanceof AclnnError && e.code === 161002 && /input was disposed/.test(e.message),
  );
  // A small host tensor (on a slab, not in the heap) is unusable after dispose() too.
  const small = Tensor.fromArray([1, 2, 3], [3]);
  small.dispose();
  assert.throws(() => small.toArray(), /was disposed/);
  assert.throws(
    () => batchNorm({ input: small.reshape([1, 3]), training: true }),
    (e: unknown) => e instanceof AclnnError && e.code === 161002,
  );
});

Deno.test("host heap: `using` on a result frees the outputs' blocks at the end of the scope", () => {
  const x = Tensor.random([4, 8, 32, 32], { seed: 6 });
  const blocks = hostHeapUsage().blocks;
  {
    using result = batchNorm({ input: x, training: true });
    assert.ok(heapAddress(result.output.storage as Float32Array) > 0);
    assert.equal(hostHeapUsage().blocks, blocks + 1, "the output took a block");
  }
  assert.equal(hostHeapUsage().blocks, blocks, "given back when the scope ended");
});

Deno.test("host heap: ACLNN_NORM_HOST_HEAP_MB sets its maximum (0: no tensor in it); unset, a quarter of memory", async () => {
  const script = [
    `import { allocateHostData } from "${new URL("../../src/tensor/dtype.ts", import.meta.url)}";`,
    `import { heapAddress } from "${new URL("../../src/tensor/host_heap.ts", import.meta.url)}";`,
    `import { hostHeapMaxBytes } from "${new URL(
      "../../src/tensor/host_heap_size.ts",
      import.meta.url,
    )}";`,
    `const data = allocateHostData("float32", 1 << 16);`,
    `console.log(hostHeapMaxBytes(), heapAddress(data) >= 0, data.length);`,
  ].join("\n");
  const run = async (value: string) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--no-config", script],
      env: { [HOST_HEAP_ENV]: value },
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    return new TextDecoder().decode(out.stdout).trim();
  };
  assert.equal(await run("0"), "0 false 65536", "no heap: storage on its own buffer");
  // With no tensor in the heap, the row norms still run: they stage through its scratch.
  const rows = await new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      "--no-config",
      `import { layerNorm, Tensor } from "${new URL("../../mod.ts", import.meta.url)}";\n` +
      `const r = layerNorm({ input: Tensor.fromArray([1, 2, 3, 4], [2, 2]), normalizedShape: [2] });\n` +
      `console.log([...r.output.toFloat64Array()].map((v) => v.toFixed(3)).join());`,
    ],
    env: { [HOST_HEAP_ENV]: "0" },
  }).output();
  assert.equal(new TextDecoder().decode(rows.stdout).trim(), "-1.000,1.000,-1.000,1.000");
  // Unset, with every permission (deno eval): a quarter of the machine's memory.
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-config", `${script}\nconsole.log(Deno.systemMemoryInfo().total);`],
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const [line, total] = new TextDecoder().decode(out.stdout).trim().split("\n");
  const quarter = Math.floor(Number(total) / 4 / 65536) * 65536;
  const want = Math.min(HOST_HEAP_TENSOR_LIMIT_BYTES, Math.max(2 ** 28, quarter));
  assert.equal(line, `${want} true 65536`, "a quarter of the machine's memory");
  assert.equal(await run("64"), `${64 << 20} true 65536`);
  // A bad value is an error that names the variable, not ignored.
  for (const bad of ["lots", "-5", "1.5"]) {
    await assert.rejects(
      () => run(bad),
      new RegExp(`${HOST_HEAP_ENV}=${bad.replace(".", "\\.")}: must be a whole number of MiB`),
    );
  }
});

Deno.test("host heap: at its largest maximum, a heap full of tensors still leaves the kernels their scratch", async () => {
  // ACLNN_NORM_HOST_HEAP_MB at 4 GiB (as a quarter of a 16 GiB machine gives): tensors fill
  // the heap to its maximum (grown memory is committed only when touched, so this is cheap),
  // then a LayerNorm whose tensors fell outside the heap stages them through kernel scratch.
  const script = `
import { layerNorm, Tensor } from "${new URL("../../mod.ts", import.meta.url)}";
import { heapAllocate } from "${new URL("../../src/tensor/host_heap.ts", import.meta.url)}";
import { hostHeapMaxBytes } from "${new URL(
    "../../src/tensor/host_heap_size.ts",
    import.meta.url,
  )}";
for (const size of [1 << 26, 1 << 20, 1 << 16]) while (heapAllocate(size));
const x = Tensor.random([2048, 768], { seed: 1 });
const r = layerNorm({ input: x, normalizedShape: [768] });
const y = r.output.toFloat64Array();
console.log(hostHeapMaxBytes(), y.length, Number.isFinite(y[0]));
`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-config", script],
    env: { [HOST_HEAP_ENV]: "4096" },
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  assert.equal(
    new TextDecoder().decode(out.stdout).trim(),
    `${HOST_HEAP_TENSOR_LIMIT_BYTES} 1572864 true`,
    "the maximum is capped below the memory's limit, and the call ran",
  );
});

Deno.test("host heap: tidy() frees the host tensors it made, keeps what it returns or keep()s", () => {
  const x = Tensor.random([4, 8, 32, 32], { seed: 10 });
  const blocks = hostHeapUsage().blocks;
  let inner: Tensor | undefined;
  let kept: Tensor | undefined;
  const returned = tidy(() => {
    const r = batchNorm({ input: x, training: true });
    inner = r.output;
    kept = keep(Tensor.random([4, 8, 32, 32], { seed: 11 }));
    const small = Tensor.fromArray([1, 2], [2]);
    return { saveMean: r.saveMean, small };
  });
  assert.throws(() => inner!.toArray(), /was disposed/, "a tensor made inside is freed");
  assert.deepEqual(returned.small.toArray(), [1, 2], "a returned tensor survives");
  assert.equal(returned.saveMean.shape[0], 8);
  assert.equal(kept!.shape[0], 4, "keep() takes it out of the scope");
  assert.equal(kept!.toArray().length, 4 * 8 * 32 * 32);
  assert.equal(hostHeapUsage().blocks, blocks + 1, "only the kept block is still in use");
  assert.ok(x.toArray().length > 0, "a tensor from outside is untouched");
  kept!.dispose();
  assert.equal(hostHeapUsage().blocks, blocks);
});

Deno.test("host heap: a disposed input is refused on a repeated call (the memo does not skip it)", () => {
  for (const shape of [[2, 3], [4, 8, 32, 32]]) {
    const x = Tensor.random(shape, { seed: 12 });
    const args = { input: x, training: true };
    using _first = batchNorm(args);
    x.dispose();
    assert.throws(
      () => batchNorm(args),
      (e: unknown) =>
        e instanceof AclnnError && e.code === 161002 && /input was disposed/.test(e.message),
      `${shape}`,
    );
  }
});

Deno.test("host heap: a loop that drops its results stays within the maximum plus one call's scratch", async () => {
  // 16 MiB of heap; each layerNorm of [512, 1024] float32 allocates 2 MiB of output. Once the
  // heap is full of dropped outputs, outputs fall back outside it and the kernels stage them
  // through scratch above the maximum, which tensors must not take afterwards.
  const script = [
    `import { hostHeapUsage, layerNorm, Tensor } from "${new URL(
      "../../mod.ts",
      import.meta.url,
    )}";`,
    `const x = Tensor.random([512, 1024], { seed: 1 });`,
    `for (let i = 0; i < 40; i++) layerNorm({ input: x, normalizedShape: [1024] });`,
    `const u = hostHeapUsage();`,
    `console.log(u.bytesReserved, u.fallbacks);`,
  ].join("\n");
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-config", script],
    env: { [HOST_HEAP_ENV]: "16" },
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const [reserved, fallbacks] = new TextDecoder().decode(out.stdout).trim().split(" ").map(Number);
  assert.ok(fallbacks > 20, `outputs fell back (${fallbacks})`);
  assert.ok(reserved <= (16 + 8) * 2 ** 20, `reserved ${reserved / 2 ** 20} MiB`);
});

Deno.test("host heap: a loop that disposes tensors of varying sizes prompts no collection", async () => {
  // Sizes cycle, so requests miss their classes and are cut again from coalesced free memory
  // below the top's highest mark: no sign of dropped results. When those counted as one, every
  // 64 MiB of them prompted V8 (liveness.ts nudges: external memory pressure), a full
  // collection every few milliseconds in a loop with nothing to collect.
  const script = [
    `import { Tensor } from "${new URL("../../mod.ts", import.meta.url)}";`,
    `for (let i = 0; i < 3000; i++) {`,
    `  Tensor.empty([1 + (i % 64), 128, 8, 8 + (i % 5)]).dispose();`,
    `}`,
  ].join("\n");
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-config", "--v8-flags=--trace-gc", script],
  }).output();
  const log = new TextDecoder().decode(out.stdout);
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  assert.match(log, /Scavenge|Mark-Compact|Mark-sweep/, "the trace is V8's");
  const prompted = log.split("\n").filter((l) => /external memory pressure/.test(l));
  assert.equal(prompted.length, 0, prompted.join("\n"));
});
