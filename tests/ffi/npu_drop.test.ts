/**
 * The NPU path's buffers in a loop that never awaits (src/ffi/reclaim.ts): device tensors a
 * script drops come back inside its job, so that such a loop runs past the device's memory,
 * and one on a large device stays near the reclaim threshold instead of holding every
 * result; the tensors it keeps keep their values (a reclaim without the liveness proof would
 * hand their memory to later tensors, which the values catch). A child process each (its own
 * first job and device memory size). Needs the built simulator.
 *
 * @module
 */

import assert from "node:assert/strict";
import { childJson } from "../helpers/child_json.ts";
import { SIM_DIR } from "../helpers/ffi_sim.ts";
import { BufferTracker, RECLAIM_AFTER_BYTES } from "../../src/ffi/reclaim.ts";

interface DropRun {
  made: number;
  error: string;
  kept: number;
  keptIntact: boolean;
  peakMiB: number;
  liveBuffers: number;
}

function dropRun(calls: number, deviceMiB?: number): Promise<DropRun> {
  const env: Record<string, string> = { ACLSIM_DIR: SIM_DIR };
  if (deviceMiB !== undefined) env.ACLSIM_DEVICE_MEMORY = String(deviceMiB * 2 ** 20);
  return childJson<DropRun>([
    "run",
    "--allow-ffi",
    "--allow-env",
    "--allow-read",
    new URL("../fixtures/npu_drop_child.ts", import.meta.url).pathname,
    String(calls),
  ], env);
}

Deno.test("npu memory: a loop that never awaits runs past device memory on dropped tensors", async () => {
  // 300 MiB of tensors, 12 of them kept, on a 64 MiB device: without the reclaim inside the
  // job the 64th allocation failed with the out-of-memory error.
  const r = await dropRun(300, 64);
  assert.equal(r.error, "");
  assert.equal(r.made, 300);
  assert.equal(r.kept, 12);
  assert.equal(r.keptIntact, true, "no kept tensor's memory went to a later one");
  assert.ok(r.peakMiB <= 64, `peak ${r.peakMiB} MiB`);
  // Live after the loop: the kept tensors and the dropped ones since the last reclaim.
  assert.ok(r.liveBuffers >= 12 && r.liveBuffers - 12 < 64, `${r.liveBuffers} live buffers`);
});

Deno.test("npu memory: dropped tensors stay near the reclaim threshold on a large device", async () => {
  // 800 MiB of tensors on the default 32 GiB device: reclaims every RECLAIM_AFTER_BYTES of
  // buffers made and not released in the job, so the peak stays near it, not near 800 MiB.
  const r = await dropRun(800);
  assert.equal(r.error, "");
  assert.equal(r.keptIntact, true);
  const threshold = RECLAIM_AFTER_BYTES / 2 ** 20;
  assert.ok(r.peakMiB < threshold + 64, `peak ${r.peakMiB} MiB, threshold ${threshold} MiB`);
  assert.ok(r.liveBuffers - r.kept < threshold, `${r.liveBuffers} live buffers`);
});

/** A tracker over a fake device that records the slots it releases. */
function fakeTracker(released: number[]): BufferTracker<object> {
  return new BufferTracker<object>({
    isClosed: () => false,
    memoryLimit: () => Infinity,
    releaseSlot: (slot) => (released.push(slot), true),
    hasDeferred: () => false,
    synchronize: () => {},
  });
}

Deno.test("buffer tracker: a job that keeps what it makes backs off its reclaims, one that drops it does not", async () => {
  const MIB = 2 ** 20;
  const every = RECLAIM_AFTER_BYTES / MIB;
  // 2048 buffers of 1 MiB, all kept: a reclaim at 256 MiB finds nothing, so the next comes
  // 512 MiB later, then 1024 (256, 768, 1792 MiB: 3), where every 256 MiB would make 8.
  const keptReleased: number[] = [];
  const keeping = fakeTracker(keptReleased);
  const kept: object[] = [];
  for (let slot = 0; slot < 8 * every; slot++) {
    const buffer = {};
    kept.push(buffer);
    keeping.track(buffer, slot, MIB);
  }
  assert.equal(keeping.inJobReclaims, 3);
  assert.deepEqual(keptReleased, [], "no kept buffer released");
  // The same buffers dropped: every reclaim releases them, so they keep coming every 256 MiB.
  const droppedReleased: number[] = [];
  const dropping = fakeTracker(droppedReleased);
  for (let slot = 0; slot < 8 * every; slot++) dropping.track({}, slot, MIB);
  assert.equal(dropping.inJobReclaims, 8);
  assert.ok(droppedReleased.length >= 7 * every - 8, `${droppedReleased.length} released`);
  assert.equal(kept.length, 8 * every);
  await new Promise((resolve) => setTimeout(resolve, 0)); // the trackers' turn of the event loop
});
