/**
 * groupNormSwishGrad's kept dYNew (src/backends/cpu/channels/group_norm_swish_grad.ts): its sums
 * stage stores each element's dYNew, as float32, in a heap scratch that its write stage reads
 * instead of computing it again. The write must give exactly the bits of computing it again
 * (the policy's swishGradCache off): the kernels on their own (rows of every tail length, rows
 * of several samples, NaN, Inf and saturating values, every dtype), then the operator on one
 * and two threads (the pool's workers reach the scratch through the job words), on rows with a
 * partial last vector, rows shorter than a vector, channels-last data (staged into NCHW copies)
 * and a large call (a scratch of 23 MiB); dx, dgamma and dbeta, every byte. The
 * cached path must have run (cachedSwishGradRuns), and the scratch is freed when the call ends
 * (reused blocks are poisoned, so a cache float read but never written shows).
 */

import assert from "node:assert/strict";
import { groupNormSwishGrad, Tensor } from "../../mod.ts";
import { kernelsWasmBytes } from "../../src/backends/cpu/wasm/kernels_module.ts";
import { blockAt, instantiateWasm, slotAt, wasmReserve } from "../fixtures/wasm_memory.ts";
import { cachedSwishGradRuns } from "../../src/backends/cpu/channels/group_norm_swish_grad.ts";
import { MIN_PARALLEL_ELEMENTS } from "../../src/backends/cpu/threads.ts";
import { pooledJobCount, postedJobCount, withCpuPolicy } from "../../src/backends/cpu/pool/pool.ts";
import { swishCacheRow } from "../../src/backends/cpu/kernels/channel_stages.ts";
import { cpuThreads, setCpuThreads, startCpuPool } from "../../src/backends/cpu/threads.ts";
import { type DType, numberToBf16 } from "../../src/tensor/dtype.ts";
import { hostHeapUsage, startHostHeap } from "../../src/tensor/host_heap.ts";
import { assertSameBits, FLOATS, laidOut, type TestLayout, values } from "../fixtures/cpu_cases.ts";

// A reused heap block comes back as NaN: a cache float read but never written shows.
startHostHeap({ poisonReused: true });

const f = Math.fround;

Deno.test("gs_grad_cached_rows on the dYNew gs_sums_rows kept = gs_grad_rows, bit for bit", () => {
  const w = instantiateWasm(kernelsWasmBytes());
  assert.ok(w);
  const rows = 3;
  wasmReserve(w, rows * 64, 16);
  const e = w.exports;
  // rstd, -mean * rstd, gamma, beta, -s, s; then rstd * gamma, rstd * c2, rstd * c1.
  const s = f(0.7);
  const k6 = [f(0.9), f(-0.27), f(1.2), f(-0.3), -s, s] as const;
  const [k0, k1] = k6;
  const dx3 = [f(0.9 * 1.2), f(0.013), f(-0.021)] as const;
  for (const dt of [0, 1, 2]) {
    const es = dt === 0 ? 4 : 2;
    for (const n of [1, 2, 3, 4, 5, 6, 7, 8, 37, 64]) {
      const rs = n * es;
      const cs = swishCacheRow(n) * 4;
      assert.ok(cs % 16 === 0 && cs >= n * 4);
      // dy and x (row-major, rows of n) with NaN, infinities and values whose exp overflows.
      const dy = values(rows * n, 31 + n, -1, 1);
      const x = values(rows * n, 32 + n, -3, 3);
      const special = [NaN, Infinity, -Infinity, 1e30, -1e30, 0, -0];
      for (let i = 0; i < special.length && 3 * i + 1 < rows * n; i++) {
        if (i % 2 === 0) dy[3 * i + 1] = special[i];
        else x[3 * i + 1] = special[i];
      }
      for (const [name, v] of [["dy", dy], ["x", x]] as const) {
        const at = blockAt(w, name);
        if (dt === 0) new Float32Array(w.memory.buffer, at, rows * n).set(v);
        else if (dt === 1) new Float16Array(w.memory.buffer, at, rows * n).set(v);
        else new Uint16Array(w.memory.buffer, at, rows * n).set(Array.from(v, numberToBf16));
      }
      const [pDy, pX, cache] = [blockAt(w, "dy"), blockAt(w, "x"), blockAt(w, "x2")];
      const [o1, o2] = [blockAt(w, "out"), blockAt(w, "out2")];
      // Poison the outputs and the cache: every byte compared is one a kernel wrote.
      new Uint8Array(w.memory.buffer, cache, rows * cs).fill(0xff);
      new Uint8Array(w.memory.buffer, o1, rows * rs + 64).fill(0xa5);
      new Uint8Array(w.memory.buffer, o2, rows * rs + 64).fill(0xa5);
      const sums = (c: number): number[] => {
        e.gs_sums_rows(pDy, rs, pX, rs, n, dt, rows, ...k6, slotAt(w, 0), c, cs);
        return [...new Float64Array(w.memory.buffer, slotAt(w, 0), 2)];
      };
      const plain = sums(0);
      const kept = sums(cache);
      assert.deepEqual(kept, plain, `dt ${dt} n ${n}: the sums do not change`);
      e.gs_grad_rows(pDy, rs, pX, rs, o1, rs, n, dt, rows, ...k6, ...dx3);
      e.gs_grad_cached_rows(cache, cs, pX, rs, o2, rs, n, dt, rows, k0, k1, ...dx3);
      // The rows and the bytes after them (which neither write may touch).
      const a: Uint8Array = new Uint8Array(w.memory.buffer, o1, rows * rs + 64);
      const b: Uint8Array = new Uint8Array(w.memory.buffer, o2, rows * rs + 64);
      assert.deepEqual(b, a, `dt ${dt} n ${n}: dx`);
    }
  }
});

