/**
 * The CPU worker pool's lifetime (issue 28): it stays warm across pauses (CPU_POOL_IDLE_MS,
 * 30 s, or the idle time given to startCpuPool), stopCpuPool ends it, a library that replaces
 * the global `Worker` (as onnxruntime-web does) cannot break it, and when no worker can be
 * made the calls run on the calling thread with the same bits instead of throwing.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  batchNorm,
  batchNormBackward,
  CPU_POOL_IDLE_MS,
  cpuThreads,
  setCpuThreads,
  startCpuPool,
  stopCpuPool,
  Tensor,
} from "../../mod.ts";
import {
  pooledJobCount,
  poolIdleMs,
  poolReady,
  withCpuPolicy,
} from "../../src/backends/cpu/pool/pool.ts";
import { type PoolWorker, setWorkerFactory } from "../../src/backends/cpu/pool/spawn.ts";
import { Worker as NodeWorker } from "node:worker_threads";

const shape = [4, 16, 32, 32]; // 64K elements: pooled on 2 threads
const x = Tensor.random(shape, { seed: 1 });
const dy = Tensor.random(shape, { seed: 2 });
const call = () => batchNormBackward({ gradOut: dy, input: x, training: true });

/**
 * Makes the pool's workers as spawn.ts does (unref'd node:worker_threads Workers evaluating the
 * script), but holds each worker's first message (the start-up one, after which it reports
 * ready) until `open()`. `made()` counts the workers made.
 */
function heldStartUp(): { made(): number; open(): void } {
  const held: (() => void)[] = [];
  let made = 0;
  setWorkerFactory((source): PoolWorker => {
    made++;
    const worker = new NodeWorker(source, { eval: true });
    worker.unref();
    let first = true;
    return {
      postMessage: (message) => {
        if (first) held.push(() => worker.postMessage(message));
        else worker.postMessage(message);
        first = false;
      },
      terminate: () => void worker.terminate(),
      onError: (listener) => void worker.on("error", listener),
    };
  });
  return { made: () => made, open: () => held.splice(0).forEach((post) => post()) };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function withTwoThreads(fn: () => Promise<void>): Promise<void> {
  const before = cpuThreads();
  const idle = poolIdleMs();
  setCpuThreads(2);
  try {
    // Whether calls are pooled is what these tests check.
    await withCpuPolicy({ pool: "always" }, fn);
  } finally {
    stopCpuPool();
    await startCpuPool({ idleMs: idle }); // the idle time as it was
    stopCpuPool();
    setCpuThreads(before);
  }
}

Deno.test("cpu pool: a pause of a second leaves it warm; the next large call is pooled", async () => {
  assert.equal(CPU_POOL_IDLE_MS, 30_000);
  await withTwoThreads(async () => {
    await startCpuPool();
    call().gradInput?.dispose();
    await sleep(1000); // twice the idle time the pool had before (500 ms)
    assert.ok(poolReady(1), "still up after the pause");
    const jobs = pooledJobCount();
    call().gradInput?.dispose();
    assert.ok(pooledJobCount() > jobs, "the first call after the pause ran on the pool");
  });
});

Deno.test("cpu pool: the idle time given to startCpuPool ends it; stopCpuPool ends it now", async () => {
  await withTwoThreads(async () => {
    await startCpuPool({ idleMs: 50 });
    assert.equal(poolIdleMs(), 50);
    call().gradInput?.dispose();
    const used = performance.now();
    // Retired once 50 ms pass without work: polled, as a loaded machine may run the idle
    // timer late (it stays up in the meantime, never retires early).
    await sleep(60);
    for (let waited = 0; poolReady(1) && waited < 5000; waited += 20) await sleep(20);
    assert.equal(poolReady(1), false, "retired after 50 ms without work");
    assert.ok(performance.now() - used >= 50);
    // The next large call starts it again and runs on the calling thread meanwhile: the new
    // worker's start-up message is held until the call has returned, so the worker cannot be
    // ready in time however the machine schedules the threads (on a loaded machine it once
    // was, when the calling thread was descheduled right after starting it).
    const gate = heldStartUp();
    try {
      const jobs = pooledJobCount();
      batchNorm({ input: x, training: true }).output.dispose();
      assert.equal(gate.made(), 1, "the call started the pool");
      assert.equal(poolReady(1), false, "not ready while its start-up is held");
      assert.equal(pooledJobCount(), jobs, "the call after retirement ran on the calling thread");
      gate.open();
    } finally {
      setWorkerFactory(undefined);
    }
    await startCpuPool({ idleMs: Infinity });
    assert.ok(poolReady(1), "started again");
    stopCpuPool();
    assert.equal(poolReady(1), false, "stopped at once");
  });
  await assert.rejects(() => startCpuPool({ idleMs: -1 }), RangeError);
});

const root = new URL("../..", import.meta.url).pathname;

/** Runs `code` in a child process with no permission flags; returns its last stdout line. */
async function child(code: string): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-prompt", "--ext=ts", code],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!;
}

