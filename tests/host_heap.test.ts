/**
 * The host heap (src/tensor/host_heap.ts): large host storage is allocated there, zero-filled
 * also when a freed block is reused; freed blocks merge with their neighbours and the top
 * comes down; views of other buffers have no heap address; a full heap leaves storage on a
 * buffer of its own (the kernels then copy, with the same results).
 */

import assert from "node:assert/strict";
import {
  heapAddress,
  heapAllocate,
  heapFreed,
  HOST_HEAP_DEFAULT_BYTES,
  HOST_HEAP_ENV,
  HOST_HEAP_SLACK_BYTES,
  hostHeapMaxBytes,
  hostHeapMemory,
  hostHeapUsage,
  releaseForTests,
} from "../src/tensor/host_heap.ts";
import {
  allocateHostBuffer,
  allocateHostData,
  HEAP_HOST_BYTES,
  SHARED_HOST_BYTES,
} from "../src/tensor/dtype.ts";
import { AclnnError, batchNorm, batchNormReduceBackward } from "../mod.ts";
import { Tensor } from "../src/tensor/tensor.ts";

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

Deno.test("host heap: freed blocks are reused zero-filled, merged, and the top comes down", () => {
  const bytes = 3 * 65536;
  const a = heapAllocate(bytes)!;
  const b = heapAllocate(bytes)!;
  const c = heapAllocate(bytes)!;
  const size = b.at - a.at;
  assert.ok(size >= bytes + HOST_HEAP_SLACK_BYTES && size % 64 === 0, `block size ${size}`);
  assert.equal(c.at - b.at, size, "consecutive blocks");
  const used = hostHeapUsage().bytesInUse;
  new Uint8Array(b.buffer, b.at, bytes).fill(7);
  releaseForTests(b.at);
  assert.equal(hostHeapUsage().bytesInUse, used - size);
  // The freed block is found first and comes back zeroed.
  const again = heapAllocate(bytes)!;
  assert.equal(again.at, b.at);
  const view = new Uint8Array(again.buffer, again.at, bytes);
  assert.equal(view.findIndex((v) => v !== 0), -1, "reused memory is zero-filled");
  // Freeing a and the reused block merges them: a block of twice the size fits there.
  releaseForTests(a.at);
  releaseForTests(again.at);
  const merged = heapAllocate(2 * size - HOST_HEAP_SLACK_BYTES - 64)!;
  assert.equal(merged.at, a.at, "neighbours merge into one free range");
  // Freeing a block twice does nothing the second time.
  releaseForTests(merged.at);
  const before = hostHeapUsage().bytesInUse;
  releaseForTests(merged.at);
  assert.equal(hostHeapUsage().bytesInUse, before);
  releaseForTests(c.at);
  // With everything above freed, the next block starts where a did (the top came down).
  const next = heapAllocate(bytes)!;
  assert.ok(next.at <= a.at, `top came down to ${next.at} <= ${a.at}`);
  releaseForTests(next.at);
});

Deno.test("host heap: when it is full, storage gets a buffer of its own", () => {
  assert.equal(hostHeapMaxBytes(), HOST_HEAP_DEFAULT_BYTES, "256 MiB unless configured");
  assert.equal(heapAllocate(hostHeapMaxBytes()), undefined, "beyond the maximum");
  // Fill the heap (grown memory is committed only when touched, so this is cheap).
  const taken: number[] = [];
  for (const size of [1 << 26, 1 << 20, 1 << 16]) {
    for (let block = heapAllocate(size); block; block = heapAllocate(size)) taken.push(block.at);
  }
  assert.ok(taken.length >= 8, `${taken.length} blocks before full`);
  try {
    const data = allocateHostData("float32", 1 << 16);
    assert.equal(heapAddress(data), -1, "not in the full heap");
    assert.ok(data.buffer instanceof SharedArrayBuffer, "shared, for the worker pool");
    assert.equal(data.length, 1 << 16);
  } finally {
    for (const at of taken) releaseForTests(at);
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
  // Small host tensors are the garbage collector's: dispose() leaves them usable.
  const small = Tensor.fromArray([1, 2, 3], [3]);
  small.dispose();
  assert.deepEqual(small.toArray(), [1, 2, 3]);
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

Deno.test("host heap: ACLNN_NORM_HOST_HEAP_MB sets its maximum (0 turns it off)", async () => {
  const script = [
    `import { allocateHostData } from "${new URL("../src/tensor/dtype.ts", import.meta.url)}";`,
    `import { heapAddress, hostHeapMaxBytes } from "${new URL(
      "../src/tensor/host_heap.ts",
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
  assert.equal(await run("64"), `${64 << 20} true 65536`);
  assert.equal(
    await run("lots"),
    `${HOST_HEAP_DEFAULT_BYTES} true 65536`,
    "ignored when not a number",
  );
});