/** A case: shape, groups, layout of dy, x and dx, dtypes. */
type Case = [shape: number[], groups: number, layout: TestLayout, dtypes: readonly DType[]];

const CASES: Case[] = [
  // HxW 35: a partial last vector; 18 rows over several items.
  [[3, 6, 7, 5], 3, "contiguous", FLOATS],
  // Rows shorter than a vector.
  [[2, 12, 3], 6, "contiguous", FLOATS],
  // HxW 2115 (a partial last vector), above the pooling threshold: items on both threads.
  [[4, 8, 45, 47], 4, "contiguous", FLOATS],
  // Channels-last: staged into NCHW copies, which the cached stages run on.
  [[4, 8, 45, 47], 2, "channelsLast", ["float32", "bfloat16"]],
  // A large call: its whole dYNew in one scratch.
  [[16, 40, 95, 97], 8, "contiguous", ["float32"]],
];

/** The case's arguments in `dtype`, fresh (dx preallocated in `layout`). */
function args(shape: number[], G: number, layout: TestLayout, dtype: DType) {
  const [N, C] = shape;
  const numel = shape.reduce((a, b) => a * b, 1);
  const dy = values(numel, 41, -1, 1);
  dy[numel >> 1] = shape[0] === 2 ? NaN : dy[numel >> 1]; // NaN in one group of one case
  return {
    dy: laidOut(dy, shape, dtype, layout),
    x: laidOut(values(numel, 42, -3, 3), shape, dtype, layout),
    mean: Tensor.fromArray(values(N * G, 43, -0.3, 0.3), [N, G], dtype),
    rstd: Tensor.fromArray(values(N * G, 44, 0.5, 2), [N, G], dtype),
    gamma: Tensor.fromArray(values(C, 45, 0.5, 1.5), [C], dtype),
    beta: Tensor.fromArray(values(C, 46, -1, 1), [C], dtype),
    numGroups: G,
    swishScale: 0.8,
    out: {
      dx: laidOut(new Float64Array(numel), shape, dtype, layout),
      dgamma: Tensor.zeros([C], dtype),
      dbeta: Tensor.zeros([C], dtype),
    },
  };
}

for (const threads of [1, 2]) {
  Deno.test(`groupNormSwishGrad: the kept dYNew gives the bits of computing it again (${threads} thread(s))`, () =>
    withCpuPolicy({ pool: "always" }, async () => {
      const before = cpuThreads();
      try {
        setCpuThreads(threads);
        if (threads > 1) await startCpuPool();
        // The threads' kernels and regions, once (blocks that outlive the call).
        groupNormSwishGrad(args([4, 8, 45, 47], 2, "contiguous", "float32"));
        for (const [shape, G, layout, dtypes] of CASES) {
          const numel = shape.reduce((a, b) => a * b, 1);
          const pooled = threads > 1 && numel >= MIN_PARALLEL_ELEMENTS;
          for (const dtype of dtypes) {
            const label = `[${shape}] G ${G} ${layout} ${dtype}, ${threads} thread(s)`;
            const a = args(shape, G, layout, dtype);
            const run = (cache: boolean) => {
              const t = cache ? a : args(shape, G, layout, dtype);
              const [runs, jobs, posted] = [
                cachedSwishGradRuns(),
                pooledJobCount(),
                postedJobCount(),
              ];
              const heapBlocks = hostHeapUsage().blocks;
              const r = withCpuPolicy({ swishGradCache: cache }, () => groupNormSwishGrad(t));
              // Every output preallocated: the call leaves no block behind.
              assert.equal(hostHeapUsage().blocks, heapBlocks, `${label}: scratch freed`);
              assert.equal(cachedSwishGradRuns() - runs, cache ? 1 : 0, `${label}: cached`);
              if (pooled) {
                assert.ok(pooledJobCount() > jobs, `${label}: pooled`);
                assert.equal(postedJobCount(), posted, `${label}: through the job words`);
              }
              return r;
            };
            const kept = run(true);
            const again = run(false);
            assertSameBits(kept.dx, again.dx, `${label} dx`);
            assertSameBits(kept.dgamma, again.dgamma, `${label} dgamma`);
            assertSameBits(kept.dbeta, again.dbeta, `${label} dbeta`);
            // Frees their heap blocks now: the loop would fill the heap before a collection.
            for (const r of [kept, again]) for (const t of Object.values(r)) t.dispose();
            for (const t of [a.dy, a.x, a.mean, a.rstd, a.gamma, a.beta]) t.dispose();
            // (again's inputs are collected.)
          }
        }
      } finally {
        setCpuThreads(before);
      }
    }));
}