Deno.test("cpu pool: a global Worker replaced by one that throws does not reach the pool", async () => {
  const line = await child(`
    // What onnxruntime-web does: its Worker refuses the data: URL the pool once used.
    globalThis.Worker = class { constructor() { throw new TypeError("stub Worker"); } };
    const m = await import("${root}mod.ts");
    const { pooledJobCount, withCpuPolicy } = await import("${root}src/backends/cpu/pool/pool.ts");
    await withCpuPolicy({ pool: "always" }, async () => {
      m.setCpuThreads(2);
      await m.startCpuPool();
      const x = m.Tensor.random([4, 16, 32, 32], { seed: 1 });
      const r = m.batchNorm({ input: x, training: true });
      console.log(JSON.stringify({ pooled: pooledJobCount(), shape: r.output.shape }));
    });
  `);
  assert.deepEqual(JSON.parse(line), { pooled: 1, shape: [4, 16, 32, 32] });
});

Deno.test("cpu pool: when no worker can be made, calls run on the calling thread", async () => {
  const line = await child(`
    const m = await import("${root}mod.ts");
    const { pooledJobCount, withCpuPolicy } = await import("${root}src/backends/cpu/pool/pool.ts");
    const { setWorkerFactory } = await import("${root}src/backends/cpu/pool/spawn.ts");
    await withCpuPolicy({ pool: "always" }, async () => {
      const x = m.Tensor.random([4, 16, 32, 32], { seed: 1 });
      const dy = m.Tensor.random([4, 16, 32, 32], { seed: 2 });
      const bits = () => Array.from(m.batchNormBackward({ gradOut: dy, input: x, training: true })
        .gradInput.toFloat64Array());
      m.setCpuThreads(1);
      const alone = bits();
      m.setCpuThreads(2);
      let made = 0;
      setWorkerFactory(() => { made++; throw new TypeError("no workers here"); });
      const fallback = [bits(), bits(), bits()];
      const same = fallback.every((b) => b.every((v, i) => Object.is(v, alone[i])));
      let message = "";
      await m.startCpuPool().catch((e) => { message = e.message; });
      setWorkerFactory(undefined);
      await m.startCpuPool();
      const before = pooledJobCount();
      const pooled = bits();
      console.log(JSON.stringify({
        same, made, pooledWhileBroken: before, message,
        pooledAfter: pooledJobCount() - before,
        sameAfter: pooled.every((v, i) => Object.is(v, alone[i])),
      }));
    });
  `);
  const r = JSON.parse(line);
  assert.equal(r.same, true, "the calls gave the calling thread's bits");
  // One attempt for the three calls (none is tried again per call), one for startCpuPool.
  assert.equal(r.made, 2);
  assert.equal(r.pooledWhileBroken, 0);
  assert.match(
    r.message,
    /CPU worker pool: 1 worker\(s\) cannot start \(TypeError: no workers here\)/,
  );
  assert.equal(r.pooledAfter, 1);
  assert.equal(r.sameAfter, true);
});
